package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSecretFilesOthersMayReadAreRefused: an admin key file or a JWT
// secret file its group or other users may read is refused at start, the
// error naming the file and the chmod that fixes it, as the
// key-encryption key file is.
func TestSecretFilesOthersMayReadAreRefused(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	keyFile := filepath.Join(dir, "admin.key")
	secretFile := filepath.Join(dir, "jwt.secret")
	for _, f := range []string{keyFile, secretFile} {
		if err := os.WriteFile(f, []byte(testAdminKey+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(f, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	_, err := parseServeFlags([]string{"--admin-key-file", keyFile}, io.Discard, io.Discard, noEnv)
	wantRefusal(t, err, "--admin-key-file", keyFile)

	cfg, err := parseServeFlags([]string{"--addr", "127.0.0.1:0", "--data-dir", t.TempDir(),
		"--jwt-hs256-secret-file", secretFile, "--jwt-issuer", "https://idp.example/", "--jwt-audience", "herald"}, io.Discard, io.Discard, noEnv)
	if err != nil {
		t.Fatal(err)
	}
	a, err := newApp(t.Context(), cfg, slog.New(slog.DiscardHandler), nil)
	if err == nil {
		a.api.Shutdown()
		t.Fatalf("a 0644 JWT secret file was accepted (stop: %v)", errors.Join(a.ln.Close(), a.stop(context.Background())))
	}
	wantRefusal(t, err, "--jwt-hs256-secret-file", secretFile)

	// Once only their owner may read them, both are used.
	for _, f := range []string{keyFile, secretFile} {
		if err := os.Chmod(f, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := parseServeFlags([]string{"--admin-key-file", keyFile}, io.Discard, io.Discard, noEnv); err != nil {
		t.Fatalf("a 0600 admin key file: %v", err)
	}
	startHerald(t, "--jwt-hs256-secret-file", secretFile, "--jwt-issuer", "https://idp.example/", "--jwt-audience", "herald")
}

func wantRefusal(t *testing.T, err error, flagName, file string) {
	t.Helper()
	if !errors.Is(err, errUsage) {
		t.Fatalf("%s of a 0644 file: %v, want a usage error", flagName, err)
	}
	for _, want := range []string{flagName, file, "chmod 600 " + file} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %q does not say %q", flagName, err, want)
		}
	}
}

// TestDataDirIsPrivate: the data directory is made 0700, and an existing
// one other users may enter is made 0700 with a warning saying so.
func TestDataDirIsPrivate(t *testing.T) {
	t.Parallel()
	fresh := filepath.Join(t.TempDir(), "data")
	startDataDir(t, fresh, io.Discard)
	if perm := dirMode(t, fresh); perm != 0o700 {
		t.Errorf("a new data directory is %04o, want 0700", perm)
	}

	open := t.TempDir()
	if err := os.Chmod(open, 0o755); err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	startDataDir(t, open, &logs)
	if perm := dirMode(t, open); perm != 0o700 {
		t.Errorf("a 0755 data directory is %04o after start, want 0700", perm)
	}
	if !strings.Contains(logs.String(), "level=WARN") || !strings.Contains(logs.String(), "(mode 0755); made it 0700") {
		t.Errorf("no warning about the tightened data directory in the log:\n%s", logs.String())
	}
}

// startDataDir starts Herald (access control on) on dataDir, its log
// written to logs.
func startDataDir(t *testing.T, dataDir string, logs io.Writer) {
	t.Helper()
	cfg, err := parseServeFlags([]string{"--addr", "127.0.0.1:0", "--data-dir", dataDir}, io.Discard, io.Discard, envOf(map[string]string{adminKeyEnv: testAdminKey}))
	if err != nil {
		t.Fatal(err)
	}
	startApp(t, cfg, slog.New(slog.NewTextHandler(logs, nil)), nil)
}

func dirMode(t *testing.T, path string) os.FileMode {
	t.Helper()
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return info.Mode().Perm()
}
