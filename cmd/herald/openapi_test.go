package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/heraldstreams/herald/api"
	"github.com/heraldstreams/herald/auth"
	"github.com/heraldstreams/herald/httpapi"
)

// openAPIModel loads the embedded OpenAPI document, every $ref resolved.
func openAPIModel(t *testing.T) *openapi3.T {
	t.Helper()
	doc, err := openapi3.NewLoader().LoadFromData(api.OpenAPI())
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

// routeKey names a route so that the router's list and the document can
// be compared: the method, the path with every {name} as {} (the router
// says {id} where the document says {endpoint_id}), and the query
// parameter that selects the route ("" for none).
type routeKey struct{ method, path, selector string }

func (k routeKey) String() string {
	if k.selector == "" {
		return k.method + " " + k.path
	}
	return k.method + " " + k.path + "?" + k.selector
}

var pathParam = regexp.MustCompile(`\{[^}]*\}`)

// routeKeyOf is the key of a route of the router: "/{pattern}?subscription={id}"
// has the path "/{}" and the selector "subscription".
func routeKeyOf(rt httpapi.Route) routeKey {
	path, query, _ := strings.Cut(rt.Pattern, "?")
	selector, _, _ := strings.Cut(query, "=")
	return routeKey{rt.Method, pathParam.ReplaceAllString(path, "{}"), selector}
}

// documentedRoutes returns the routes the document describes, each with
// its operation. An operation whose query parameters are marked
// x-herald-route-selector describes one route per such parameter.
func documentedRoutes(doc *openapi3.T) map[routeKey]*openapi3.Operation {
	out := map[routeKey]*openapi3.Operation{}
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			k := routeKey{method: strings.ToUpper(method), path: pathParam.ReplaceAllString(path, "{}")}
			selected := false
			for _, p := range append(append(openapi3.Parameters(nil), item.Parameters...), op.Parameters...) {
				if _, ok := p.Value.Extensions["x-herald-route-selector"]; ok && p.Value.In == "query" {
					k.selector, selected = p.Value.Name, true
					out[k] = op
				}
			}
			if !selected {
				out[k] = op
			}
		}
	}
	return out
}

// isStreamRoute reports whether a route is one of the Durable Streams
// protocol, which the document leaves to the protocol's specification.
func isStreamRoute(rt httpapi.Route) bool { return strings.HasPrefix(rt.Pattern, "/{stream}") }

// TestOpenAPIMatchesTheRouter compares the document with the routes a
// full server registers, both ways: a route served without an operation,
// and an operation of a route no longer served, fail with the route's
// name. Each operation's access (public, the callback token, any valid
// credential, or the scope of its API key) must be the rule its route
// declares.
func TestOpenAPIMatchesTheRouter(t *testing.T) {
	t.Parallel()
	m := newMatrix(t)
	documented := documentedRoutes(openAPIModel(t))
	served := map[routeKey]bool{}
	for _, rt := range m.app.api.Routes() {
		if isStreamRoute(rt) {
			continue
		}
		k := routeKeyOf(rt)
		served[k] = true
		op, ok := documented[k]
		if !ok {
			t.Errorf("route %s %s is served but not described in api/openapi.json: add its operation", rt.Method, rt.Pattern)
			continue
		}
		checkAccess(t, k, rt.Rule, op)
	}
	for k := range documented {
		if !served[k] {
			t.Errorf("api/openapi.json describes %s, which the server does not serve: remove the operation or mount the route", k)
		}
	}
	if len(served) < 20 {
		t.Fatalf("the router lists %d routes besides the stream routes", len(served))
	}
}

// checkAccess checks that an operation states its route's rule.
func checkAccess(t *testing.T, k routeKey, rule auth.Rule, op *openapi3.Operation) {
	t.Helper()
	var security openapi3.SecurityRequirements
	if op.Security != nil {
		security = *op.Security
	}
	extension := func(name string) string {
		v, _ := op.Extensions[name].(string)
		return v
	}
	switch {
	case rule.Public:
		if op.Security == nil || len(security) != 0 {
			t.Errorf("%s is public: its operation needs security: []", k)
		}
	case rule.CallbackToken:
		if len(security) != 1 || security[0]["callbackToken"] == nil {
			t.Errorf("%s takes a callback token: its operation needs security: [{callbackToken: []}]", k)
		}
	case rule.Scope == "":
		anyKey := len(security) == 1 && len(security[0]) == 1
		if anyKey {
			roles, ok := security[0]["apiKey"]
			anyKey = ok && len(roles) == 0
		}
		if extension("x-herald-access") != "credential" || !anyKey {
			t.Errorf("%s takes any valid credential: its operation needs x-herald-access: credential and security: [{apiKey: []}]", k)
		}
	default:
		if scope := extension("x-herald-scope"); scope != string(rule.Scope) {
			t.Errorf("%s needs scope %q, its operation says x-herald-scope %q", k, rule.Scope, scope)
		}
		found := false
		for _, req := range security {
			roles, ok := req["apiKey"]
			found = found || ok && len(roles) == 1 && roles[0] == string(rule.Scope)
		}
		if !found {
			t.Errorf("%s needs scope %q: its operation needs security: [{apiKey: [%q]}]", k, rule.Scope, rule.Scope)
		}
	}
}

// TestOpenAPIServed: the server answers GET /_herald/v1/openapi.json with
// the embedded document, byte for byte, as JSON, without a credential.
func TestOpenAPIServed(t *testing.T) {
	t.Parallel()
	m := newMatrix(t)
	resp, err := http.Get(m.base + api.Path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d: %s", resp.StatusCode, body)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type %q, want application/json", ct)
	}
	if !bytes.Equal(body, api.OpenAPI()) {
		t.Errorf("served %d bytes that differ from the embedded document (%d bytes)", len(body), len(api.OpenAPI()))
	}
	if !json.Valid(body) {
		t.Error("the served document is not JSON")
	}
}

func TestOpenAPIDescribesRealAnswers(t *testing.T) {
	t.Parallel()
	m := newMatrix(t)
	c := newSpecCheck(t, m)
	admin := testAdminKey

	// Keys.
	var key struct{ ID, Key string }
	c.decode(c.do(exchange{method: "POST", path: "/_herald/v1/keys", key: admin, want: http.StatusCreated,
		body: `{"scopes":["streams:read","endpoints:read"],"tenant":"tenant-a","paths":["/tenants/tenant-a/area/**"],"expires_at":"2099-01-01T00:00:00Z","description":"openapi"}`}), &key)
	c.do(exchange{method: "GET", path: "/_herald/v1/keys", key: admin, want: http.StatusOK})
	c.do(exchange{method: "GET", path: "/_herald/v1/keys?limit=1&tenant=tenant-a", key: admin, want: http.StatusOK})
	c.do(exchange{method: "GET", path: "/_herald/v1/keys/" + key.ID, key: admin, want: http.StatusOK})
	c.do(exchange{method: "POST", path: "/_herald/v1/keys", key: admin, want: http.StatusBadRequest, body: `{"scopes":["streams:everything"]}`, refused: true})
	c.do(exchange{method: "POST", path: "/_herald/v1/keys", key: admin, want: http.StatusBadRequest, body: `{"scopes":["admin"],"colour":"red"}`, refused: true})

	// A portal token: minted, refused without its tenant, and listed as a key.
	var portal struct{ ID, URL string }
	c.decode(c.do(exchange{method: "POST", path: "/_herald/v1/portal-tokens", key: admin, want: http.StatusCreated, body: `{"tenant":"tenant-a","ttl":"10m"}`}), &portal)
	if !strings.HasPrefix(portal.URL, m.base+"/_herald/ui/#key=hk_"+portal.ID+"_") {
		t.Errorf("the portal token's url is %q", portal.URL)
	}
	c.do(exchange{method: "POST", path: "/_herald/v1/portal-tokens", key: admin, want: http.StatusBadRequest, body: `{"ttl":"10m"}`})
	c.do(exchange{method: "POST", path: "/_herald/v1/portal-tokens", key: admin, want: http.StatusBadRequest, body: `{"tenant":"tenant-a","ttl":10}`, refused: true})
	c.do(exchange{method: "GET", path: "/_herald/v1/keys/" + portal.ID, key: admin, want: http.StatusOK})

	// A key without the endpoints:write scope, then revoked.
	c.do(exchange{method: "POST", path: "/_herald/v1/endpoints", key: key.Key, want: http.StatusForbidden, body: `{"url":"` + m.receiver.URL + `"}`})
	other := m.key(t, []auth.Scope{auth.ScopeEndpointsWrite}, otherTenant)
	c.do(exchange{method: "POST", path: "/_herald/v1/endpoints", key: other, want: http.StatusForbidden, body: `{"url":"` + m.receiver.URL + `","tenant":"` + matrixTenant + `"}`})
	c.do(exchange{method: "DELETE", path: "/_herald/v1/keys/" + key.ID, key: admin, want: http.StatusNoContent})
	c.do(exchange{method: "GET", path: "/_herald/v1/keys/" + key.ID, key: admin, want: http.StatusNotFound})
	c.do(exchange{method: "GET", path: "/_herald/v1/endpoints", key: key.Key, want: http.StatusUnauthorized})
	c.do(exchange{method: "GET", path: "/_herald/v1/endpoints", want: http.StatusUnauthorized, refused: true})

	// Endpoints.
	var ep struct{ ID string }
	c.decode(c.do(exchange{method: "POST", path: "/_herald/v1/endpoints", key: admin, want: http.StatusCreated,
		body: `{"url":"` + m.receiver.URL + `","event_types":["order.*"],"streams":["/**"],"filter":{"data.region":{"in":["eu","uk"]}},` +
			`"description":"orders","tenant":"tenant-a","rate_limit":50,"max_in_flight":4,"ordering":"stream","retry_schedule":["0","5s",60],"headers":{"X-Team":"shop"},` +
			`"name":"Orders","profile":"standard-webhooks","failure_policy":"retry_all","timeout_ms":5000}`}), &ep)
	epPath := "/_herald/v1/endpoints/" + ep.ID
	c.do(exchange{method: "GET", path: "/_herald/v1/endpoints", key: admin, want: http.StatusOK})
	c.do(exchange{method: "GET", path: "/_herald/v1/endpoints?limit=1&tenant=tenant-a&status=active", key: admin, want: http.StatusOK})
	c.fails(exchange{method: "GET", path: "/_herald/v1/endpoints?status=asleep", key: admin, want: http.StatusBadRequest, refused: true}, "INVALID_PARAMETER", "status")
	c.do(exchange{method: "GET", path: epPath, key: admin, want: http.StatusOK})
	c.do(exchange{method: "PATCH", path: epPath, key: admin, want: http.StatusOK, body: `{"description":"changed","rate_limit":null,"headers":{"X-Team":"***"},"name":null,"failure_policy":"standard","timeout_ms":null}`})
	c.do(exchange{method: "POST", path: epPath + "/rotate-secret", key: admin, want: http.StatusOK})
	c.do(exchange{method: "POST", path: epPath + "/test", key: admin, want: http.StatusOK, body: `{"data":{"hello":"world"}}`})
	c.do(exchange{method: "POST", path: epPath + "/test", key: admin, want: http.StatusOK})

	// Events and deliveries.
	c.do(exchange{method: "POST", path: "/_herald/v1/events", key: admin, want: http.StatusAccepted,
		body: `{"id":"order-1","type":"order.created","data":{"region":"eu"},"tenant":"tenant-a","timestamp":"2026-01-02T15:04:05Z"}`})
	var dup struct {
		Duplicate bool
		Event     struct{ ID, Timestamp string }
	}
	c.decode(c.do(exchange{method: "POST", path: "/_herald/v1/events", key: admin, want: http.StatusOK,
		body: `{"id":"order-1","type":"order.created","data":{"region":"uk"},"tenant":"tenant-a","timestamp":"2026-02-03T00:00:00Z"}`}), &dup)
	if !dup.Duplicate || dup.Event.ID != "order-1" || dup.Event.Timestamp != "2026-01-02T15:04:05Z" {
		t.Errorf("a duplicate answers %+v, want the event as first stored", dup)
	}
	var list struct {
		Data []struct{ ID string } `json:"data"`
	}
	for deadline := time.Now().Add(10 * time.Second); len(list.Data) == 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the published event made no delivery")
		}
		c.decode(c.do(exchange{method: "GET", path: epPath + "/deliveries", key: admin, want: http.StatusOK}), &list)
	}
	dlv := "/_herald/v1/deliveries/" + list.Data[0].ID
	// The endpoint's health summary, once an attempt was made: figures,
	// not nulls.
	var got struct {
		Health struct{ Attempts int } `json:"health"`
	}
	for deadline := time.Now().Add(10 * time.Second); got.Health.Attempts == 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the endpoint's health never counted an attempt")
		}
		c.decode(c.do(exchange{method: "GET", path: epPath, key: admin, want: http.StatusOK}), &got)
	}
	// The event log: a page, filtered, and one event with its deliveries.
	c.do(exchange{method: "GET", path: "/_herald/v1/events?limit=1", key: admin, want: http.StatusOK})
	c.do(exchange{method: "GET", path: "/_herald/v1/events?type=order.created&tenant=tenant-a&stream=/events&outcome=delivered&since=2000-01-01T00:00:00Z&until=2999-01-01T00:00:00Z", key: admin, want: http.StatusOK})
	c.fails(exchange{method: "GET", path: "/_herald/v1/events?outcome=lost", key: admin, want: http.StatusBadRequest, refused: true}, "INVALID_PARAMETER", "outcome")
	c.do(exchange{method: "GET", path: "/_herald/v1/events/order-1?tenant=tenant-a", key: admin, want: http.StatusOK})
	c.do(exchange{method: "GET", path: "/_herald/v1/events/order-1", key: admin, want: http.StatusNotFound})
	var counted struct{ Total *int }
	c.decode(c.do(exchange{method: "GET", path: epPath + "/deliveries?status=delivered&event_type=order.created&since=2000-01-01T00:00:00Z&until=2999-01-01T00:00:00Z&limit=10&count=true", key: admin, want: http.StatusOK}), &counted)
	if counted.Total == nil {
		t.Error("a list of deliveries with count=true has no total")
	}
	c.fails(exchange{method: "GET", path: epPath + "/deliveries?count=maybe", key: admin, want: http.StatusBadRequest, refused: true}, "INVALID_PARAMETER", "count")
	c.do(exchange{method: "GET", path: dlv, key: admin, want: http.StatusOK})
	c.do(exchange{method: "POST", path: dlv + "/retry", key: admin, want: http.StatusAccepted})
	exerciseReplays(c, epPath)

	// The event type catalogue, and a server that enforces it.
	exerciseCatalogue(c)
	exerciseEnforcedCatalogue(c.on(startHerald(t, "--webhook-allow-cidrs", "127.0.0.0/8", "--delivery-enforce-event-types")))

	// Mistakes of the caller.
	c.do(exchange{method: "GET", path: "/_herald/v1/endpoints/ep_000000000000000000000000", key: admin, want: http.StatusNotFound})
	c.do(exchange{method: "GET", path: "/_herald/v1/deliveries/dlv_00000000000000000000000000000000", key: admin, want: http.StatusNotFound})
	c.do(exchange{method: "POST", path: "/_herald/v1/endpoints", key: admin, want: http.StatusBadRequest, body: `{"url":"http://10.1.2.3/hook"}`})
	var bad struct {
		Error struct{ Code, Field string } `json:"error"`
	}
	c.decode(c.do(exchange{method: "POST", path: "/_herald/v1/endpoints", key: admin, want: http.StatusBadRequest, body: `{"url":"` + m.receiver.URL + `","colour":"red"}`, refused: true}), &bad)
	if bad.Error.Code != "UNKNOWN_FIELD" || bad.Error.Field != "colour" {
		t.Errorf("an unknown field answers %+v, want unknown_field naming colour", bad.Error)
	}
	c.decode(c.do(exchange{method: "POST", path: "/_herald/v1/endpoints", key: admin, want: http.StatusBadRequest, body: `{"url":"` + m.receiver.URL + `","profile":"carrier-pigeon"}`}), &bad)
	if bad.Error.Code != "INVALID_PROFILE" || bad.Error.Field != "profile" {
		t.Errorf("an unknown profile answers %+v, want invalid_profile naming profile", bad.Error)
	}
	c.do(exchange{method: "POST", path: "/_herald/v1/endpoints", key: admin, want: http.StatusBadRequest, body: `{"url":"` + m.receiver.URL + `","failure_policy":"never"}`, refused: true})
	c.do(exchange{method: "PATCH", path: epPath, key: admin, want: http.StatusBadRequest, body: `{"timeout_ms":-1}`, refused: true})
	c.do(exchange{method: "GET", path: epPath + "/deliveries?status=lost", key: admin, want: http.StatusBadRequest, refused: true})
	c.do(exchange{method: "POST", path: "/_herald/v1/events", key: admin, want: http.StatusBadRequest, body: `{"data":{}}`, refused: true})
	c.do(exchange{method: "POST", path: epPath + "/replay", key: admin, want: http.StatusBadRequest, body: `{"since":"yesterday"}`, refused: true})

	// Ownership verification: an endpoint that does not echo its challenge
	// is pending until its owner gives the code it received, or until it
	// echoes a new challenge.
	owner := newChallengeReceiver(t)
	var pending struct {
		ID, Status        string
		VerificationError string `json:"verification_error"`
	}
	c.decode(c.do(exchange{method: "POST", path: "/_herald/v1/endpoints", key: admin, want: http.StatusCreated,
		body: `{"url":"` + owner.URL() + `","verify":true,"name":"verified"}`}), &pending)
	if pending.Status != "pending" || pending.VerificationError == "" {
		t.Errorf("an endpoint that did not echo its challenge is %q (%q), want pending with the reason", pending.Status, pending.VerificationError)
	}
	verify := "/_herald/v1/endpoints/" + pending.ID + "/verify"
	c.do(exchange{method: "POST", path: verify, key: admin, want: http.StatusUnprocessableEntity, body: `{"verification_code":"hvc_000000000000000000000000"}`})
	c.do(exchange{method: "POST", path: verify, key: admin, want: http.StatusBadRequest, body: `{"code":"hvc_0"}`, refused: true})
	var verified struct {
		Status     string
		VerifiedAt *string `json:"verified_at"`
	}
	c.decode(c.do(exchange{method: "POST", path: verify, key: admin, want: http.StatusOK, body: `{"verification_code":"` + owner.lastCode(t) + `"}`}), &verified)
	if verified.Status != "active" || verified.VerifiedAt == nil {
		t.Errorf("after the right code the endpoint is %q, verified at %v; want active and a time", verified.Status, verified.VerifiedAt)
	}
	c.do(exchange{method: "POST", path: verify, key: admin, want: http.StatusUnprocessableEntity})
	owner.echo.Store(true)
	c.do(exchange{method: "POST", path: verify, key: admin, want: http.StatusOK})
	c.do(exchange{method: "POST", path: "/_herald/v1/endpoints/ep_000000000000000000000000/verify", key: admin, want: http.StatusNotFound})

	// Refusals of the HTTP layer, before any route.
	c.do(exchange{method: "POST", path: "/_herald/v1/events", key: admin, want: http.StatusUnsupportedMediaType,
		header: map[string]string{"Content-Type": "text/plain"}, body: `{"type":"order.created"}`, refused: true})
	c.do(exchange{method: "GET", path: "/_herald/v1/keys", key: admin, want: http.StatusForbidden, header: map[string]string{"Origin": "https://evil.example"}})
	c.do(exchange{method: "GET", path: "/_herald/healthz", want: http.StatusMisdirectedRequest, header: map[string]string{"Host": "evil.example"}})

	// Subscriptions, at a path of several segments.
	m.admin(t, "PUT", "/area/openapi", "", http.StatusCreated, nil)
	sub := `{"webhook":"` + m.receiver.URL + `","description":"openapi"}`
	c.do(exchange{method: "PUT", path: "/area/openapi?subscription=oa-1", key: admin, want: http.StatusCreated, body: sub})
	c.do(exchange{method: "PUT", path: "/area/openapi?subscription=oa-1", key: admin, want: http.StatusOK, body: sub})
	c.do(exchange{method: "PUT", path: "/area/other?subscription=oa-1", key: admin, want: http.StatusConflict, body: sub})
	c.do(exchange{method: "PUT", path: "/area/*?subscription=bad%20id", key: admin, want: http.StatusBadRequest, body: sub, refused: true})
	c.do(exchange{method: "GET", path: "/**?subscription=oa-1", key: admin, want: http.StatusOK})
	c.do(exchange{method: "GET", path: "/area/openapi?subscriptions", key: admin, want: http.StatusOK})

	// The consumer the subscription made for the stream that already
	// matched it.
	var consumers struct {
		Data []struct {
			ConsumerID string `json:"consumer_id"`
		} `json:"data"`
	}
	c.decode(c.do(exchange{method: "GET", path: "/_herald/v1/subscriptions/oa-1/consumers?limit=10", key: admin, want: http.StatusOK}), &consumers)
	const consumerID = "oa-1:%2Farea%2Fopenapi"
	if len(consumers.Data) != 1 || consumers.Data[0].ConsumerID != consumerID {
		t.Errorf("the consumers of oa-1 are %+v, want %s", consumers.Data, consumerID)
	}
	c.do(exchange{method: "GET", path: "/_herald/v1/subscriptions/oa-1/consumers?limit=0", key: admin, want: http.StatusBadRequest, refused: true})
	c.do(exchange{method: "GET", path: "/_herald/v1/subscriptions/none/consumers", key: admin, want: http.StatusNotFound})
	c.do(exchange{method: "GET", path: "/_herald/v1/consumers/" + consumerID, key: admin, want: http.StatusOK})
	c.do(exchange{method: "GET", path: "/_herald/v1/consumers/oa-1:%2Fnone", key: admin, want: http.StatusNotFound})
	// A credential limited to other stream paths neither sees the
	// subscription and its consumers nor creates one on these paths.
	elsewhere := m.key(t, []auth.Scope{auth.ScopeSubscriptionsRead, auth.ScopeSubscriptionsWrite}, "", "/elsewhere/**")
	c.do(exchange{method: "GET", path: "/_herald/v1/subscriptions/oa-1/consumers", key: elsewhere, want: http.StatusNotFound})
	c.do(exchange{method: "GET", path: "/_herald/v1/consumers/" + consumerID, key: elsewhere, want: http.StatusNotFound})
	c.do(exchange{method: "GET", path: "/**?subscription=oa-1", key: elsewhere, want: http.StatusNotFound})
	c.do(exchange{method: "PUT", path: "/area/openapi?subscription=oa-2", key: elsewhere, want: http.StatusForbidden, body: sub})
	c.do(exchange{method: "DELETE", path: "/area/openapi?subscription=oa-1", key: admin, want: http.StatusNoContent})
	c.do(exchange{method: "GET", path: "/**?subscription=oa-1", key: admin, want: http.StatusNotFound})
	c.do(exchange{method: "DELETE", path: "/area/openapi?subscription=oa-1", key: admin, want: http.StatusNotFound})

	// The reserved subscription API.
	exerciseReserved(c)

	// A callback with a token Herald never issued.
	c.do(exchange{method: "POST", path: "/callback/oa-1:%2Farea%2Fopenapi", key: "not-a-token", want: http.StatusUnauthorized, body: `{"epoch":1}`})

	// Operations.
	c.do(exchange{method: "GET", path: "/_herald/healthz", want: http.StatusOK})
	c.do(exchange{method: "GET", path: "/_herald/readyz", want: http.StatusOK})
	c.do(exchange{method: "GET", path: "/_herald/metrics", key: admin, want: http.StatusOK})
	c.do(exchange{method: "GET", path: api.Path, want: http.StatusOK})

	// The dashboard and what it reads.
	var me struct {
		Kind, Tenant string
		AuthEnabled  bool `json:"auth_enabled"`
	}
	c.decode(c.do(exchange{method: "GET", path: "/_herald/v1/whoami", key: other, want: http.StatusOK}), &me)
	if me.Kind != "key" || me.Tenant != otherTenant || !me.AuthEnabled {
		t.Errorf("whoami of a key of %s answers %+v", otherTenant, me)
	}
	c.do(exchange{method: "GET", path: "/_herald/v1/whoami", key: admin, want: http.StatusOK})
	c.do(exchange{method: "GET", path: "/_herald/v1/whoami", want: http.StatusUnauthorized, refused: true})

	// The streams list: a page, the next one, and its mistakes.
	var streams struct {
		Data []struct {
			Path string `json:"path"`
		} `json:"data"`
		NextCursor *string `json:"next_cursor"`
	}
	c.decode(c.do(exchange{method: "GET", path: "/_herald/v1/streams?prefix=/&limit=1", key: admin, want: http.StatusOK}), &streams)
	if len(streams.Data) != 1 || streams.NextCursor == nil {
		t.Fatalf("the first page of streams is %+v", streams)
	}
	c.do(exchange{method: "GET", path: "/_herald/v1/streams?limit=1000&cursor=" + url.QueryEscape(*streams.NextCursor), key: admin, want: http.StatusOK})
	c.fails(exchange{method: "GET", path: "/_herald/v1/streams?limit=0", key: admin, want: http.StatusBadRequest, refused: true}, "INVALID_PARAMETER", "")
	c.fails(exchange{method: "GET", path: "/_herald/v1/streams?colour=red", key: admin, want: http.StatusBadRequest}, "UNKNOWN_PARAMETER", "")
	c.do(exchange{method: "GET", path: "/_herald/v1/stats", key: admin, want: http.StatusOK})
	c.do(exchange{method: "GET", path: "/_herald/v1/stats", key: other, want: http.StatusForbidden})
	c.do(exchange{method: "GET", path: "/_herald/ui/", want: http.StatusOK})

	c.do(exchange{method: "DELETE", path: epPath, key: admin, want: http.StatusNoContent})
	c.do(exchange{method: "DELETE", path: epPath, key: admin, want: http.StatusNotFound})

	for k := range documentedRoutes(c.doc) {
		k.selector = ""
		if !c.exercised[k] {
			t.Errorf("no validated answer of %s: exercise it here", k)
		}
	}
}
