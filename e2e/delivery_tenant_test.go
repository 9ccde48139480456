package e2e

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

const tenantAdminKey = "e2e-admin-key-0123456789abcdef-0123456789"

// keyed is a Herald started with access control on, and the base URL.
type keyed struct {
	*server
	t *testing.T
}

// startKeyed starts Herald on dataDir with the admin key in a file.
func startKeyed(t *testing.T, dataDir string, extra ...string) *keyed {
	t.Helper()
	file := filepath.Join(t.TempDir(), "admin-key")
	if err := os.WriteFile(file, []byte(tenantAdminKey+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return &keyed{startHerald(t, dataDir, append([]string{"--admin-key-file", file}, extra...)...), t}
}

// call sends a request with key as the bearer credential and decodes a
// JSON answer into out (when not nil).
func (k *keyed) call(key, method, path, body string, out any) (*http.Response, string) {
	k.t.Helper()
	resp, raw := do(k.t, method, k.base+path, map[string]string{"Authorization": "Bearer " + key, "Content-Type": "application/json"}, body)
	if out != nil && resp.StatusCode < 300 {
		if err := json.Unmarshal([]byte(raw), out); err != nil {
			k.t.Fatalf("%s %s: %v: %s", method, path, err, raw)
		}
	}
	return resp, raw
}

// newKey makes an API key of tenant with every delivery scope.
func (k *keyed) newKey(tenant string) string {
	k.t.Helper()
	body := `{"scopes":["endpoints:read","endpoints:write","deliveries:read","deliveries:write","events:publish"],"tenant":` + quote(tenant) + `}`
	var key struct{ Key string }
	if resp, out := k.call(tenantAdminKey, "POST", "/_herald/v1/keys", body, &key); resp.StatusCode != http.StatusCreated || key.Key == "" {
		k.t.Fatalf("create key of %s: %d %s", tenant, resp.StatusCode, out)
	}
	return key.Key
}

type tenantEndpoint struct {
	ID     string `json:"id"`
	Tenant string `json:"tenant"`
	Secret string `json:"secret"`
}

func (k *keyed) createEndpoint(key, body string) tenantEndpoint {
	k.t.Helper()
	var ep tenantEndpoint
	if resp, out := k.call(key, "POST", "/_herald/v1/endpoints", body, &ep); resp.StatusCode != http.StatusCreated {
		k.t.Fatalf("create endpoint %s: %d %s", body, resp.StatusCode, out)
	}
	return ep
}

type deliveryPage struct {
	Data []struct {
		ID      string `json:"id"`
		EventID string `json:"event_id"`
	} `json:"data"`
	NextCursor *string `json:"next_cursor"`
}

// waitDeliveries waits until the endpoint lists n deliveries (as key
// sees them) and returns them, newest first.
func (k *keyed) waitDeliveries(key, endpoint string, n int) deliveryPage {
	k.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		var page deliveryPage
		resp, out := k.call(key, "GET", "/_herald/v1/endpoints/"+endpoint+"/deliveries?status=delivered", "", &page)
		if resp.StatusCode != http.StatusOK {
			k.t.Fatalf("list deliveries: %d %s", resp.StatusCode, out)
		}
		if len(page.Data) >= n {
			return page
		}
		if time.Now().After(deadline) {
			k.t.Fatalf("%d of %d deliveries after 20s\n%s", len(page.Data), n, k.logs)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// countDeliveries returns how many deliveries the endpoint lists, in any
// state (one page: the tests make few).
func (k *keyed) countDeliveries(key, endpoint string) int {
	k.t.Helper()
	var page deliveryPage
	if resp, out := k.call(key, "GET", "/_herald/v1/endpoints/"+endpoint+"/deliveries", "", &page); resp.StatusCode != http.StatusOK {
		k.t.Fatalf("list deliveries: %d %s", resp.StatusCode, out)
	}
	if page.NextCursor != nil {
		k.t.Fatalf("endpoint %s lists more than a page of deliveries", endpoint)
	}
	return len(page.Data)
}

// A key of tenant A acts on tenant A only: B's endpoints and deliveries
// are 404 as missing ones are (whatever the route), lists show A's,
// endpoints and events it makes carry A, naming B is refused, and A's
// endpoint receives A's events only. The admin key sees both.
func TestTenantIsABoundary(t *testing.T) {
	t.Parallel()
	k := startKeyed(t, t.TempDir(), deliveryFlags...)
	keyA, keyB := k.newKey("acme"), k.newKey("blob")
	recA, srvA := newEventReceiver(t)
	recB, srvB := newEventReceiver(t)

	epA := k.createEndpoint(keyA, `{"url":"`+srvA.URL+`","event_types":["order.*"]}`)
	epB := k.createEndpoint(keyB, `{"url":"`+srvB.URL+`","event_types":["order.*"]}`)
	recA.secret, recB.secret = epA.Secret, epB.Secret
	if epA.Tenant != "acme" || epB.Tenant != "blob" {
		t.Fatalf("endpoints are not stamped with their key's tenant: %+v %+v", epA, epB)
	}
	// Naming its own tenant is accepted; naming another is refused, and
	// nothing is made.
	if ep := k.createEndpoint(keyA, `{"url":"`+srvA.URL+`","tenant":"acme","event_types":["none.*"]}`); ep.Tenant != "acme" {
		t.Fatalf("own tenant named: %+v", ep)
	}
	resp, out := k.call(keyA, "POST", "/_herald/v1/endpoints", `{"url":"`+srvA.URL+`","tenant":"blob"}`, nil)
	if code := apiError(t, "create naming another tenant", resp, out, http.StatusForbidden); code != "TENANT_FORBIDDEN" {
		t.Errorf("create naming another tenant: code %q", code)
	}

	// Events: each key's are stamped with its tenant; naming another
	// tenant is refused.
	var pub struct{ Event struct{ ID string } }
	for i, c := range []struct{ key, body string }{
		{keyA, `{"type":"order.paid","data":{"i":1}}`},
		{keyA, `{"type":"order.paid","data":{"i":2},"tenant":"acme"}`},
		{keyB, `{"type":"order.paid","data":{"i":3}}`},
		{tenantAdminKey, `{"type":"order.paid","data":{"i":4},"tenant":"blob"}`},
		{tenantAdminKey, `{"type":"order.paid","data":{"i":5}}`},
	} {
		if resp, out := k.call(c.key, "POST", "/_herald/v1/events", c.body, &pub); resp.StatusCode != http.StatusAccepted {
			t.Fatalf("publish %d: %d %s", i, resp.StatusCode, out)
		}
	}
	resp, out = k.call(keyA, "POST", "/_herald/v1/events", `{"type":"order.paid","data":{"i":6},"tenant":"blob"}`, nil)
	if code := apiError(t, "publish naming another tenant", resp, out, http.StatusForbidden); code != "TENANT_FORBIDDEN" {
		t.Errorf("publish naming another tenant: code %q", code)
	}
	// A tenant's events go to its stream namespace, the admin key's to the
	// platform's /events; what the streams hold carries the tenants.
	for stream, want := range map[string][]string{
		"/events":              {"blob", ""},
		"/tenants/acme/events": {"acme", "acme"},
		"/tenants/blob/events": {"blob"},
	} {
		resp, out = k.call(tenantAdminKey, "GET", stream+"?offset=-1", "", nil)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("read %s: %d %s", stream, resp.StatusCode, out)
		}
		var tenants []string
		var msgs []struct{ Tenant string }
		if err := json.Unmarshal([]byte(out), &msgs); err != nil {
			t.Fatalf("%s: %v: %s", stream, err, out)
		}
		for _, m := range msgs {
			tenants = append(tenants, m.Tenant)
		}
		if !slices.Equal(tenants, want) {
			t.Fatalf("tenants in %s %q, want %q", stream, tenants, want)
		}
	}

	// Each endpoint receives its tenant's events and no other. Every
	// endpoint sources from every stream, made before any event, and a
	// stream's events are matched in order for all of them in one pass. So
	// once A lists its deliveries of 1 and 2, B was matched against all of
	// /tenants/acme/events; once B lists 3, A was matched against all of
	// /tenants/blob/events; and once each lists its tenant's event
	// published after the platform's (5) in /events, 6 for B and 7 for A,
	// both were matched against all of /events: a wrong delivery would be
	// listed by then.
	for _, c := range []string{`{"i":6},"tenant":"blob"`, `{"i":7},"tenant":"acme"`} {
		if resp, out := k.call(tenantAdminKey, "POST", "/_herald/v1/events", `{"type":"order.paid","data":`+c+`}`, nil); resp.StatusCode != http.StatusAccepted {
			t.Fatalf("publish %s: %d %s", c, resp.StatusCode, out)
		}
	}
	pageA := k.waitDeliveries(keyA, epA.ID, 3)
	pageB := k.waitDeliveries(keyB, epB.ID, 3)
	for _, c := range []struct {
		key, endpoint string
		want          int
	}{{keyA, epA.ID, 3}, {keyB, epB.ID, 3}} {
		if n := k.countDeliveries(c.key, c.endpoint); n != c.want {
			t.Errorf("endpoint %s has %d deliveries, want %d", c.endpoint, n, c.want)
		}
	}
	for _, c := range []struct {
		rec  *eventReceiver
		want []int
	}{{recA, []int{1, 2, 7}}, {recB, []int{3, 4, 6}}} {
		c.rec.mu.Lock()
		var got []int
		for _, ev := range c.rec.log {
			got = append(got, ev.Data.I)
		}
		c.rec.mu.Unlock()
		slices.Sort(got)
		if !slices.Equal(got, c.want) {
			t.Errorf("received events %v, want %v", got, c.want)
		}
	}
	dlvB := pageB.Data[0].ID

	// Every route that names B's endpoint or delivery is a 404 to A's key,
	// with the code of a missing one; the same routes work for B's key.
	for _, c := range []struct{ method, path, body, code string }{
		{"GET", "/_herald/v1/endpoints/" + epB.ID, "", "ENDPOINT_NOT_FOUND"},
		{"PATCH", "/_herald/v1/endpoints/" + epB.ID, `{"description":"mine"}`, "ENDPOINT_NOT_FOUND"},
		{"PATCH", "/_herald/v1/endpoints/" + epB.ID, `{"tenant":"acme"}`, "ENDPOINT_NOT_FOUND"},
		{"POST", "/_herald/v1/endpoints/" + epB.ID + "/rotate-secret", "", "ENDPOINT_NOT_FOUND"},
		{"POST", "/_herald/v1/endpoints/" + epB.ID + "/test", "", "ENDPOINT_NOT_FOUND"},
		{"POST", "/_herald/v1/endpoints/" + epB.ID + "/replay", `{"offset":"-1"}`, "ENDPOINT_NOT_FOUND"},
		{"GET", "/_herald/v1/endpoints/" + epB.ID + "/deliveries", "", "ENDPOINT_NOT_FOUND"},
		{"DELETE", "/_herald/v1/endpoints/" + epB.ID, "", "ENDPOINT_NOT_FOUND"},
		{"GET", "/_herald/v1/deliveries/" + dlvB, "", "DELIVERY_NOT_FOUND"},
		{"POST", "/_herald/v1/deliveries/" + dlvB + "/retry", "", "DELIVERY_NOT_FOUND"},
	} {
		what := "tenant A: " + c.method + " " + c.path
		resp, out := k.call(keyA, c.method, c.path, c.body, nil)
		if code := apiError(t, what, resp, out, http.StatusNotFound); code != "" && code != c.code {
			t.Errorf("%s: code %q, want %q", what, code, c.code)
		}
		missing := strings.Replace(strings.Replace(c.path, epB.ID, "ep_000000000000000000000000", 1), dlvB, "dlv_missing", 1)
		respMissing, outMissing := k.call(keyA, c.method, missing, c.body, nil)
		if respMissing.StatusCode != resp.StatusCode || errorCodeOf(outMissing) != errorCodeOf(out) {
			t.Errorf("%s: answered %d %s, a missing one %d %s", what, resp.StatusCode, out, respMissing.StatusCode, outMissing)
		}
	}
	// B's endpoint and delivery are untouched, and B still sees them.
	var got tenantEndpoint
	if resp, out := k.call(keyB, "GET", "/_herald/v1/endpoints/"+epB.ID, "", &got); resp.StatusCode != http.StatusOK || got.Tenant != "blob" {
		t.Fatalf("B's endpoint after A's attempts: %d %s", resp.StatusCode, out)
	}
	if resp, out := k.call(keyB, "GET", "/_herald/v1/deliveries/"+dlvB, "", nil); resp.StatusCode != http.StatusOK {
		t.Fatalf("B's delivery: %d %s", resp.StatusCode, out)
	}
	if resp, out := k.call(keyB, "POST", "/_herald/v1/deliveries/"+dlvB+"/retry", "", nil); resp.StatusCode != http.StatusAccepted {
		t.Fatalf("B retries its delivery: %d %s", resp.StatusCode, out)
	}
	// A's own delivery is A's.
	if resp, out := k.call(keyA, "GET", "/_herald/v1/deliveries/"+pageA.Data[0].ID, "", nil); resp.StatusCode != http.StatusOK {
		t.Fatalf("A's delivery: %d %s", resp.StatusCode, out)
	}

	// PATCH cannot move A's endpoint to B; an empty tenant is A's own.
	resp, out = k.call(keyA, "PATCH", "/_herald/v1/endpoints/"+epA.ID, `{"tenant":"blob"}`, nil)
	if code := apiError(t, "patch to another tenant", resp, out, http.StatusForbidden); code != "TENANT_FORBIDDEN" {
		t.Errorf("patch to another tenant: code %q", code)
	}
	if resp, out := k.call(keyA, "PATCH", "/_herald/v1/endpoints/"+epA.ID, `{"tenant":null,"description":"a"}`, &got); resp.StatusCode != http.StatusOK || got.Tenant != "acme" {
		t.Fatalf("patch with a null tenant: %d %s", resp.StatusCode, out)
	}

	// Lists: A's key sees A's endpoints whatever ?tenant says; the admin
	// key sees both tenants and may filter.
	list := func(key, query string) []string {
		t.Helper()
		var page struct{ Data []tenantEndpoint }
		if resp, out := k.call(key, "GET", "/_herald/v1/endpoints"+query, "", &page); resp.StatusCode != http.StatusOK {
			t.Fatalf("list %s: %d %s", query, resp.StatusCode, out)
		}
		var tenants []string
		for _, ep := range page.Data {
			tenants = append(tenants, ep.Tenant)
		}
		slices.Sort(tenants)
		return tenants
	}
	for _, c := range []struct {
		key, query string
		want       []string
	}{
		{keyA, "", []string{"acme", "acme"}},
		{keyA, "?tenant=blob", []string{"acme", "acme"}},
		{keyB, "?tenant=acme", []string{"blob"}},
		{tenantAdminKey, "", []string{"acme", "acme", "blob"}},
		{tenantAdminKey, "?tenant=blob", []string{"blob"}},
	} {
		if got := list(c.key, c.query); !slices.Equal(got, c.want) {
			t.Errorf("list %s: tenants %q, want %q", c.query, got, c.want)
		}
	}
	// The admin key reaches both tenants' endpoints and deliveries.
	for _, path := range []string{"/_herald/v1/endpoints/" + epA.ID, "/_herald/v1/endpoints/" + epB.ID, "/_herald/v1/deliveries/" + dlvB} {
		if resp, out := k.call(tenantAdminKey, "GET", path, "", nil); resp.StatusCode != http.StatusOK {
			t.Errorf("admin GET %s: %d %s", path, resp.StatusCode, out)
		}
	}
	// A deletes its own endpoint.
	if resp, out := k.call(keyA, "DELETE", "/_herald/v1/endpoints/"+epA.ID, "", nil); resp.StatusCode != http.StatusNoContent {
		t.Fatalf("A deletes its endpoint: %d %s", resp.StatusCode, out)
	}
}

// errorCodeOf returns the JSON error code of an answer ("" when none).
func errorCodeOf(body string) string {
	var e struct{ Error struct{ Code string } }
	if json.Unmarshal([]byte(body), &e) != nil {
		return ""
	}
	return e.Error.Code
}

// The key list refuses a cursor no list gave, as the delivery lists do,
// and follows one it gave.
func TestKeyListRefusesJunkCursor(t *testing.T) {
	t.Parallel()
	k := startKeyed(t, t.TempDir())
	k.newKey("acme")
	k.newKey("acme")
	for _, c := range []string{"junk", "3", "ABCDEFGHIJKLMNOP", "abcdefghijklmnopq", "%00"} {
		resp, out := k.call(tenantAdminKey, "GET", "/_herald/v1/keys?cursor="+c, "", nil)
		if code := apiError(t, "keys cursor "+c, resp, out, http.StatusBadRequest); code != "" && code != "INVALID_PARAMETER" {
			t.Errorf("keys cursor %s: code %q", c, code)
		}
	}
	var page struct {
		Data       []struct{ ID string }
		NextCursor *string `json:"next_cursor"`
	}
	if resp, out := k.call(tenantAdminKey, "GET", "/_herald/v1/keys?limit=1", "", &page); resp.StatusCode != http.StatusOK || page.NextCursor == nil {
		t.Fatalf("first page: %d %s", resp.StatusCode, out)
	}
	first := page.Data[0].ID
	if resp, out := k.call(tenantAdminKey, "GET", "/_herald/v1/keys?limit=1&cursor="+*page.NextCursor, "", &page); resp.StatusCode != http.StatusOK || len(page.Data) != 1 || page.Data[0].ID == first {
		t.Fatalf("next page: %d %s", resp.StatusCode, out)
	}
}
