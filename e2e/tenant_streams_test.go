package e2e

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
)

// everyScope is every scope but admin: what a hostile tenant is handed.
const everyScope = `["streams:read","streams:write","subscriptions:read","subscriptions:write","endpoints:read","endpoints:write","events:publish","deliveries:read","deliveries:write"]`

// streamsRig is a Herald with streams of acme, globex and the platform,
// keys of acme and globex holding every scope but admin, and a platform
// key with the same scopes limited to /agents/**.
type streamsRig struct {
	*keyed
	acme, globex, agents string
	hook                 string
}

func startStreamsRig(t *testing.T) *streamsRig {
	t.Helper()
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) }))
	t.Cleanup(hook.Close)
	k := startKeyed(t, t.TempDir(), "--webhook-allow-cidrs", "127.0.0.0/8")
	r := &streamsRig{keyed: k, hook: hook.URL}
	mk := func(body string) string {
		var key struct{ Key string }
		if resp, out := k.call(tenantAdminKey, "POST", "/_herald/v1/keys", body, &key); resp.StatusCode != http.StatusCreated {
			t.Fatalf("create key %s: %d %s", body, resp.StatusCode, out)
		}
		return key.Key
	}
	r.acme = mk(`{"scopes":` + everyScope + `,"tenant":"acme"}`)
	r.globex = mk(`{"scopes":` + everyScope + `,"tenant":"globex"}`)
	r.agents = mk(`{"scopes":` + everyScope + `,"paths":["/agents/**"]}`)
	for _, p := range []string{"/tenants/globex/secret", "/tenants/globex/orders", "/tenants/acmex/x", "/private/ledger", "/events", "/agents/a", "/b1", "/b2", "/tools/x", "/zz"} {
		r.must(tenantAdminKey, "PUT", p, "", http.StatusCreated)
	}
	r.must(r.acme, "PUT", "/tenants/acme/mine", "", http.StatusCreated)
	r.must(r.acme, "PUT", "/tenants/acme/other", "", http.StatusCreated)
	return r
}

// must sends a request and fails unless it answers status.
func (r *streamsRig) must(key, method, path, body string, status int) string {
	r.t.Helper()
	resp, out := r.call(key, method, path, body, nil)
	if resp.StatusCode != status {
		r.t.Fatalf("%s %s: %d %s, want %d", method, path, resp.StatusCode, out, status)
	}
	return out
}

// refused expects 403 with code, and an answer that names no other
// tenant's stream.
func (r *streamsRig) refused(what, key, method, path, body, code string) {
	r.t.Helper()
	r.answers(what, key, method, path, body, http.StatusForbidden, code)
}

// absent checks that a request answers exactly as for a stream that does
// not exist (404 STREAM_NOT_FOUND, nothing of the stream shown).
func (r *streamsRig) absent(what, key, method, path, body string) {
	r.t.Helper()
	r.answers(what, key, method, path, body, http.StatusNotFound, "STREAM_NOT_FOUND")
}

// answers checks a request's status and code, and that the answer shows
// nothing of another owner's streams.
func (r *streamsRig) answers(what, key, method, path, body string, status int, code string) {
	r.t.Helper()
	resp, out := r.call(key, method, path, body, nil)
	if resp.StatusCode != status || (method != http.MethodHead && !strings.Contains(out, `"code":"`+code+`"`)) {
		r.t.Errorf("%s: %s %s = %d %s, want %d %s", what, method, path, resp.StatusCode, out, status, code)
	}
	for _, leak := range []string{"globex/secret", "private/ledger", "Stream-Next-Offset"} {
		if strings.Contains(out, leak) || resp.Header.Get("Stream-Next-Offset") != "" {
			r.t.Errorf("%s: the answer shows %s: %v %s", what, leak, resp.Header, out)
		}
	}
}

// walk lists the streams under prefix with limit, following next_cursor,
// and returns every path listed and every cursor given.
func (r *streamsRig) walk(key, prefix string, limit int) (paths, cursors []string) {
	r.t.Helper()
	cursor := ""
	for range 100 {
		q := url.Values{"prefix": {prefix}, "limit": {strconv.Itoa(limit)}}
		if cursor != "" {
			q.Set("cursor", cursor)
		}
		var page struct {
			Data       []struct{ Path string }
			NextCursor *string `json:"next_cursor"`
		}
		if resp, out := r.call(key, "GET", "/_herald/v1/streams?"+q.Encode(), "", &page); resp.StatusCode != http.StatusOK {
			r.t.Fatalf("list streams: %d %s", resp.StatusCode, out)
		}
		for _, d := range page.Data {
			paths = append(paths, d.Path)
		}
		if page.NextCursor == nil {
			return paths, cursors
		}
		cursor = *page.NextCursor
		cursors = append(cursors, cursor)
	}
	r.t.Fatal("the stream list never ends")
	return nil, nil
}

// A tenant's key creates, reads, appends to and deletes streams in its
// namespace only: another tenant's and the platform's streams answer as
// absent (404) whether they exist or not, a create there is 403, and no
// answer shows anything of them.
func TestTenantStreamsStayInTheirNamespace(t *testing.T) {
	t.Parallel()
	r := startStreamsRig(t)
	r.must(r.acme, "POST", "/tenants/acme/mine", `{"n":1}`, http.StatusNoContent)
	r.must(r.acme, "GET", "/tenants/acme/mine?offset=-1", "", http.StatusOK)
	r.must(r.acme, "HEAD", "/tenants/acme/mine", "", http.StatusOK)
	for _, p := range []string{"/tenants/globex/secret", "/tenants/globex/none", "/tenants/acmex/x", "/private/ledger", "/events", "/tenants", "/agents/a"} {
		r.absent("read "+p, r.acme, "GET", p+"?offset=-1", "")
		r.absent("head "+p, r.acme, "HEAD", p, "")
		r.absent("append "+p, r.acme, "POST", p, `{"n":1}`)
		r.refused("create "+p, r.acme, "PUT", p+"-new", "", "FORBIDDEN")
		r.absent("delete "+p, r.acme, "DELETE", p, "")
	}
	// Nothing was changed: globex's stream and the platform's are whole.
	r.must(r.globex, "GET", "/tenants/globex/secret?offset=-1", "", http.StatusOK)
	r.must(tenantAdminKey, "GET", "/private/ledger?offset=-1", "", http.StatusOK)
	// Another tenant's key cannot touch acme's either.
	r.absent("globex reads acme", r.globex, "GET", "/tenants/acme/mine?offset=-1", "")
	// Even the admin key cannot write another tenant's events into
	// acme's namespace.
	r.refused("admin names globex in acme's namespace", tenantAdminKey, "POST", "/tenants/acme/mine", `{"type":"a","tenant":"globex"}`, "TENANT_FORBIDDEN")
	// acme deletes its own.
	r.must(r.acme, "DELETE", "/tenants/acme/other", "", http.StatusNoContent)
}

// Stream lists show a tenant's (or a path-limited key's) streams only,
// and next_cursor never names another stream, however the list is walked.
func TestStreamListsAndCursorsStayWithinReach(t *testing.T) {
	t.Parallel()
	r := startStreamsRig(t)
	for _, c := range []struct {
		name, key, prefix, within string
		want                      []string
	}{
		{"acme from /", r.acme, "/", "/tenants/acme/", []string{"/tenants/acme/mine", "/tenants/acme/other"}},
		{"acme from /tenants/", r.acme, "/tenants/", "/tenants/acme/", []string{"/tenants/acme/mine", "/tenants/acme/other"}},
		{"acme from /tenants/globex/", r.acme, "/tenants/globex/", "/tenants/acme/", nil},
		{"globex from /", r.globex, "/", "/tenants/globex/", []string{"/tenants/globex/orders", "/tenants/globex/secret"}},
		{"agents from /", r.agents, "/", "/agents/", []string{"/agents/a"}},
	} {
		for _, limit := range []int{1, 2, 5} {
			paths, cursors := r.walk(c.key, c.prefix, limit)
			if strings.Join(paths, ",") != strings.Join(c.want, ",") {
				t.Errorf("%s, limit %d: listed %q, want %q", c.name, limit, paths, c.want)
			}
			for _, cur := range cursors {
				if !strings.HasPrefix(cur, c.within) {
					t.Errorf("%s, limit %d: next_cursor %q lies outside %s", c.name, limit, cur, c.within)
				}
			}
		}
	}
}

// A tenant's events go to its namespace; nobody limited publishes beyond
// its reach; the platform's default events stream stays the platform's.
func TestPublishStaysWithinReach(t *testing.T) {
	t.Parallel()
	r := startStreamsRig(t)
	var pub struct{ Stream string }
	if resp, out := r.call(r.acme, "POST", "/_herald/v1/events", `{"type":"order.paid","data":{}}`, &pub); resp.StatusCode != http.StatusAccepted || pub.Stream != "/tenants/acme/events" {
		t.Fatalf("acme publishes: %d %s, want it in /tenants/acme/events", resp.StatusCode, out)
	}
	if resp, out := r.call(tenantAdminKey, "POST", "/_herald/v1/events", `{"type":"order.paid","data":{}}`, &pub); resp.StatusCode != http.StatusAccepted || pub.Stream != "/events" {
		t.Fatalf("the admin publishes: %d %s, want it in /events", resp.StatusCode, out)
	}
	for _, c := range []struct{ who, key, body string }{
		{"acme into the ledger", r.acme, `{"type":"a.b","stream":"/private/ledger"}`},
		{"acme into globex's events", r.acme, `{"type":"a.b","stream":"/tenants/globex/events"}`},
		{"acme into the platform's events", r.acme, `{"type":"a.b","stream":"/events"}`},
		{"agents into the ledger", r.agents, `{"type":"a.b","stream":"/private/ledger"}`},
		{"agents into the default stream", r.agents, `{"type":"a.b"}`},
	} {
		r.refused(c.who, c.key, "POST", "/_herald/v1/events", c.body, "FORBIDDEN")
	}
	r.refused("admin names globex in acme's events", tenantAdminKey, "POST", "/_herald/v1/events", `{"type":"a.b","stream":"/tenants/acme/events","tenant":"globex"}`, "TENANT_FORBIDDEN")
	if resp, out := r.call(r.agents, "POST", "/_herald/v1/events", `{"type":"a.b","stream":"/agents/events"}`, &pub); resp.StatusCode != http.StatusAccepted {
		t.Fatalf("agents publishes inside its paths: %d %s", resp.StatusCode, out)
	}
}

// Endpoints, PATCH and replays reach no stream beyond the key's paths
// or namespace.
func TestEndpointsAndReplaysStayWithinReach(t *testing.T) {
	t.Parallel()
	r := startStreamsRig(t)
	for _, c := range []struct{ who, key, streams string }{
		{"acme, every stream", r.acme, `["/**"]`},
		{"acme, the platform's events", r.acme, `["/events"]`},
		{"acme, globex's namespace", r.acme, `["/tenants/globex/**"]`},
		{"acme, every tenant", r.acme, `["/tenants/*/events"]`},
		{"agents, every stream", r.agents, `["/**"]`},
		{"agents, no streams (every stream)", r.agents, ``},
		{"agents, beyond its paths", r.agents, `["/agents/**","/private/**"]`},
	} {
		body := `{"url":"` + r.hook + `"}`
		if c.streams != "" {
			body = `{"url":"` + r.hook + `","streams":` + c.streams + `}`
		}
		r.refused("create endpoint: "+c.who, c.key, "POST", "/_herald/v1/endpoints", body, "FORBIDDEN")
	}
	acmeEP := r.createEndpoint(r.acme, `{"url":"`+r.hook+`","streams":["/tenants/acme/**"]}`)
	agentsEP := r.createEndpoint(r.agents, `{"url":"`+r.hook+`","streams":["/agents/**"]}`)
	r.refused("patch acme's to every stream", r.acme, "PATCH", "/_herald/v1/endpoints/"+acmeEP.ID, `{"streams":["/**"]}`, "FORBIDDEN")
	r.refused("patch agents' to every stream", r.agents, "PATCH", "/_herald/v1/endpoints/"+agentsEP.ID, `{"streams":null}`, "FORBIDDEN")
	r.must(r.acme, "PATCH", "/_herald/v1/endpoints/"+acmeEP.ID, `{"streams":["/tenants/acme/orders/*"]}`, http.StatusOK)
	r.refused("acme replays /events", r.acme, "POST", "/_herald/v1/endpoints/"+acmeEP.ID+"/replay", `{"offset":"-1","stream":"/events"}`, "FORBIDDEN")
	r.refused("agents replays /events", r.agents, "POST", "/_herald/v1/endpoints/"+agentsEP.ID+"/replay", `{"offset":"-1","stream":"/events"}`, "FORBIDDEN")
	// An endpoint the admin made for the agents key with every stream
	// cannot be replayed by it.
	wide := r.createEndpoint(tenantAdminKey, `{"url":"`+r.hook+`"}`)
	r.refused("agents replays every stream", r.agents, "POST", "/_herald/v1/endpoints/"+wide.ID+"/replay", `{"since":"2000-01-01T00:00:00Z"}`, "FORBIDDEN")
}

// Subscriptions: a path-limited key manages subscriptions whose patterns
// lie inside its paths, wildcards included, and sees none beyond, on any
// path.
func TestSubscriptionsStayWithinReach(t *testing.T) {
	t.Parallel()
	r := startStreamsRig(t)
	sub := func(id string) string { return `{"webhook":"` + r.hook + `/` + id + `"}` }
	r.must(tenantAdminKey, "PUT", "/tools/**?subscription=toolsub", sub("toolsub"), http.StatusCreated)
	r.must(tenantAdminKey, "PUT", "/tenants/globex/**?subscription=globexsub", sub("globexsub"), http.StatusCreated)
	// Inside its paths, with wildcards: allowed.
	r.must(r.agents, "PUT", "/agents/*?subscription=agentsub", sub("agentsub"), http.StatusCreated)
	r.must(r.acme, "PUT", "/tenants/acme/**?subscription=acmesub", sub("acmesub"), http.StatusCreated)
	// Wider: refused.
	r.refused("agents subscribes to every stream", r.agents, "PUT", "/**?subscription=all", sub("all"), "FORBIDDEN")
	r.refused("acme subscribes to every tenant", r.acme, "PUT", "/tenants/*/events?subscription=all", sub("all"), "FORBIDDEN")
	// Listing every subscription lists those within reach.
	if out := r.must(r.acme, "GET", "/**?subscriptions", "", http.StatusOK); !strings.Contains(out, "acmesub") ||
		strings.Contains(out, "toolsub") || strings.Contains(out, "globexsub") || strings.Contains(out, "agentsub") {
		t.Errorf("acme lists every subscription: %s", out)
	}
	// Named by id, through any path: another path's or tenant's
	// subscription is not found, exactly as an id nobody holds.
	for _, c := range []struct{ key, path, id string }{
		{r.agents, "/agents/a", "toolsub"},
		{r.agents, "/**", "globexsub"},
		{r.acme, "/tenants/acme/mine", "toolsub"},
		{r.acme, "/**", "globexsub"},
	} {
		_, absent := r.call(c.key, "GET", c.path+"?subscription=nobody", "", nil)
		resp, out := r.call(c.key, "GET", c.path+"?subscription="+c.id, "", nil)
		if resp.StatusCode != http.StatusNotFound || out != strings.Replace(absent, "nobody", c.id, 1) {
			t.Errorf("GET %s?subscription=%s: %d %s, want 404 as for an absent id (%s)", c.path, c.id, resp.StatusCode, out, absent)
		}
	}
	r.must(r.agents, "GET", "/agents/a?subscription=agentsub", "", http.StatusOK)
	var list struct {
		Subscriptions []struct {
			SubscriptionID string `json:"subscription_id"`
		}
	}
	if resp, out := r.call(r.agents, "GET", "/agents/**?subscriptions", "", &list); resp.StatusCode != http.StatusOK || strings.Contains(out, "toolsub") || strings.Contains(out, "globexsub") {
		t.Errorf("agents lists subscriptions: %d %s", resp.StatusCode, out)
	}
}
