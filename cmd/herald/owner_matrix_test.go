package main

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/heraldstreams/herald/auth"
	"github.com/heraldstreams/herald/httpapi"
)

// TestOwnerMatrix walks every route the router lists that names or lists
// an owned object with objects owned by tenant-a, tenant-b and the
// platform, and credentials of tenant-a, tenant-b, the platform, a
// path-limited platform key and a portal token of tenant-a: nothing of
// an owner a credential may not see appears in any answer (each owner's
// ids, secrets and names are looked for in every body), and a named
// object of such an owner answers 404. A route missing from ownerRoutes
// fails the test, so every new route must say what it names or lists.
func TestOwnerMatrix(t *testing.T) {
	t.Parallel()
	m := newMatrix(t)
	w := newOwnerWorld(t, m)
	listed := map[string]bool{}
	for _, rt := range m.app.api.Routes() {
		name := rt.Method + " " + rt.Pattern
		listed[name] = true
		class, ok := ownerRoutes[name]
		if !ok {
			t.Errorf("route %s is not in ownerRoutes: classify what it names or lists", name)
			continue
		}
		t.Run(name, func(t *testing.T) { w.check(t, rt, class) })
	}
	for name := range ownerRoutes {
		if !listed[name] {
			t.Errorf("ownerRoutes has %s, which the router does not list", name)
		}
	}
}

// ownerClass says what a route does with owned objects.
type ownerClass struct {
	// kind is the object the route names by its {id} ("endpoint",
	// "delivery", "replay", "key") or lists (list true); "" for none.
	kind string
	list bool
	// creates: a POST whose body names the new object's tenant.
	creates bool
	// shared: the event type catalogue, the platform's, read by all and
	// changed only by platform credentials.
	shared bool
	// installation: figures of the whole installation, refused to every
	// credential of a tenant.
	installation bool
	// publish: POST /events, whose ids are unique per tenant.
	publish bool
}

// ownerRoutes classifies every route of the router.
var ownerRoutes = map[string]ownerClass{
	"GET /_herald/healthz":         {},
	"GET /_herald/readyz":          {},
	"GET /_herald/v1/whoami":       {},
	"GET /_herald/v1/openapi.json": {},
	"GET /_herald/ui/":             {},
	"POST /callback/{consumer_id}": {}, // a consumer's own token, never a key
	"GET /_herald/metrics":         {installation: true},
	"GET /_herald/v1/stats":        {installation: true},

	"POST /_herald/v1/keys":          {kind: "key", creates: true},
	"GET /_herald/v1/keys":           {kind: "key", list: true},
	"GET /_herald/v1/keys/{id}":      {kind: "key"},
	"DELETE /_herald/v1/keys/{id}":   {kind: "key"},
	"POST /_herald/v1/portal-tokens": {kind: "key", creates: true},

	"POST /_herald/v1/endpoints":                    {kind: "endpoint", creates: true},
	"GET /_herald/v1/endpoints":                     {kind: "endpoint", list: true},
	"GET /_herald/v1/endpoints/{id}":                {kind: "endpoint"},
	"PATCH /_herald/v1/endpoints/{id}":              {kind: "endpoint"},
	"DELETE /_herald/v1/endpoints/{id}":             {kind: "endpoint"},
	"POST /_herald/v1/endpoints/{id}/rotate-secret": {kind: "endpoint"},
	"POST /_herald/v1/endpoints/{id}/test":          {kind: "endpoint"},
	"POST /_herald/v1/endpoints/{id}/verify":        {kind: "endpoint"},
	"POST /_herald/v1/endpoints/{id}/replay":        {kind: "endpoint"},
	"GET /_herald/v1/endpoints/{id}/deliveries":     {kind: "endpoint"},
	"GET /_herald/v1/replays/{id}":                  {kind: "replay"},
	"GET /_herald/v1/deliveries/{id}":               {kind: "delivery"},
	"POST /_herald/v1/deliveries/{id}/retry":        {kind: "delivery"},
	"POST /_herald/v1/events":                       {publish: true},
	"GET /_herald/v1/events":                        {kind: "event", list: true},
	"GET /_herald/v1/events/{id}":                   {kind: "event"},

	"POST /_herald/v1/event-types":          {shared: true},
	"GET /_herald/v1/event-types":           {shared: true, list: true},
	"GET /_herald/v1/event-types/{name}":    {shared: true},
	"PATCH /_herald/v1/event-types/{name}":  {shared: true},
	"DELETE /_herald/v1/event-types/{name}": {shared: true},

	"GET /{stream}":                                {kind: "stream"},
	"HEAD /{stream}":                               {kind: "stream"},
	"POST /{stream}":                               {kind: "stream"},
	"PUT /{stream}":                                {kind: "stream", creates: true},
	"DELETE /{stream}":                             {kind: "stream"},
	"GET /_herald/v1/streams":                      {kind: "stream", list: true},
	"PUT /{pattern}?subscription={id}":             {kind: "subscription", creates: true},
	"GET /{pattern}?subscription={id}":             {kind: "subscription"},
	"DELETE /{pattern}?subscription={id}":          {kind: "subscription"},
	"GET /{pattern}?subscriptions":                 {kind: "subscription", list: true},
	"GET /_herald/v1/subscriptions/{id}/consumers": {kind: "subscription"},
	"GET /_herald/v1/consumers/{consumer_id}":      {kind: "consumer"},

	"PUT /__ds/subscriptions/{id}":                   {kind: "dssub", creates: true},
	"GET /__ds/subscriptions/{id}":                   {kind: "dssub"},
	"DELETE /__ds/subscriptions/{id}":                {kind: "dssub"},
	"POST /__ds/subscriptions/{id}/streams":          {kind: "dssub"},
	"DELETE /__ds/subscriptions/{id}/streams/{path}": {kind: "dssub"},
	"POST /__ds/subscriptions/{id}/claim":            {kind: "dssub"},
	"POST /__ds/subscriptions/{id}/callback":         {}, // the wake's own token, never a key
	"POST /__ds/subscriptions/{id}/ack":              {},
	"POST /__ds/subscriptions/{id}/release":          {},
	"GET /__ds/jwks.json":                            {}, // public keys
	"POST /_herald/v1/signing-keys/rotate":           {installation: true},
}

// The owners: two tenants and the platform ("").
var owners = []string{matrixTenant, otherTenant, ""}

// ownerObjects are the objects of one owner, and the strings that betray
// them in an answer.
type ownerObjects struct {
	label                           string
	endpoint, delivery, replay, key string
	stream, subscription, consumer  string
	secret, eventData, endpointName string
	// dsSub is the owner's subscription of the reserved API.
	dsSub string
}

// markers are the strings of o that no credential that may not see o
// may ever read.
func (o *ownerObjects) markers() []string {
	return []string{o.endpoint, o.delivery, o.replay, o.key, o.secret, o.eventData, o.endpointName, o.subscription, o.dsSub}
}

// ownerCred is a credential of the matrix.
type ownerCred struct {
	name   string
	key    string
	tenant string // "" sees every owner
	// pathLimited: the key is limited to /area/**, the platform's
	// streams.
	pathLimited bool
	scopes      []auth.Scope
}

func (c *ownerCred) sees(owner string) bool { return c.tenant == "" || c.tenant == owner }

// reaches reports whether c may see owner's object of kind: the objects
// that name stream paths (streams, subscriptions, consumers) must also
// lie within c's paths, so a key limited to /area/** reaches only the
// platform's.
func (c *ownerCred) reaches(owner, kind string) bool {
	if c.pathLimited && owner != "" && (kind == "stream" || kind == "subscription" || kind == "consumer" || kind == "dssub") {
		return false
	}
	// Every owner's event went to its default events stream, outside
	// the path-limited key's /area/**.
	if c.pathLimited && kind == "event" {
		return false
	}
	return c.sees(owner)
}

func (c *ownerCred) has(s auth.Scope) bool {
	for _, have := range c.scopes {
		if have == s || have == auth.ScopeAdmin {
			return true
		}
	}
	return s == ""
}

type ownerWorld struct {
	m     *matrix
	objs  map[string]*ownerObjects
	creds []*ownerCred
}

// newOwnerWorld makes each owner's objects, with credentials of each
// kind.
func newOwnerWorld(t *testing.T, m *matrix) *ownerWorld {
	w := &ownerWorld{m: m, objs: map[string]*ownerObjects{}}
	for _, owner := range owners {
		w.objs[owner] = w.makeObjects(t, owner)
	}
	every := append([]auth.Scope(nil), auth.AllScopes...)
	var portal struct{ Token string }
	m.admin(t, "POST", "/_herald/v1/portal-tokens", `{"tenant":"`+matrixTenant+`","ttl":"30m"}`, http.StatusCreated, &portal)
	var noAdmin []auth.Scope
	for _, s := range auth.AllScopes {
		if s != auth.ScopeAdmin {
			noAdmin = append(noAdmin, s)
		}
	}
	w.creds = []*ownerCred{
		{name: "tenant-a", key: m.key(t, every, matrixTenant), tenant: matrixTenant, scopes: every},
		{name: "tenant-b", key: m.key(t, every, otherTenant), tenant: otherTenant, scopes: every},
		{name: "platform", key: testAdminKey, scopes: every},
		{name: "path-limited", key: m.key(t, noAdmin, "", "/area/**"), scopes: noAdmin, pathLimited: true},
		{name: "portal-a", key: portal.Token, tenant: matrixTenant, scopes: auth.PortalScopes},
	}
	return w
}

// makeObjects makes an endpoint of owner (receiving only its own event
// type), an event with the id every owner uses, its delivery, a replay
// job, a key, a stream and a subscription on it.
func (w *ownerWorld) makeObjects(t *testing.T, owner string) *ownerObjects {
	m := w.m
	label := owner
	if label == "" {
		label = "platform"
	}
	o := &ownerObjects{label: label, eventData: "card-of-" + label, endpointName: "name-of-" + label}
	var ep struct{ ID, Secret string }
	m.admin(t, "POST", "/_herald/v1/endpoints", `{"url":"`+m.receiver.URL+`","tenant":"`+owner+`","name":"`+o.endpointName+
		`","event_types":["owner.`+label+`"],"headers":{"X-Api-Key":"header-of-`+label+`"}}`, http.StatusCreated, &ep)
	o.endpoint, o.secret = ep.ID, ep.Secret
	m.admin(t, "POST", "/_herald/v1/events", `{"id":"order-1001","type":"owner.`+label+`","tenant":"`+owner+
		`","data":{"card":"`+o.eventData+`"}}`, http.StatusAccepted, nil)
	o.delivery = m.firstDelivery(t, o.endpoint)
	var job struct{ ID string }
	m.admin(t, "POST", "/_herald/v1/endpoints/"+o.endpoint+"/replay", `{"status":"exhausted"}`, http.StatusAccepted, &job)
	o.replay = job.ID
	var k struct{ ID string }
	m.admin(t, "POST", "/_herald/v1/keys", `{"scopes":["streams:read"],"tenant":"`+owner+`"}`, http.StatusCreated, &k)
	o.key = k.ID
	o.stream = "/area/" + label + "/s"
	if owner != "" {
		o.stream = "/tenants/" + owner + "/s"
	}
	o.subscription = "sub-of-" + label
	m.admin(t, "PUT", o.stream, "", http.StatusCreated, nil)
	// A tenant's subscription is made with its own key: it is the
	// tenant of the credential that creates it.
	subKey := testAdminKey
	if owner != "" {
		subKey = m.key(t, []auth.Scope{auth.ScopeSubscriptionsWrite, auth.ScopeStreamsRead}, owner)
	}
	if status, body := m.call(t, "PUT", o.stream+"?subscription="+o.subscription, map[string]string{"Authorization": "Bearer " + subKey,
		"Content-Type": "application/json"}, `{"webhook":"`+m.receiver.URL+`"}`); status != http.StatusCreated {
		t.Fatalf("%s's subscription: %d %s", label, status, body)
	}
	o.consumer = o.subscription + ":" + strings.ReplaceAll(o.stream, "/", "%2F")
	o.dsSub = "ds-of-" + label
	dir := strings.TrimPrefix(o.stream[:strings.LastIndexByte(o.stream, '/')], "/")
	if status, body := m.call(t, "PUT", "/__ds/subscriptions/"+o.dsSub, map[string]string{"Authorization": "Bearer " + subKey,
		"Content-Type": "application/json"}, `{"type":"webhook","pattern":"`+dir+`/*","webhook":{"url":"`+m.receiver.URL+`"}}`); status != http.StatusCreated {
		t.Fatalf("%s's reserved-API subscription: %d %s", label, status, body)
	}
	return o
}

// path is the request path of a route naming o's object of its kind.
func (w *ownerWorld) path(rt httpapi.Route, o *ownerObjects) string {
	id := map[string]string{"endpoint": o.endpoint, "delivery": o.delivery, "replay": o.replay, "key": o.key,
		"consumer": o.consumer, "subscription": o.subscription, "dssub": o.dsSub}
	switch {
	case rt.Pattern == "/{stream}":
		return o.stream
	case strings.HasPrefix(rt.Pattern, "/{pattern}?subscription="):
		return o.stream + "?subscription=" + o.subscription
	}
	p := rt.Pattern
	if ownerRoutes[rt.Method+" "+rt.Pattern].kind == "event" {
		// Every owner's event has the id order-1001: the tenant names whose.
		return strings.Replace(p, "{id}", "order-1001", 1) + "?tenant=" + owner(o)
	}
	for _, param := range []string{"{id}", "{consumer_id}"} {
		p = strings.Replace(p, param, id[ownerRoutes[rt.Method+" "+rt.Pattern].kind], 1)
	}
	return strings.Replace(p, "{path}", strings.ReplaceAll(strings.TrimPrefix(o.stream, "/"), "/", "%2F"), 1)
}

// send makes one request with c's key.
func (w *ownerWorld) send(t *testing.T, c *ownerCred, method, path, body string) (int, string) {
	t.Helper()
	hdr := map[string]string{"Authorization": "Bearer " + c.key}
	if body != "" {
		hdr["Content-Type"] = "application/json"
	}
	return w.m.call(t, method, path, hdr, body)
}

// clean fails the test when body holds anything of an owner c may not
// see.
func (w *ownerWorld) clean(t *testing.T, c *ownerCred, what, body string) {
	t.Helper()
	for _, owner := range owners {
		if c.sees(owner) {
			continue
		}
		for _, s := range w.objs[owner].markers() {
			if s != "" && strings.Contains(body, s) {
				t.Errorf("%s: %s reads %s's %q: %s", what, c.name, w.objs[owner].label, s, body)
			}
		}
	}
}

// check runs a route's owner cases for every credential.
func (w *ownerWorld) check(t *testing.T, rt httpapi.Route, class ownerClass) {
	safe := rt.Method == http.MethodGet || rt.Method == http.MethodHead
	for _, c := range w.creds {
		scoped := c.has(rt.Rule.Scope)
		switch {
		case class.installation:
			status, body := w.send(t, c, rt.Method, rt.Pattern, "")
			w.clean(t, c, rt.Pattern, body)
			want := "TENANT_FORBIDDEN"
			if !scoped {
				want = "FORBIDDEN"
			}
			if c.tenant != "" && (status != http.StatusForbidden || !strings.Contains(body, `"code":"`+want+`"`)) {
				t.Errorf("%s reads installation-wide %s: %d %s, want 403 %s", c.name, rt.Pattern, status, body, want)
			}
		case class.shared:
			w.checkShared(t, rt, c, safe, class)
		case class.publish:
			status, body := w.send(t, c, rt.Method, rt.Pattern, `{"id":"order-1001","type":"owner.probe","data":{}}`)
			w.clean(t, c, "publish of an id every owner used", body)
			if status == http.StatusOK && c.tenant != "" && !strings.Contains(body, w.objs[c.tenant].eventData) {
				t.Errorf("%s's duplicate is not its own event: %s", c.name, body)
			}
		case class.creates:
			w.checkCreate(t, rt, c, scoped)
		case class.list:
			status, body := w.send(t, c, rt.Method, rt.Pattern, "")
			w.clean(t, c, "list", body)
			if class.kind == "event" {
				w.onlyOwnEvents(t, c, body)
			}
			if scoped && status == http.StatusOK && c.tenant != "" && class.kind == "endpoint" && !strings.Contains(body, w.objs[c.tenant].endpoint) {
				t.Errorf("%s does not list its own endpoint: %s", c.name, body)
			}
		case class.kind != "":
			for _, owner := range owners {
				o := w.objs[owner]
				if c.reaches(owner, class.kind) && !safe {
					continue // changing its own objects is the access matrix's
				}
				named := w.path(rt, o)
				status, body := w.send(t, c, rt.Method, named, ownerBody(rt))
				if status == http.StatusNotFound {
					// A not-found answer may repeat what the caller named
					// itself (the id in its own request): no leak.
					for _, id := range []string{o.consumer, o.subscription, o.stream, o.dsSub} {
						body = strings.ReplaceAll(body, id, "")
					}
				}
				w.clean(t, c, rt.Method+" of "+o.label+"'s "+class.kind, body)
				switch {
				case !scoped:
					if status != http.StatusForbidden {
						t.Errorf("%s without the scope on %s's %s: %d %s", c.name, o.label, class.kind, status, body)
					}
				case c.reaches(owner, class.kind):
					if status == http.StatusNotFound || status >= 500 {
						t.Errorf("%s on its own %s: %d %s", c.name, class.kind, status, body)
					}
				case c.tenant == "" && status == http.StatusForbidden:
					// A platform key outside its own paths is refused
					// (403 FORBIDDEN), as docs/security.md says.
				case status != http.StatusNotFound:
					t.Errorf("%s on %s's %s: %d %s, want 404 as if it did not exist", c.name, o.label, class.kind, status, body)
				}
			}
		default:
			if safe {
				path := rt.Pattern
				if strings.HasSuffix(path, "/") {
					path += "app.js"
				}
				_, body := w.send(t, c, rt.Method, path, "")
				w.clean(t, c, rt.Pattern, body)
			}
		}
	}
}

// ownerBody is a harmless body for a route that changes an object.
func ownerBody(rt httpapi.Route) string {
	switch {
	case rt.Method == http.MethodPatch:
		return `{"description":"changed"}`
	case strings.HasSuffix(rt.Pattern, "/replay"):
		return `{"since":"2000-01-01T00:00:00Z"}`
	case strings.HasPrefix(rt.Pattern, "/{pattern}") && rt.Method == http.MethodPut:
		return `{"webhook":"https://example.com/hook"}`
	case rt.Pattern == "/{stream}" && rt.Method == http.MethodPost:
		return `{"type":"owner.probe"}`
	case strings.HasSuffix(rt.Pattern, "/streams"):
		return `{"streams":["area/probe"]}`
	case strings.HasSuffix(rt.Pattern, "/claim"):
		return `{"worker":"probe"}`
	}
	return ""
}

// checkCreate: a credential of a tenant naming another owner's tenant in
// a create is 403 TENANT_FORBIDDEN (or refused for its scope).
func (w *ownerWorld) checkCreate(t *testing.T, rt httpapi.Route, c *ownerCred, scoped bool) {
	if c.tenant == "" {
		return // a platform credential creates for anyone: the access matrix's
	}
	if rt.Pattern == "/_herald/v1/endpoints" {
		// Broker endpoints are the installation's unless
		// --delivery-tenant-brokers: refused for the tenant's own.
		for typ, body := range map[string]string{
			"nats":  `{"type":"nats","config":{"servers":["nats://127.0.0.1:4222"]}}`,
			"kafka": `{"type":"kafka","config":{"brokers":["127.0.0.1:9092"]}}`,
		} {
			status, resp := w.send(t, c, rt.Method, rt.Pattern, body)
			w.clean(t, c, "a "+typ+" endpoint", resp)
			if status != http.StatusForbidden || scoped && !strings.Contains(resp, `"TENANT_FORBIDDEN"`) {
				t.Errorf("%s creating a %s endpoint: %d %s, want 403 TENANT_FORBIDDEN", c.name, typ, status, resp)
			}
		}
	}
	for _, owner := range owners {
		if c.sees(owner) || owner == "" && rt.Pattern == "/_herald/v1/portal-tokens" {
			continue
		}
		var body string
		switch rt.Pattern {
		case "/_herald/v1/keys":
			body = `{"scopes":["streams:read"],"tenant":"` + owner + `"}`
		case "/_herald/v1/portal-tokens":
			body = `{"tenant":"` + owner + `"}`
		case "/_herald/v1/endpoints":
			body = `{"url":"` + w.m.receiver.URL + `","tenant":"` + owner + `"}`
		default:
			continue // streams and subscriptions: their namespace decides
		}
		status, resp := w.send(t, c, rt.Method, rt.Pattern, body)
		w.clean(t, c, "create naming "+w.objs[owner].label, resp)
		if owner == "" {
			// An empty tenant means the caller's own: never a platform object.
			if status < 300 && !strings.Contains(resp, `"tenant":"`+c.tenant+`"`) {
				t.Errorf("%s made a platform object: %s", c.name, resp)
			}
			continue
		}
		if status != http.StatusForbidden || scoped && !strings.Contains(resp, `"TENANT_FORBIDDEN"`) {
			t.Errorf("%s creating for %s: %d %s, want 403 TENANT_FORBIDDEN", c.name, owner, status, resp)
		}
	}
}

// checkShared: the catalogue is read by every credential with the scope
// and changed only by platform ones.
func (w *ownerWorld) checkShared(t *testing.T, rt httpapi.Route, c *ownerCred, safe bool, class ownerClass) {
	path := strings.Replace(rt.Pattern, "{name}", "owner.nothing", 1)
	if safe {
		_, body := w.send(t, c, rt.Method, path, "")
		w.clean(t, c, "catalogue", body)
		return
	}
	if c.tenant == "" {
		return
	}
	body := map[string]string{http.MethodPost: `{"name":"owner.new"}`, http.MethodPatch: `{"deprecated":true}`}[rt.Method]
	status, resp := w.send(t, c, rt.Method, path, body)
	if status != http.StatusForbidden {
		t.Errorf("%s changes the catalogue: %d %s", c.name, status, resp)
	}
	var e struct{ Error struct{ Code string } }
	if c.has(rt.Rule.Scope) && (json.Unmarshal([]byte(resp), &e) != nil || e.Error.Code != "TENANT_FORBIDDEN") {
		t.Errorf("%s changing the catalogue: %s, want TENANT_FORBIDDEN", c.name, resp)
	}
}

// owner is the tenant o belongs to ("" the platform).
func owner(o *ownerObjects) string {
	if o.label == "platform" {
		return ""
	}
	return o.label
}

// onlyOwnEvents fails the test when an event log answered to c lists an
// event of an owner c may not see (each owner's event has its own type).
func (w *ownerWorld) onlyOwnEvents(t *testing.T, c *ownerCred, body string) {
	t.Helper()
	for _, o := range owners {
		if !c.sees(o) && strings.Contains(body, `"owner.`+w.objs[o].label+`"`) {
			t.Errorf("%s's event log lists %s's event: %s", c.name, w.objs[o].label, body)
		}
	}
	if c.tenant != "" && c.has(auth.ScopeDeliveriesRead) && !strings.Contains(body, `"owner.`+w.objs[c.tenant].label+`"`) {
		t.Errorf("%s's event log lacks its own event: %s", c.name, body)
	}
}
