package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/heraldstreams/herald/internal/secretbox"
	"github.com/heraldstreams/herald/store/sqlite"
)

func noEnv(string) (string, bool) { return "", false }

func envOf(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

func TestServeDefaults(t *testing.T) {
	t.Parallel()
	cfg, err := parseServeFlags(nil, io.Discard, io.Discard, noEnv)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Addr != "127.0.0.1:4437" || cfg.Access.enabled() || cfg.DataDir != "./data" || cfg.LongPollTimeout != 30*time.Second ||
		cfg.MaxBodyBytes != 16<<20 || cfg.LogLevel != slog.LevelInfo || cfg.LogFormat != "text" ||
		cfg.MaxBufferedBytes != 128<<20 || cfg.BodyReadTimeout != 10*time.Second || cfg.MinBodyRate != 16<<10 ||
		cfg.MaxConnections != 10000 || cfg.MaxHeaderBytes != 64<<10 || cfg.HeaderTimeout != 10*time.Second || cfg.MaxClientConnections != 0 ||
		cfg.ReplicaHeartbeat != 2*time.Second || cfg.ReplicaDeadAfter != 10*time.Second {
		t.Fatalf("defaults = %+v", cfg)
	}
}

func TestEnvironmentAndFlagsPrecedence(t *testing.T) {
	t.Parallel()
	env := envOf(map[string]string{
		"HERALD_DATA_DIR":          "/var/lib/herald",
		"HERALD_LONG_POLL_TIMEOUT": "5s",
		"HERALD_ADDR":              "127.0.0.1:9000",
		"HERALD_LOG_LEVEL":         "debug",
	})
	cfg, err := parseServeFlags([]string{"--addr", ":8080"}, io.Discard, io.Discard, env)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.DataDir != "/var/lib/herald" || cfg.LongPollTimeout != 5*time.Second || cfg.LogLevel != slog.LevelDebug {
		t.Fatalf("environment not applied: %+v", cfg)
	}
	if cfg.Addr != ":8080" {
		t.Fatalf("command line must win over the environment, addr = %q", cfg.Addr)
	}
}

func TestBadConfigurationIsAUsageError(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	badProfiles := filepath.Join(dir, "profiles.json")
	if err := os.WriteFile(badProfiles, []byte(`{"profiles":[{"name":"acme","headers":{"timestamp":"Acme-Ts","signature":"Acme-Sig"},`+
		`"signature":{"prefix":"v1=","encoding":"hex","signed":"{timestamp}.{body}","key":"secret","rotation":"twice"},`+
		`"envelope":[{"name":"data","from":"data"}]}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		env  map[string]string
		want string
	}{
		{[]string{"--long-poll-timeout", "0s"}, nil, "--long-poll-timeout must be positive"},
		{[]string{"--max-body-bytes", "-1"}, nil, "--max-body-bytes must be positive"},
		{[]string{"--max-catch-up-bytes", "0"}, nil, "--max-catch-up-bytes must be positive"},
		{[]string{"--log-format", "xml"}, nil, "--log-format must be text or json"},
		{[]string{"--max-buffered-bytes", "1000"}, nil, "--max-buffered-bytes must be at least --max-body-bytes"},
		{[]string{"--body-read-timeout", "0s"}, nil, "--body-read-timeout must be positive"},
		{[]string{"--min-body-rate", "0"}, nil, "--min-body-rate must be positive"},
		{[]string{"--max-connections", "0"}, nil, "--max-connections must be positive"},
		{[]string{"--stream-cache", "0"}, nil, "--stream-cache must be positive"},
		{[]string{"--max-header-bytes", "-5"}, nil, "--max-header-bytes must be positive"},
		{[]string{"--header-timeout", "0s"}, nil, "--header-timeout must be positive"},
		{[]string{"--replica-heartbeat", "0s"}, nil, "--replica-heartbeat must be positive"},
		{[]string{"--replica-heartbeat", "3s", "--replica-dead-after", "5s"}, nil, "--replica-dead-after must be at least twice --replica-heartbeat"},
		{[]string{"--max-connections-per-client", "-1"}, nil, "--max-connections-per-client must not be negative"},
		{[]string{"--allowed-origins", "https://a.example"}, nil, "flag provided but not defined: -allowed-origins"},
		{[]string{"--log-level", "loud"}, nil, `invalid value "loud" for flag -log-level: must be debug, info, warn or error`},
		{[]string{"--no-such-flag"}, nil, "flag provided but not defined"},
		{[]string{"extra"}, nil, "unexpected arguments"},
		{[]string{"--delivery-failure-policy", "never"}, nil, `--delivery-failure-policy "never"`},
		{[]string{"--delivery-profile", "acme"}, nil, `--delivery-profile: default profile "acme" is not defined`},
		{[]string{"--delivery-profiles-file", filepath.Join(dir, "missing.json")}, nil, "--delivery-profiles-file"},
		{[]string{"--delivery-profiles-file", badProfiles}, nil, `profiles[0]: profile "acme": signature.rotation: "twice"`},
		{nil, map[string]string{"HERALD_LONG_POLL_TIMEOUT": "soon"}, "HERALD_LONG_POLL_TIMEOUT"},
		{nil, map[string]string{"HERALD_KEK": "k1:tooshort"}, "HERALD_KEK"},
		{nil, map[string]string{"HERALD_KEK": "no key id"}, "HERALD_KEK"},
	} {
		_, err := parseServeFlags(c.args, io.Discard, io.Discard, envOf(c.env))
		if !errors.Is(err, errUsage) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("args %v env %v: error = %v, want usage error mentioning %q", c.args, c.env, err, c.want)
		}
		if exitCode(err) != 2 {
			t.Errorf("exit code = %d, want 2", exitCode(err))
		}
	}
}

func TestKEKConfiguration(t *testing.T) {
	t.Parallel()
	key := "k1:" + strings.Repeat("A", 43) // 32 bytes of base64
	cfg, err := parseServeFlags([]string{"--kek-file", "/etc/herald/kek"}, io.Discard, io.Discard, envOf(map[string]string{"HERALD_KEK": key}))
	if err != nil || cfg.KEKFile != "/etc/herald/kek" || cfg.KEK != key {
		t.Fatalf("cfg %+v, %v", cfg, err)
	}
	cfg, err = parseServeFlags(nil, io.Discard, io.Discard, envOf(map[string]string{"HERALD_KEK_FILE": "/run/kek"}))
	if err != nil || cfg.KEKFile != "/run/kek" || cfg.KEK != "" {
		t.Fatalf("HERALD_KEK_FILE: %+v, %v", cfg, err)
	}
	// The key itself is no flag: it would be visible in the process list.
	if _, err := parseServeFlags([]string{"--kek", key}, io.Discard, io.Discard, noEnv); !errors.Is(err, errUsage) {
		t.Fatalf("--kek accepted: %v", err)
	}
	var out, errOut bytes.Buffer
	if err := run(context.Background(), []string{"kek", "new"}, nil, &out, &errOut, noEnv); err != nil {
		t.Fatal(err)
	}
	if _, err := secretbox.ParseKeys(out.String()); err != nil {
		t.Fatalf("kek new printed %q: %v", out.String(), err)
	}
	if err := run(context.Background(), []string{"kek", "rotate", "--data-dir", t.TempDir()}, nil, &out, &errOut, noEnv); err == nil ||
		!strings.Contains(err.Error(), "no Herald database") {
		t.Fatalf("rotate without a database: %v", err)
	}
	if err := run(context.Background(), []string{"kek", "spin"}, nil, &out, &errOut, noEnv); !errors.Is(err, errUsage) {
		t.Fatalf("unknown kek subcommand: %v", err)
	}
}

// TestHelpOnStdout: every command's and subcommand's help is printed on
// stdout, nothing on stderr, and is no error (exit status 0).
func TestHelpOnStdout(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"help"}, {"--help"}, {"-h"},
		{"serve", "--help"}, {"serve", "-h"},
		{"keys", "help"}, {"keys", "--help"}, {"keys", "create", "--help"}, {"keys", "ls", "-h"}, {"keys", "rm", "--help"},
		{"kek", "help"}, {"kek", "--help"}, {"kek", "rotate", "--help"}, {"kek", "new", "-h"},
	} {
		var out, errOut bytes.Buffer
		err := run(context.Background(), args, nil, &out, &errOut, noEnv)
		if err != nil {
			t.Errorf("%v: err = %v, want none", args, err)
		}
		if out.Len() == 0 || errOut.Len() != 0 {
			t.Errorf("%v: stdout %q, stderr %q; want the help on stdout only", args, out.String(), errOut.String())
		}
	}
	// A mistake still goes to stderr, with the usage, and is a usage error.
	var out, errOut bytes.Buffer
	err := run(context.Background(), []string{"serve", "--no-such-flag"}, nil, &out, &errOut, noEnv)
	if !errors.Is(err, errUsage) || exitCode(err) != 2 || out.Len() != 0 || !strings.Contains(errOut.String(), "no-such-flag") {
		t.Errorf("bad flag: err %v, stdout %q, stderr %q", err, out.String(), errOut.String())
	}
}

// TestStartupErrorInLogFormat: a configuration that parses but cannot
// start is logged in the configured format (one JSON record with --log-format
// json) and reported to main as already logged, with its exit status.
func TestStartupErrorInLogFormat(t *testing.T) {
	t.Parallel()
	var out, errOut bytes.Buffer
	err := run(context.Background(), []string{"serve", "--log-format", "json", "--addr", "127.0.0.1:0", "--data-dir", t.TempDir(), "--long-poll-timeout", "-1s"},
		nil, &out, &errOut, noEnv)
	if !errors.As(err, new(loggedError)) || exitCode(err) != 2 {
		t.Fatalf("err = %v (exit %d), want a logged usage error", err, exitCode(err))
	}
	var rec struct {
		Level, Msg, Err string
	}
	if jerr := json.Unmarshal(errOut.Bytes(), &rec); jerr != nil || rec.Level != "ERROR" || !strings.Contains(rec.Err, "--long-poll-timeout") {
		t.Fatalf("stderr = %q (%v), want one JSON error record naming the flag", errOut.String(), jerr)
	}
}

func TestCommands(t *testing.T) {
	t.Parallel()
	var out, errOut bytes.Buffer
	if err := run(context.Background(), []string{"version"}, nil, &out, &errOut, noEnv); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(out.String(), "herald ") {
		t.Fatalf("version printed %q", out.String())
	}
	out.Reset()
	if err := run(context.Background(), []string{"serve", "--help"}, nil, &out, &errOut, noEnv); err != nil {
		t.Fatalf("serve --help: %v", err)
	}
	for _, want := range []string{"--addr", "--data-dir", "--long-poll-timeout", "--max-body-bytes", "--access-log", "HERALD_"} {
		if !strings.Contains(strings.ReplaceAll(out.String(), "  -", "  --"), want) {
			t.Errorf("serve --help does not mention %s:\n%s", want, out.String())
		}
	}
	if err := run(context.Background(), []string{"frobnicate"}, nil, &out, &errOut, noEnv); !errors.Is(err, errUsage) {
		t.Fatalf("unknown command: %v", err)
	}
	if err := run(context.Background(), nil, nil, &out, &errOut, noEnv); !errors.Is(err, errUsage) {
		t.Fatalf("no command: %v", err)
	}
}

// TestStreamCacheFlag: --stream-cache (or HERALD_STREAM_CACHE) sets how
// many streams' metadata the embedded store keeps, by default its own
// default.
func TestStreamCacheFlag(t *testing.T) {
	t.Parallel()
	cfg, err := parseServeFlags(nil, io.Discard, io.Discard, envOf(nil))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.StreamCache != sqlite.DefaultStreamCache {
		t.Fatalf("default stream cache %d, want %d", cfg.StreamCache, sqlite.DefaultStreamCache)
	}
	for _, c := range []struct {
		args []string
		env  map[string]string
	}{
		{args: []string{"--stream-cache", "5000"}},
		{env: map[string]string{"HERALD_STREAM_CACHE": "5000"}},
	} {
		cfg, err := parseServeFlags(c.args, io.Discard, io.Discard, envOf(c.env))
		if err != nil {
			t.Fatal(err)
		}
		if cfg.StreamCache != 5000 {
			t.Fatalf("args %v env %v: stream cache %d, want 5000", c.args, c.env, cfg.StreamCache)
		}
	}
}
