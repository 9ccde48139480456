package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"
)

// The real binary with --delivery-enforce-event-types: the catalogue is
// read by a tenant's key and changed only without a tenant; published
// events are checked against it (an unknown type or data failing the
// schema is a 400 naming where, nothing delivered), a deprecated type is
// delivered and flagged; endpoints' types must be catalogued; and all of
// it holds after a restart.
func TestDeliveryEnforcedCatalogue(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	env := []string{"HERALD_ADMIN_KEY=" + e2eAdminKey}
	flags := append([]string{"--delivery-enforce-event-types"}, deliveryFlags...)
	s := startHeraldEnv(t, heraldBinary(t), env, dir, flags...)
	rc, hook := newEventReceiver(t)
	call := func(key, method, path, body string) (*http.Response, string) {
		t.Helper()
		return do(t, method, s.base+"/_herald/v1"+path, map[string]string{"Content-Type": "application/json", "Authorization": "Bearer " + key}, body)
	}
	admin := func(method, path, body string, want int) string {
		t.Helper()
		resp, out := call(e2eAdminKey, method, path, body)
		if resp.StatusCode != want {
			t.Fatalf("%s %s: %d %s, want %d\n%s", method, path, resp.StatusCode, out, want, s.logs)
		}
		return out
	}
	refused := func(what string, resp *http.Response, out string, status int, code, field string) {
		t.Helper()
		var e struct{ Error struct{ Code, Field string } }
		if got := apiError(t, what, resp, out, status); got != code || json.Unmarshal([]byte(out), &e) != nil || e.Error.Field != field {
			t.Errorf("%s: %s, want %s at %q", what, out, code, field)
		}
	}

	admin("POST", "/event-types", `{"name":"order.paid","description":"paid","schema":{"type":"object","properties":{"total":{"type":"number","minimum":0}},"required":["total"]}}`, http.StatusCreated)
	admin("POST", "/event-types", `{"name":"order.legacy","deprecated":true}`, http.StatusCreated)
	var key struct{ Key string }
	if err := json.Unmarshal([]byte(admin("POST", "/keys", `{"scopes":["admin"],"tenant":"acme"}`, http.StatusCreated)), &key); err != nil {
		t.Fatal(err)
	}
	if resp, out := call(key.Key, "GET", "/event-types/order.paid", ""); resp.StatusCode != http.StatusOK {
		t.Errorf("a tenant reads the catalogue: %d %s", resp.StatusCode, out)
	}
	resp, out := call(key.Key, "POST", "/event-types", `{"name":"acme.own"}`)
	refused("a tenant adds a type", resp, out, http.StatusForbidden, "TENANT_FORBIDDEN", "")
	resp, out = call(key.Key, "DELETE", "/event-types/order.paid", "")
	refused("a tenant removes a type", resp, out, http.StatusForbidden, "TENANT_FORBIDDEN", "")

	resp, out = call(e2eAdminKey, "POST", "/endpoints", fmt.Sprintf(`{"url":%q,"event_types":["order.paid","order.refunded"]}`, hook.URL+"/hook"))
	refused("an endpoint of an unknown type", resp, out, http.StatusBadRequest, "UNKNOWN_EVENT_TYPE", "event_types[1]")
	resp, out = call(e2eAdminKey, "POST", "/endpoints", fmt.Sprintf(`{"url":%q,"event_types":["invoice.*"]}`, hook.URL+"/hook"))
	refused("a pattern covering no type", resp, out, http.StatusBadRequest, "UNKNOWN_EVENT_TYPE", "event_types[0]")
	var ep struct{ ID, Secret string }
	if err := json.Unmarshal([]byte(admin("POST", "/endpoints", fmt.Sprintf(`{"url":%q,"event_types":["order.*"]}`, hook.URL+"/hook"), http.StatusCreated)), &ep); err != nil {
		t.Fatal(err)
	}
	rc.mu.Lock()
	rc.secret = ep.Secret
	rc.mu.Unlock()

	check := func() {
		t.Helper()
		resp, out := call(e2eAdminKey, "POST", "/events", `{"id":"bad-1","type":"order.paid","data":{"total":-3}}`)
		refused("data failing the schema", resp, out, http.StatusBadRequest, "EVENT_DATA_INVALID", "data/total")
		resp, out = call(e2eAdminKey, "POST", "/events", `{"id":"bad-2","type":"order.unknown","data":{}}`)
		refused("an unknown type", resp, out, http.StatusBadRequest, "UNKNOWN_EVENT_TYPE", "type")
	}
	check()
	var paid, legacy struct {
		DeprecatedType bool `json:"deprecated_type"`
	}
	if err := json.Unmarshal([]byte(admin("POST", "/events", `{"id":"ok-1","type":"order.paid","data":{"total":3}}`, http.StatusAccepted)), &paid); err != nil || paid.DeprecatedType {
		t.Fatalf("a valid event: %+v %v", paid, err)
	}
	if err := json.Unmarshal([]byte(admin("POST", "/events", `{"id":"old-1","type":"order.legacy","data":{}}`, http.StatusAccepted)), &legacy); err != nil || !legacy.DeprecatedType {
		t.Fatalf("a deprecated type: %+v %v", legacy, err)
	}
	rc.waitFor([]string{"ok-1", "old-1"}, 10*time.Second, s.logs)

	if err := s.terminate(10 * time.Second); err != nil {
		t.Fatal(err)
	}
	s = startHeraldEnv(t, heraldBinary(t), env, dir, flags...)
	check()
	admin("POST", "/events", `{"id":"ok-2","type":"order.paid","data":{"total":4}}`, http.StatusAccepted)
	rc.waitFor([]string{"ok-2"}, 10*time.Second, s.logs)
	rc.mu.Lock()
	defer rc.mu.Unlock()
	for _, id := range []string{"bad-1", "bad-2"} {
		if rc.seen[id] > 0 {
			t.Errorf("refused event %s was delivered", id)
		}
	}
}
