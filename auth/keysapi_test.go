package auth_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/heraldstreams/herald/auth"
	"github.com/heraldstreams/herald/httpapi/apierr"
	"github.com/heraldstreams/herald/internal/routetest"
	"github.com/heraldstreams/herald/store/sqlite"
)

const adminKey = "admin-key-for-tests-0123456789abcdef"

// testPortalURL is the dashboard's address the test server's portal
// tokens are handed over at.
const testPortalURL = "https://herald.example/_herald/ui/"

// keysServer is the key API on a real store, with two extra routes to try
// the keys on: one that needs streams:read on the stream at its path, and
// one that needs endpoints:read; both answer the principal's id and tenant.
func keysServer(t *testing.T) *httptest.Server {
	t.Helper()
	return keysServerWith(t, nil)
}

// keysServerWith is keysServer accepting the platform tokens jwtv
// verifies too (none when nil).
func keysServerWith(t *testing.T, jwtv *auth.JWTVerifier) *httptest.Server {
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
	a, err := auth.New(auth.Config{Keys: st, AdminKey: adminKey, JWT: jwtv})
	if err != nil {
		t.Fatal(err)
	}
	mux := routetest.Handler(a, auth.NewKeysAPI(auth.KeysAPIConfig{Auth: a, Store: st, PortalURL: testPortalURL, Fail: apierr.Failer(slog.New(slog.DiscardHandler))}).Routes())
	who := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, _ := auth.FromContext(r.Context())
		_, _ = io.WriteString(w, p.ID)
		if p.Tenant != "" {
			_, _ = io.WriteString(w, " "+p.Tenant)
		}
	})
	mux.Handle("GET /streams/", a.Require(auth.Rule{Scope: auth.ScopeStreamsRead, StreamPath: func(r *http.Request) string {
		return strings.TrimPrefix(r.URL.Path, "/streams")
	}}, who))
	mux.Handle("GET /endpoints", a.Require(auth.Rule{Scope: auth.ScopeEndpointsRead}, who))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

type keyJSON struct {
	ID          string   `json:"id"`
	Key         string   `json:"key"`
	Scopes      []string `json:"scopes"`
	Tenant      string   `json:"tenant"`
	Paths       []string `json:"paths"`
	Description string   `json:"description"`
	ExpiresAt   *string  `json:"expires_at"`
	CreatedAt   string   `json:"created_at"`
}

func call(t *testing.T, srv *httptest.Server, method, path, key, body string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, b
}

// postCreated POSTs body to path with key and decodes the answer, failing
// unless it is a 201.
func postCreated[T any](t *testing.T, srv *httptest.Server, path, key, body string) T {
	t.Helper()
	status, b := call(t, srv, "POST", path, key, body)
	if status != 201 {
		t.Fatalf("POST %s %s: %d %s", path, body, status, b)
	}
	var out T
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

func errCode(t *testing.T, body []byte) (string, string) {
	t.Helper()
	var e struct {
		Error struct{ Code, Message, Field string } `json:"error"`
	}
	if err := json.Unmarshal(body, &e); err != nil || e.Error.Code == "" {
		t.Fatalf("not an error body: %s", body)
	}
	return e.Error.Code, e.Error.Field
}

func TestKeysAPILifecycle(t *testing.T) {
	t.Parallel()
	srv := keysServer(t)
	expires := time.Now().Add(time.Hour).UTC().Truncate(time.Second).Format(time.RFC3339)
	status, body := call(t, srv, "POST", "/_herald/v1/keys", adminKey,
		`{"scopes":["streams:read","streams:read"],"tenant":"acme","paths":["/tenants/acme/agents/%2A"],"expires_at":"`+expires+`","description":"ci"}`)
	if status != 201 {
		t.Fatalf("create: %d %s", status, body)
	}
	var created keyJSON
	if err := json.Unmarshal(body, &created); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(created.Key, "hk_"+created.ID+"_") || created.Tenant != "acme" || created.Description != "ci" ||
		len(created.Scopes) != 1 || created.Paths[0] != "/tenants/acme/agents/*" || created.ExpiresAt == nil || *created.ExpiresAt != expires {
		t.Fatalf("created %+v", created)
	}

	// The new key works where its scope and paths allow, and nowhere else.
	if status, body := call(t, srv, "GET", "/streams/tenants/acme/agents/a", created.Key, ""); status != 200 || string(body) != created.ID+" acme" {
		t.Fatalf("using the key: %d %s", status, body)
	}
	if status, _ := call(t, srv, "GET", "/streams/other", created.Key, ""); status != 403 {
		t.Fatalf("outside its paths: %d", status)
	}
	if status, body := call(t, srv, "GET", "/_herald/v1/keys", created.Key, ""); status != 403 {
		t.Fatalf("a non-admin key listed keys: %d %s", status, body)
	}

	// Listed and read back, never with the secret.
	status, body = call(t, srv, "GET", "/_herald/v1/keys", adminKey, "")
	if status != 200 || strings.Contains(string(body), created.Key) || strings.Contains(string(body), `"key"`) {
		t.Fatalf("list: %d %s", status, body)
	}
	var list struct {
		Data       []keyJSON `json:"data"`
		NextCursor *string   `json:"next_cursor"`
	}
	if err := json.Unmarshal(body, &list); err != nil || len(list.Data) != 1 || list.Data[0].ID != created.ID || list.NextCursor != nil {
		t.Fatalf("list = %+v, %v", list, err)
	}
	status, body = call(t, srv, "GET", "/_herald/v1/keys/"+created.ID, adminKey, "")
	if status != 200 || strings.Contains(string(body), created.Key) || !strings.Contains(string(body), `"tenant":"acme"`) {
		t.Fatalf("get: %d %s", status, body)
	}

	// Revoked: 204, and the key stops working at once.
	if status, body := call(t, srv, "DELETE", "/_herald/v1/keys/"+created.ID, adminKey, ""); status != 204 {
		t.Fatalf("delete: %d %s", status, body)
	}
	status, body = call(t, srv, "GET", "/streams/tenants/acme/agents/a", created.Key, "")
	if code, _ := errCode(t, body); status != 401 || code != "INVALID_KEY" {
		t.Fatalf("revoked key: %d %s", status, body)
	}
	for _, m := range []string{"GET", "DELETE"} {
		status, body := call(t, srv, m, "/_herald/v1/keys/"+created.ID, adminKey, "")
		if code, _ := errCode(t, body); status != 404 || code != "KEY_NOT_FOUND" {
			t.Fatalf("%s of a revoked key: %d %s", m, status, body)
		}
	}
}

func TestKeysAPIPaging(t *testing.T) {
	t.Parallel()
	srv := keysServer(t)
	for range 3 {
		if status, body := call(t, srv, "POST", "/_herald/v1/keys", adminKey, `{"scopes":["events:publish"]}`); status != 201 {
			t.Fatalf("create: %d %s", status, body)
		}
	}
	seen := map[string]bool{}
	cursor := ""
	for page := 0; ; page++ {
		status, body := call(t, srv, "GET", "/_herald/v1/keys?limit=2&cursor="+cursor, adminKey, "")
		var list struct {
			Data       []keyJSON `json:"data"`
			NextCursor *string   `json:"next_cursor"`
		}
		if err := json.Unmarshal(body, &list); status != 200 || err != nil {
			t.Fatalf("page %d: %d %s", page, status, body)
		}
		for _, k := range list.Data {
			seen[k.ID] = true
		}
		if list.NextCursor == nil {
			break
		}
		cursor = *list.NextCursor
	}
	if len(seen) != 3 {
		t.Fatalf("pages held %d keys, want 3", len(seen))
	}
}

func TestKeysAPIRefusesBadInput(t *testing.T) {
	t.Parallel()
	srv := keysServer(t)
	past := time.Now().Add(-time.Hour).UTC().Format(time.RFC3339)
	for _, tc := range []struct {
		method, path, body string
		status             int
		code, field        string
	}{
		{"POST", "/_herald/v1/keys", ``, 400, "INVALID_JSON", ""},
		{"POST", "/_herald/v1/keys", `{"scopes":[]}`, 400, "INVALID_SCOPES", "scopes"},
		{"POST", "/_herald/v1/keys", `{}`, 400, "INVALID_SCOPES", "scopes"},
		{"POST", "/_herald/v1/keys", `{"scopes":["streams:admin"]}`, 400, "INVALID_SCOPES", "scopes"},
		{"POST", "/_herald/v1/keys", `{"scopes":"admin"}`, 400, "INVALID_JSON", "scopes"},
		{"POST", "/_herald/v1/keys", `{"scopes":["admin"],"scope":"x"}`, 400, "UNKNOWN_FIELD", "scope"},
		{"POST", "/_herald/v1/keys", `{"scopes":["admin"],"paths":["no-slash"]}`, 400, "INVALID_PATHS", "paths"},
		{"POST", "/_herald/v1/keys", `{"scopes":["admin"],"tenant":"a b"}`, 400, "INVALID_TENANT", "tenant"},
		{"POST", "/_herald/v1/keys", `{"scopes":["admin"],"expires_at":"tomorrow"}`, 400, "INVALID_EXPIRES_AT", "expires_at"},
		{"POST", "/_herald/v1/keys", `{"scopes":["admin"],"expires_at":"` + past + `"}`, 400, "INVALID_EXPIRES_AT", "expires_at"},
		{"POST", "/_herald/v1/keys", `{"scopes":["admin"]} {}`, 400, "INVALID_JSON", ""},
		{"POST", "/_herald/v1/keys", `{"scopes":["admin"],"description":"` + strings.Repeat("d", 300) + `"}`, 400, "INVALID_DESCRIPTION", "description"},
		{"POST", "/_herald/v1/keys", `{"scopes":["` + strings.Repeat("a", 70000) + `"]}`, 413, "PAYLOAD_TOO_LARGE", ""},
		{"POST", "/_herald/v1/keys?x=1", `{"scopes":["admin"]}`, 400, "UNKNOWN_PARAMETER", "x"},
		{"GET", "/_herald/v1/keys?limit=0", ``, 400, "INVALID_PARAMETER", "limit"},
		{"GET", "/_herald/v1/keys?limit=abc", ``, 400, "INVALID_PARAMETER", "limit"},
		{"GET", "/_herald/v1/keys?sort=id", ``, 400, "UNKNOWN_PARAMETER", "sort"},
		{"GET", "/_herald/v1/keys?cursor=junk", ``, 400, "INVALID_PARAMETER", "cursor"},
		{"GET", "/_herald/v1/keys?cursor=ABCDEFGHIJKLMNOP", ``, 400, "INVALID_PARAMETER", "cursor"},
		{"GET", "/_herald/v1/keys?cursor=" + strings.Repeat("a", 17), ``, 400, "INVALID_PARAMETER", "cursor"},
		{"GET", "/_herald/v1/keys/nope", ``, 404, "KEY_NOT_FOUND", ""},
	} {
		status, body := call(t, srv, tc.method, tc.path, adminKey, tc.body)
		code, field := errCode(t, body)
		if status != tc.status || code != tc.code || field != tc.field {
			t.Errorf("%s %s %.60s: %d %s %q, want %d %s %q", tc.method, tc.path, tc.body, status, code, field, tc.status, tc.code, tc.field)
		}
	}
	// Nothing half-made was stored.
	_, body := call(t, srv, "GET", "/_herald/v1/keys", adminKey, "")
	if string(body) != `{"data":[],"next_cursor":null}` {
		t.Fatalf("after refused creates: %s", body)
	}
	// Without a credential: 401, whatever the body.
	if status, body := call(t, srv, "POST", "/_herald/v1/keys", "", `{"scopes":["admin"]}`); status != 401 {
		t.Fatalf("create without a key: %d %s", status, body)
	}
}

func TestKeysAPITenantAdmin(t *testing.T) {
	t.Parallel()
	srv := keysServer(t)
	mk := func(key, body string) keyJSON {
		t.Helper()
		return postCreated[keyJSON](t, srv, "/_herald/v1/keys", key, body)
	}
	acmeAdmin := mk(adminKey, `{"scopes":["admin"],"tenant":"acme"}`)
	other := mk(adminKey, `{"scopes":["streams:read"],"tenant":"other"}`)
	// A tenant's admin makes keys of its tenant only.
	if k := mk(acmeAdmin.Key, `{"scopes":["streams:read"]}`); k.Tenant != "acme" {
		t.Fatalf("a tenant admin's key has tenant %q", k.Tenant)
	}
	status, body := call(t, srv, "POST", "/_herald/v1/keys", acmeAdmin.Key, `{"scopes":["streams:read"],"tenant":"other"}`)
	if code, _ := errCode(t, body); status != 403 || code != "TENANT_FORBIDDEN" {
		t.Fatalf("a tenant admin made another tenant's key: %d %s", status, body)
	}
	status, body = call(t, srv, "GET", "/_herald/v1/keys?tenant=other", acmeAdmin.Key, "")
	if code, _ := errCode(t, body); status != 403 || code != "TENANT_FORBIDDEN" || strings.Contains(string(body), other.ID) {
		t.Fatalf("a tenant admin listed another tenant's keys: %d %s", status, body)
	}
	// ... and sees only them.
	_, body = call(t, srv, "GET", "/_herald/v1/keys", acmeAdmin.Key, "")
	if strings.Contains(string(body), other.ID) || !strings.Contains(string(body), acmeAdmin.ID) {
		t.Fatalf("tenant admin's list: %s", body)
	}
	for _, m := range []string{"GET", "DELETE"} {
		if status, _ := call(t, srv, m, "/_herald/v1/keys/"+other.ID, acmeAdmin.Key, ""); status != 404 {
			t.Fatalf("%s of another tenant's key: %d", m, status)
		}
	}
	// A path-limited admin cannot make keys (they could be wider).
	limited := mk(adminKey, `{"scopes":["admin"],"paths":["/a/**"]}`)
	if status, _ := call(t, srv, "POST", "/_herald/v1/keys", limited.Key, `{"scopes":["streams:read"]}`); status != 403 {
		t.Fatalf("a path-limited admin made a key: %d", status)
	}
}

// A key of a tenant has paths inside its stream namespace only; a tenant
// that cannot name a namespace gets no key or portal token.
func TestKeysOfATenantHavePathsInItsNamespace(t *testing.T) {
	t.Parallel()
	srv := keysServer(t)
	for _, tc := range []struct {
		body   string
		status int
		code   string
	}{
		{`{"scopes":["streams:read"],"tenant":"acme","paths":["/tenants/acme/agents/**"]}`, 201, ""},
		{`{"scopes":["streams:read"],"tenant":"acme","paths":["/tenants/acme/**"]}`, 201, ""},
		{`{"scopes":["streams:read"],"tenant":"acme","paths":["/agents/**"]}`, 403, "FORBIDDEN"},
		{`{"scopes":["streams:read"],"tenant":"acme","paths":["/tenants/acme/**","/**"]}`, 403, "FORBIDDEN"},
		{`{"scopes":["streams:read"],"tenant":"acme","paths":["/tenants/*/x"]}`, 403, "FORBIDDEN"},
		{`{"scopes":["streams:read"],"tenant":"acme","paths":["/tenants/globex/**"]}`, 403, "FORBIDDEN"},
		{`{"scopes":["streams:read"],"tenant":"..","paths":[]}`, 400, "INVALID_TENANT"},
		{`{"scopes":["streams:read"],"paths":["/agents/**"]}`, 201, ""},
	} {
		status, body := call(t, srv, "POST", "/_herald/v1/keys", adminKey, tc.body)
		if status != tc.status {
			t.Errorf("%s: %d %s, want %d", tc.body, status, body, tc.status)
			continue
		}
		if tc.code == "" {
			continue
		}
		if code, _ := errCode(t, body); code != tc.code {
			t.Errorf("%s: code %q, want %q", tc.body, code, tc.code)
		}
	}
	if status, body := call(t, srv, "POST", "/_herald/v1/portal-tokens", adminKey, `{"tenant":"."}`); status != 400 {
		t.Errorf("portal token of '.': %d %s", status, body)
	}
}

// TestKeysAPINeedsTheErrorTable: a key API made without its error writer
// is refused at once, rather than answering a missing key with a 500.
func TestKeysAPINeedsTheErrorTable(t *testing.T) {
	t.Parallel()
	defer func() {
		if recover() == nil {
			t.Error("NewKeysAPI without Fail did not panic")
		}
	}()
	auth.NewKeysAPI(auth.KeysAPIConfig{Auth: auth.Off()})
}
