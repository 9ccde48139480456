package e2e

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/heraldstreams/herald/client"
)

// TestTenantSubscriptionsAreTheirOwners: with keys of two tenants, acme
// and globex, that hold every subscription and stream scope, a tenant
// cannot list, read, delete or re-create the platform's or the other
// tenant's subscriptions, cannot see their consumers, cannot create a
// subscription outside its namespace, and its subscription's consumer
// cannot subscribe to a stream outside its namespace.
func TestTenantSubscriptionsAreTheirOwners(t *testing.T) {
	t.Parallel()
	s := startHeraldEnv(t, heraldBinary(t), []string{"HERALD_ADMIN_KEY=" + e2eAdminKey}, t.TempDir(), "--webhook-allow-cidrs", "127.0.0.0/8")
	admin := map[string]string{"Authorization": "Bearer " + e2eAdminKey, "Content-Type": "application/json"}
	as := func(key string) map[string]string {
		return map[string]string{"Authorization": "Bearer " + key, "Content-Type": "application/json"}
	}
	tenantKey := func(tenant string) map[string]string {
		t.Helper()
		resp, out := do(t, "POST", s.base+"/_herald/v1/keys", admin,
			`{"scopes":["streams:read","streams:write","subscriptions:read","subscriptions:write"],"tenant":"`+tenant+`"}`)
		var k struct{ Key string }
		if resp.StatusCode != http.StatusCreated || json.Unmarshal([]byte(out), &k) != nil {
			t.Fatalf("create %s's key: %d %s", tenant, resp.StatusCode, out)
		}
		return as(k.Key)
	}
	acme, globex := tenantKey("acme"), tenantKey("globex")
	hook, wakes := wakeHook(t, nil)
	defer hook.Close()
	must := func(who map[string]string, method, path, body string, want int) string {
		t.Helper()
		resp, out := do(t, method, s.base+path, who, body)
		if resp.StatusCode != want {
			t.Fatalf("%s %s: %d %s, want %d", method, path, resp.StatusCode, out, want)
		}
		return out
	}
	sub := `{"webhook":"` + hook.URL + `/wake"}`

	// Each tenant's stream and subscription, and the platform's
	// subscription of acme's streams.
	must(acme, "PUT", "/tenants/acme/a", "", http.StatusCreated)
	must(globex, "PUT", "/tenants/globex/g", "", http.StatusCreated)
	must(admin, "PUT", "/platform/p", "", http.StatusCreated)
	must(acme, "PUT", "/tenants/acme/*?subscription=acme-sub", sub, http.StatusCreated)
	must(globex, "PUT", "/tenants/globex/*?subscription=globex-sub", sub, http.StatusCreated)
	must(admin, "PUT", "/tenants/acme/*?subscription=platform-sub", sub, http.StatusCreated)

	absent := func(who map[string]string, path, code string) {
		t.Helper()
		resp, out := do(t, "GET", s.base+path, who, "")
		if resp.StatusCode != http.StatusNotFound || !strings.Contains(out, `"code":"`+code+`"`) {
			t.Errorf("GET %s: %d %s, want 404 %s", path, resp.StatusCode, out, code)
		}
	}
	for _, c := range []struct {
		name       string
		who        map[string]string
		own        string
		others     []string
		theirPaths []string
	}{
		{"acme", acme, "acme-sub", []string{"globex-sub", "platform-sub"}, []string{"/tenants/globex/g", "/platform/p"}},
		{"globex", globex, "globex-sub", []string{"acme-sub", "platform-sub"}, []string{"/tenants/acme/a", "/platform/p"}},
	} {
		// Lists hold its own subscription only, even on the pattern the
		// platform's subscription shares with acme's.
		for _, path := range []string{"/**?subscriptions", "/tenants/acme/*?subscriptions"} {
			out := must(c.who, "GET", path, "", http.StatusOK)
			for _, other := range c.others {
				if strings.Contains(out, other) {
					t.Errorf("%s lists %s at %s: %s", c.name, other, path, out)
				}
			}
		}
		if out := must(c.who, "GET", "/**?subscriptions", "", http.StatusOK); !strings.Contains(out, c.own) {
			t.Errorf("%s does not list its own subscription: %s", c.name, out)
		}
		for _, other := range c.others {
			// Read, delete, consumers: as if it did not exist.
			absent(c.who, "/**?subscription="+other, "SUBSCRIPTION_NOT_FOUND")
			absent(c.who, "/_herald/v1/subscriptions/"+other+"/consumers", "SUBSCRIPTION_NOT_FOUND")
			absent(c.who, "/_herald/v1/consumers/"+other+":%2Ftenants%2Facme%2Fa", "CONSUMER_NOT_FOUND")
			for _, path := range []string{"/**", "/tenants/acme/*", "/tenants/globex/*"} {
				resp, out := do(t, "DELETE", s.base+path+"?subscription="+other, c.who, "")
				if resp.StatusCode != http.StatusNotFound && resp.StatusCode != http.StatusForbidden {
					t.Errorf("%s deletes %s at %s: %d %s", c.name, other, path, resp.StatusCode, out)
				}
			}
			// Re-creating the id, even with its exact configuration in
			// the tenant's own namespace, is a conflict that says nothing
			// of the subscription and changes nothing.
			own := "/tenants/" + c.name + "/*"
			resp, out := do(t, "PUT", s.base+own+"?subscription="+other, c.who, `{"webhook":"`+hook.URL+`/stolen"}`)
			if resp.StatusCode != http.StatusConflict || !strings.Contains(out, "SUBSCRIPTION_EXISTS") || strings.Contains(out, hook.URL) || strings.Contains(out, "/tenants/") {
				t.Errorf("%s re-creates %s: %d %s", c.name, other, resp.StatusCode, out)
			}
			if out := must(admin, "GET", "/**?subscription="+other, "", http.StatusOK); strings.Contains(out, "stolen") {
				t.Errorf("%s after %s's re-create: %s", other, c.name, out)
			}
		}
		// Patterns outside its namespace are refused.
		for _, pattern := range append([]string{"/**", "/tenants/*/a", "/tenants/**"}, c.theirPaths...) {
			resp, out := do(t, "PUT", s.base+pattern+"?subscription=wide-"+c.name, c.who, sub)
			if resp.StatusCode != http.StatusForbidden || !strings.Contains(out, `"code":"FORBIDDEN"`) {
				t.Errorf("%s subscribes to %s: %d %s", c.name, pattern, resp.StatusCode, out)
			}
		}
	}
	// The platform sees every owner's.
	out := must(admin, "GET", "/**?subscriptions", "", http.StatusOK)
	for _, id := range []string{"acme-sub", "globex-sub", "platform-sub"} {
		if !strings.Contains(out, id) {
			t.Errorf("the platform does not list %s: %s", id, out)
		}
	}

	// acme's consumer, woken by a new stream, subscribes only within
	// acme's namespace.
	must(acme, "PUT", "/tenants/acme/new", "", http.StatusCreated)
	var wake *client.Wake
	for wake == nil {
		select {
		case w := <-wakes:
			if w.ConsumerID == "acme-sub:%2Ftenants%2Facme%2Fnew" {
				wake = w
			}
		case <-time.After(30 * time.Second):
			t.Fatal("no wake for acme's new stream")
		}
	}
	callback := func(subscribe string) (int, string) {
		t.Helper()
		body := `{"epoch":` + strconv.FormatInt(wake.Epoch, 10) + `,"subscribe":["` + subscribe + `"]}`
		resp, out := do(t, "POST", wake.Callback, map[string]string{"Authorization": "Bearer " + wake.Token, "Content-Type": "application/json"}, body)
		return resp.StatusCode, out
	}
	for _, path := range []string{"/tenants/globex/g", "/platform/p", "/tenants/acmex/a", "/events"} {
		status, out := callback(path)
		if status != http.StatusForbidden || !strings.Contains(out, `"ok":false`) || !strings.Contains(out, `"code":"FORBIDDEN"`) {
			t.Errorf("acme's consumer subscribes to %s: %d %s", path, status, out)
		}
	}
	if status, out := callback("/tenants/acme/a"); status != http.StatusOK || !strings.Contains(out, `"/tenants/acme/a"`) {
		t.Errorf("acme's consumer subscribes within its namespace: %d %s", status, out)
	}
}
