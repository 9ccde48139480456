package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSecretFilesOthersMayReadStopTheStart: the real binary refuses to
// start with an admin key file or a JWT secret file that other users may
// read, naming the file and the chmod that fixes it, and with an http://
// JWK Set unless --jwt-jwks-allow-http allows it on loopback.
func TestSecretFilesOthersMayReadStopTheStart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	keyFile := filepath.Join(dir, "admin.key")
	secretFile := filepath.Join(dir, "jwt.secret")
	for _, f := range []string{keyFile, secretFile} {
		if err := os.WriteFile(f, []byte(tenantAdminKey+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(f, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	jwtFlags := []string{"--jwt-issuer", "https://idp.example/", "--jwt-audience", "herald"}
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"--admin-key-file", keyFile}, []string{"--admin-key-file", "chmod 600 " + keyFile}},
		{append([]string{"--jwt-hs256-secret-file", secretFile}, jwtFlags...), []string{"--jwt-hs256-secret-file", "chmod 600 " + secretFile}},
		{append([]string{"--jwt-jwks-url", "http://127.0.0.1:9/jwks"}, jwtFlags...), []string{"https://", "--jwt-jwks-allow-http"}},
		{append([]string{"--jwt-jwks-url", "http://idp.example/jwks", "--jwt-jwks-allow-http"}, jwtFlags...), []string{"loopback"}},
	} {
		args := append([]string{"serve", "--addr", "127.0.0.1:0", "--data-dir", t.TempDir()}, c.args...)
		out, code := runHerald(t, nil, args...)
		if code != 2 {
			t.Errorf("herald %v: exit %d, want 2\n%s", c.args, code, out)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(out, w) {
				t.Errorf("herald %v: the refusal does not say %q:\n%s", c.args, w, out)
			}
		}
	}
}

// TestOpenDataDirIsMadePrivate: the real binary makes an existing data
// directory that other users may enter 0700, and logs that it did.
func TestOpenDataDirIsMadePrivate(t *testing.T) {
	t.Parallel()
	dataDir := t.TempDir()
	if err := os.Chmod(dataDir, 0o755); err != nil {
		t.Fatal(err)
	}
	s := startKeyed(t, dataDir)
	info, err := os.Stat(dataDir)
	if err != nil {
		t.Fatal(err)
	}
	if perm := info.Mode().Perm(); perm != 0o700 {
		t.Errorf("the data directory is %04o after start, want 0700", perm)
	}
	if !strings.Contains(s.logs.String(), "(mode 0755); made it 0700") {
		t.Errorf("no log line about the data directory:\n%s", s.logs)
	}
}
