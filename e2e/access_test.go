package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// e2eAdminKey is the admin key the access-control tests start Herald with.
const e2eAdminKey = "e2e-admin-key-0123456789abcdef0123456789"

// TestDevelopmentModeSaysSo: with no credential configured, Herald serves
// on loopback with access control off, says so when it starts, and serves
// every route without a key.
func TestDevelopmentModeSaysSo(t *testing.T) {
	t.Parallel()
	s := startHerald(t, t.TempDir())
	if !strings.Contains(s.logs.String(), "access control is off (development)") {
		t.Fatalf("the start-up log does not say access control is off:\n%s", s.logs)
	}
	if resp, body := do(t, "PUT", s.base+"/dev/a", nil, ""); resp.StatusCode != http.StatusCreated {
		t.Fatalf("create without a key: %d %s", resp.StatusCode, body)
	}
	if resp, body := do(t, "GET", s.base+"/_herald/v1/endpoints", nil, ""); resp.StatusCode != http.StatusOK {
		t.Fatalf("endpoint list without a key: %d %s", resp.StatusCode, body)
	}
}

// TestBeyondLoopbackNeedsAccessControl: herald serve refuses to listen on
// every interface with access control off, and says what to do; with
// --insecure-no-auth it starts and warns.
func TestBeyondLoopbackNeedsAccessControl(t *testing.T) {
	t.Parallel()
	bin := heraldBinary(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, "serve", "--addr", "0.0.0.0:0", "--data-dir", t.TempDir()).CombinedOutput()
	var exit *exec.ExitError
	if err == nil || !asExit(err, &exit) || exit.ExitCode() != 2 {
		t.Fatalf("serve on 0.0.0.0 without auth: err %v, want exit status 2\n%s", err, out)
	}
	for _, want := range []string{"HERALD_ADMIN_KEY", "--insecure-no-auth"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the refusal does not mention %s:\n%s", want, out)
		}
	}

	// With the waiver it starts, warning first.
	cmd := exec.CommandContext(ctx, bin, "serve", "--addr", "0.0.0.0:0", "--data-dir", t.TempDir(), "--insecure-no-auth")
	logs := &logTail{}
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := cmd.Process.Kill(); err != nil {
			t.Error(err)
		}
		var exit *exec.ExitError
		if err := cmd.Wait(); !asExit(err, &exit) {
			t.Errorf("waiting for the killed herald: %v", err)
		}
	}()
	for !strings.Contains(logs.String(), "herald listening") {
		if ctx.Err() != nil {
			t.Fatalf("herald --insecure-no-auth did not start:\n%s", logs)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if !strings.Contains(logs.String(), "level=WARN msg=\"access control is OFF") {
		t.Fatalf("--insecure-no-auth did not warn:\n%s", logs)
	}
}

func asExit(err error, target **exec.ExitError) bool {
	e, ok := err.(*exec.ExitError)
	if ok {
		*target = e
	}
	return ok
}

// TestStreamRoutesWithAccessControl: with an admin key configured, stream
// routes need a key with the stream scopes, limited to the key's paths;
// the key API creates such keys; health stays open.
func TestStreamRoutesWithAccessControl(t *testing.T) {
	t.Parallel()
	s := startHeraldEnv(t, heraldBinary(t), []string{"HERALD_ADMIN_KEY=" + e2eAdminKey}, t.TempDir())
	if !strings.Contains(s.logs.String(), "access control is on") {
		t.Fatalf("the start-up log does not say access control is on:\n%s", s.logs)
	}
	admin := map[string]string{"Authorization": "Bearer " + e2eAdminKey}
	bearer := func(key string) map[string]string { return map[string]string{"Authorization": "Bearer " + key} }
	newKey := func(body string) string {
		t.Helper()
		hdr := map[string]string{"Authorization": "Bearer " + e2eAdminKey, "Content-Type": "application/json"}
		resp, out := do(t, "POST", s.base+"/_herald/v1/keys", hdr, body)
		var k struct{ ID, Key string }
		if resp.StatusCode != http.StatusCreated || json.Unmarshal([]byte(out), &k) != nil || k.Key == "" {
			t.Fatalf("create key %s: %d %s", body, resp.StatusCode, out)
		}
		return k.Key
	}
	reader := newKey(`{"scopes":["streams:read"]}`)
	writer := newKey(`{"scopes":["streams:read","streams:write"],"paths":["/team-a/**"]}`)

	for _, c := range []struct {
		name, method, path string
		hdr                map[string]string
		status             int
		code               string
	}{
		{"health is public", "GET", "/_herald/healthz", nil, 200, ""},
		{"no key", "PUT", "/team-a/s", nil, 401, "UNAUTHENTICATED"},
		{"wrong key", "PUT", "/team-a/s", bearer("hk_not-a-key"), 401, "INVALID_KEY"},
		{"read-only key cannot create", "PUT", "/team-a/s", bearer(reader), 403, "FORBIDDEN"},
		{"key outside its paths", "PUT", "/team-b/s", bearer(writer), 403, "FORBIDDEN"},
		{"key inside its paths", "PUT", "/team-a/s", bearer(writer), 201, ""},
		{"append", "POST", "/team-a/s", bearer(writer), 204, ""},
		{"read-only key reads", "GET", "/team-a/s?offset=-1", bearer(reader), 200, ""},
		{"read-only key cannot append", "POST", "/team-a/s", bearer(reader), 403, "FORBIDDEN"},
		{"metrics need admin", "GET", "/_herald/metrics", bearer(reader), 403, "FORBIDDEN"},
		{"admin reads metrics", "GET", "/_herald/metrics", admin, 200, ""},
		{"key API needs admin", "GET", "/_herald/v1/keys", bearer(writer), 403, "FORBIDDEN"},
	} {
		hdr := map[string]string{"Content-Type": "text/plain"}
		for k, v := range c.hdr {
			hdr[k] = v
		}
		body := ""
		if c.method == "POST" {
			body = "x"
		}
		resp, out := do(t, c.method, s.base+c.path, hdr, body)
		if resp.StatusCode != c.status {
			t.Errorf("%s: %s %s = %d %s, want %d", c.name, c.method, c.path, resp.StatusCode, out, c.status)
			continue
		}
		if c.code != "" && !strings.Contains(out, `"code":"`+c.code+`"`) {
			t.Errorf("%s: body %s, want code %s", c.name, out, c.code)
		}
	}
}

// TestTenantKeysCannotWriteAnotherTenantsEvents: the delivery engine
// takes an event's tenant from its JSON message, so a key of a tenant may
// not append (or create with) a message naming another tenant, however the
// member name is spelt; nothing of a refused request is stored.
func TestTenantKeysCannotWriteAnotherTenantsEvents(t *testing.T) {
	t.Parallel()
	s := startHeraldEnv(t, heraldBinary(t), []string{"HERALD_ADMIN_KEY=" + e2eAdminKey}, t.TempDir())
	hdr := map[string]string{"Authorization": "Bearer " + e2eAdminKey, "Content-Type": "application/json"}
	resp, out := do(t, "POST", s.base+"/_herald/v1/keys", hdr, `{"scopes":["streams:read","streams:write"],"tenant":"acme"}`)
	var k struct{ Key string }
	if resp.StatusCode != http.StatusCreated || json.Unmarshal([]byte(out), &k) != nil {
		t.Fatalf("create key: %d %s", resp.StatusCode, out)
	}
	acme := map[string]string{"Authorization": "Bearer " + k.Key, "Content-Type": "application/json"}

	if resp, out := do(t, "PUT", s.base+"/tenants/acme/events", acme, `[{"type":"a","tenant":"blob"}]`); resp.StatusCode != http.StatusForbidden || !strings.Contains(out, "TENANT_FORBIDDEN") {
		t.Fatalf("create with another tenant's event: %d %s", resp.StatusCode, out)
	}
	if resp, out := do(t, "PUT", s.base+"/tenants/acme/events", acme, `[{"type":"a","tenant":"acme"}]`); resp.StatusCode != http.StatusCreated {
		t.Fatalf("create with its own tenant's event: %d %s", resp.StatusCode, out)
	}
	for _, c := range []struct {
		body string
		want int
	}{
		{`{"type":"a","tenant":"blob"}`, http.StatusForbidden},
		{`{"type":"a","TENANT":"blob"}`, http.StatusForbidden},
		{`{"type":"a","tena\u006et":"blob"}`, http.StatusForbidden},
		{`{"type":"a","tenant":7}`, http.StatusForbidden},
		{`[{"type":"b","tenant":"acme"},{"type":"c","tenant":"blob"}]`, http.StatusForbidden},
		{`{"type":"d","tenant":"acme"}`, http.StatusNoContent},
		{`{"type":"e"}`, http.StatusNoContent},
		{`{"type":"f","tenant":null}`, http.StatusNoContent},
		{`"not an object"`, http.StatusNoContent},
	} {
		resp, out := do(t, "POST", s.base+"/tenants/acme/events", acme, c.body)
		if resp.StatusCode != c.want || (c.want == http.StatusForbidden && !strings.Contains(out, "TENANT_FORBIDDEN")) {
			t.Errorf("append %s: %d %s, want %d", c.body, resp.StatusCode, out, c.want)
		}
	}
	// The admin key writes any tenant into a platform stream, but into
	// acme's namespace only acme's events.
	if resp, out := do(t, "POST", s.base+"/tenants/acme/events", hdr, `{"type":"g","tenant":"blob"}`); resp.StatusCode != http.StatusForbidden || !strings.Contains(out, "TENANT_FORBIDDEN") {
		t.Fatalf("admin append naming another tenant in acme's namespace: %d %s", resp.StatusCode, out)
	}
	if resp, out := do(t, "PUT", s.base+"/platform-events", hdr, `[{"type":"g","tenant":"blob"}]`); resp.StatusCode != http.StatusCreated {
		t.Fatalf("admin create of a platform stream naming a tenant: %d %s", resp.StatusCode, out)
	}
	resp, out = do(t, "GET", s.base+"/tenants/acme/events?offset=-1", acme, "")
	want := `[{"type":"a","tenant":"acme"},{"type":"d","tenant":"acme"},{"type":"e"},{"type":"f","tenant":null},"not an object"]`
	if resp.StatusCode != http.StatusOK || out != want {
		t.Fatalf("stream holds %d %s, want %s", resp.StatusCode, out, want)
	}
}
