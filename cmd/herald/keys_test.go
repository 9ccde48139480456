package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/heraldstreams/herald/auth"
	"github.com/heraldstreams/herald/httpapi/apierr"
	"github.com/heraldstreams/herald/internal/routetest"
	"github.com/heraldstreams/herald/store/sqlite"
)

const testAdminKey = "admin-key-for-cli-tests-0123456789abcdef"

// keysHerald serves the key API on a real store, and one route that
// needs streams:read, to check created keys.
func keysHerald(t *testing.T) string {
	t.Helper()
	st, err := sqlite.Open(context.Background(), sqlite.Config{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := st.Close(); err != nil {
			t.Error(err)
		}
	})
	a, err := auth.New(auth.Config{Keys: st, AdminKey: testAdminKey})
	if err != nil {
		t.Fatal(err)
	}
	mux := routetest.Handler(a, auth.NewKeysAPI(auth.KeysAPIConfig{Auth: a, Store: st, Fail: apierr.Failer(slog.New(slog.DiscardHandler))}).Routes())
	mux.Handle("GET /probe", a.Require(auth.Rule{Scope: auth.ScopeStreamsRead}, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {})))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv.URL
}

func runCLI(t *testing.T, env map[string]string, args ...string) (string, error) {
	t.Helper()
	return runCLIInput(t, env, "", args...)
}

// runCLIInput runs the command line with stdin as its standard input and
// returns its standard output.
func runCLIInput(t *testing.T, env map[string]string, stdin string, args ...string) (string, error) {
	t.Helper()
	var out, errOut bytes.Buffer
	err := run(context.Background(), args, strings.NewReader(stdin), &out, &errOut, func(k string) (string, bool) { v, ok := env[k]; return v, ok })
	return out.String(), err
}

func TestKeysCommand(t *testing.T) {
	t.Parallel()
	base := keysHerald(t)
	env := map[string]string{"HERALD_URL": base, "HERALD_KEY": testAdminKey}

	out, err := runCLI(t, env, "keys", "create", "--scope", "streams:read", "--scope", "events:publish", "--tenant", "acme",
		"--path", "/tenants/acme/agents/**", "--expires-in", "24h", "--description", "ci runner", "--output", "json")
	if err != nil {
		t.Fatal(err)
	}
	var created struct {
		ID, Key, Tenant string
		Scopes, Paths   []string
		ExpiresAt       *string `json:"expires_at"`
	}
	if err := json.Unmarshal([]byte(out), &created); err != nil {
		t.Fatalf("create output %q: %v", out, err)
	}
	if !strings.HasPrefix(created.Key, "hk_"+created.ID+"_") || created.Tenant != "acme" || len(created.Scopes) != 2 ||
		created.Paths[0] != "/tenants/acme/agents/**" || created.ExpiresAt == nil {
		t.Fatalf("created %+v", created)
	}
	// The key works against the server.
	req, err := http.NewRequest(http.MethodGet, base+"/probe", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+created.Key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("the created key got %d", resp.StatusCode)
	}

	// The table form shows the key once, then the row.
	out, err = runCLI(t, env, "keys", "create", "--scope", "admin")
	if err != nil || !strings.Contains(out, "key: hk_") || !strings.Contains(out, "SCOPES") || !strings.Contains(out, "admin") {
		t.Fatalf("table create: %q, %v", out, err)
	}

	// ls and get never show a secret; flags win over the environment.
	out, err = runCLI(t, map[string]string{"HERALD_URL": "http://127.0.0.1:1", "HERALD_KEY": "wrong"},
		"keys", "ls", "--url", base, "--key", testAdminKey)
	if err != nil || !strings.Contains(out, created.ID) || strings.Contains(out, created.Key) || strings.Count(out, "\n") != 3 {
		t.Fatalf("ls: %q, %v", out, err)
	}
	out, err = runCLI(t, env, "keys", "ls", "--tenant", "acme", "--output", "json")
	var listed []map[string]any
	if err != nil || json.Unmarshal([]byte(out), &listed) != nil || len(listed) != 1 || listed[0]["id"] != created.ID || listed[0]["key"] != nil {
		t.Fatalf("ls --tenant acme: %q, %v", out, err)
	}
	out, err = runCLI(t, env, "keys", "get", created.ID)
	if err != nil || !strings.Contains(out, created.ID) || !strings.Contains(out, "ci runner") || strings.Contains(out, created.Key) {
		t.Fatalf("get: %q, %v", out, err)
	}

	if out, err = runCLI(t, env, "keys", "rm", created.ID); err != nil || !strings.Contains(out, "revoked "+created.ID) {
		t.Fatalf("rm: %q, %v", out, err)
	}
	// Gone: the server's error code reaches the user.
	if _, err := runCLI(t, env, "keys", "get", created.ID); err == nil || !strings.Contains(err.Error(), "KEY_NOT_FOUND") {
		t.Fatalf("get after rm: %v", err)
	}
	if _, err := runCLI(t, env, "keys", "create", "--scope", "streams:everything"); err == nil || !strings.Contains(err.Error(), "INVALID_SCOPES") {
		t.Fatalf("bad scope: %v", err)
	}
	if _, err := runCLI(t, map[string]string{"HERALD_URL": base, "HERALD_KEY": "hk_wrong"}, "keys", "ls"); err == nil || !strings.Contains(err.Error(), "401") {
		t.Fatalf("wrong admin key: %v", err)
	}
}

func TestKeysCommandUsage(t *testing.T) {
	t.Parallel()
	env := map[string]string{"HERALD_KEY": testAdminKey}
	for _, args := range [][]string{
		{"keys"},
		{"keys", "frobnicate"},
		{"keys", "get"},
		{"keys", "rm", "a", "b"},
		{"keys", "ls", "--output", "yaml"},
		{"keys", "create", "--scope", "admin", "--expires-in", "1h", "--expires-at", "2030-01-01T00:00:00Z"},
		{"keys", "ls", "--url", "not a url"},
	} {
		if _, err := runCLI(t, env, args...); !errors.Is(err, errUsage) {
			t.Errorf("%v: %v, want a usage error", args, err)
		}
	}
	if _, err := runCLI(t, nil, "keys", "ls"); !errors.Is(err, errUsage) || !strings.Contains(err.Error(), "HERALD_KEY") {
		t.Errorf("no key: %v", err)
	}
}
