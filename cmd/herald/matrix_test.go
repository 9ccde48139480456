package main

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/heraldstreams/herald/auth"
	"github.com/heraldstreams/herald/httpapi"
)

// TestAccessMatrix walks every route the server registers (taken from the
// router, so a route added without a fixture here fails the test) with
// every kind of credential: none, a wrong key, a key without the route's
// scope, a key outside the route's stream paths, a key of another tenant
// and the right key; and with the requests a web page could send: a
// foreign Origin, a text/plain body, a foreign Host.
func TestAccessMatrix(t *testing.T) {
	t.Parallel()
	m := newMatrix(t)
	routes := m.app.api.Routes()
	if len(routes) < 20 {
		t.Fatalf("the router lists %d routes", len(routes))
	}
	for _, rt := range routes {
		t.Run(rt.Method+" "+rt.Pattern, func(t *testing.T) {
			f := m.fixtures(t)
			req, ok := f.request(rt)
			if !ok {
				t.Fatalf("no request for route %s %s: give it one in matrixFixtures.request", rt.Method, rt.Pattern)
			}
			m.check(t, rt, f, req)
		})
	}
}

// matrix is a running Herald with access control on.
type matrix struct {
	t        *testing.T
	app      *app
	base     string
	receiver *httptest.Server
	made     int // fixture sets made
}

const matrixTenant, otherTenant = "tenant-a", "tenant-b"

// matrixArea is where the matrix's streams live: in tenant-a's stream
// namespace (--tenant-stream-prefix), so tenant-a's keys reach them.
const matrixArea = "/tenants/" + matrixTenant + "/area/"

func newMatrix(t *testing.T) *matrix { return newMatrixLogging(t, io.Discard) }

// newMatrixLogging is newMatrix with the server's log (text) written to
// logs.
func newMatrixLogging(t *testing.T, logs io.Writer) *matrix {
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, err := io.Copy(io.Discard, r.Body); err != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(receiver.Close)
	a := startHeraldLogging(t, logs, "--webhook-allow-cidrs", "127.0.0.0/8")
	return &matrix{t: t, app: a, base: "http://" + a.ln.Addr().String(), receiver: receiver}
}

// startHerald runs a full Herald on 127.0.0.1 with access control on
// (the admin key is testAdminKey) and the given serve flags, until the
// test ends.
func startHerald(t *testing.T, flags ...string) *app {
	t.Helper()
	return startHeraldLogging(t, io.Discard, flags...)
}

// startHeraldLogging is startHerald with the server's log (text) written
// to logs.
func startHeraldLogging(t *testing.T, logs io.Writer, flags ...string) *app {
	t.Helper()
	args := append([]string{"--addr", "127.0.0.1:0", "--data-dir", t.TempDir()}, flags...)
	cfg, err := parseServeFlags(args, io.Discard, io.Discard, envOf(map[string]string{adminKeyEnv: testAdminKey}))
	if err != nil {
		t.Fatal(err)
	}
	return startApp(t, cfg, slog.New(slog.NewTextHandler(logs, nil)), nil)
}

// startApp serves an app of cfg until the test ends, then shuts it down
// as serve does.
func startApp(t *testing.T, cfg *serveConfig, log *slog.Logger, tp trace.TracerProvider) *app {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	a, err := newApp(ctx, cfg, log, tp)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	srv := &http.Server{Handler: a.api, ReadHeaderTimeout: 10 * time.Second}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(a.ln) }()
	t.Cleanup(func() {
		a.api.Shutdown()
		if err := srv.Shutdown(context.Background()); err != nil {
			t.Error(err)
		}
		if err := <-served; !errors.Is(err, http.ErrServerClosed) {
			t.Error(err)
		}
		cancel()
		if err := a.stop(context.Background()); err != nil {
			t.Error(err)
		}
	})
	return a
}

// call sends one request and returns the status and body.
func (m *matrix) call(t *testing.T, method, path string, hdr map[string]string, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, m.base+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if body == "" {
		req.Body, req.ContentLength = http.NoBody, 0
	}
	for k, v := range hdr {
		if k == "Host" {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(out)
}

// admin sends a JSON request with the admin key and decodes the answer
// into out, failing the test unless the status is want.
func (m *matrix) admin(t *testing.T, method, path, body string, want int, out any) {
	t.Helper()
	hdr := map[string]string{"Authorization": "Bearer " + testAdminKey}
	if body != "" {
		hdr["Content-Type"] = "application/json"
	}
	status, resp := m.call(t, method, path, hdr, body)
	if status != want {
		t.Fatalf("%s %s: %d %s, want %d", method, path, status, resp, want)
	}
	if out != nil {
		if err := json.Unmarshal([]byte(resp), out); err != nil {
			t.Fatalf("%s %s: %v in %s", method, path, err, resp)
		}
	}
}

// key makes an API key and returns its secret.
func (m *matrix) key(t *testing.T, scopes []auth.Scope, tenant string, paths ...string) string {
	t.Helper()
	body, err := json.Marshal(map[string]any{"scopes": scopes, "tenant": tenant, "paths": paths})
	if err != nil {
		t.Fatal(err)
	}
	var k struct{ Key string }
	m.admin(t, "POST", "/_herald/v1/keys", string(body), http.StatusCreated, &k)
	return k.Key
}

// matrixFixtures are fresh resources of tenant-a for one route's cases,
// so that a case that deletes one does not disturb the next route.
type matrixFixtures struct {
	n          string // makes names unique
	stream     string
	endpoint   string
	delivery   string
	replay     string
	keyID      string
	sub        string
	consumerID string
	receiver   string
	eventType  string
	// event is the id of tenant-a's event.
	event string
	// ds is tenant-a's subscription of the reserved API, pull-wake on
	// the matrix's area with stream as its wake stream.
	ds string
}

func (m *matrix) fixtures(t *testing.T) *matrixFixtures {
	t.Helper()
	m.made++
	n := strconv.Itoa(m.made)
	f := &matrixFixtures{n: n, stream: matrixArea + "s-" + n, sub: "sub-" + n, receiver: m.receiver.URL}
	m.admin(t, "PUT", f.stream, "", http.StatusCreated, nil)
	// The subscription is tenant-a's: its key creates it.
	subKey := m.key(t, []auth.Scope{auth.ScopeSubscriptionsWrite}, matrixTenant)
	status, body := m.call(t, "PUT", f.stream+"?subscription="+f.sub, map[string]string{"Authorization": "Bearer " + subKey, "Content-Type": "application/json"},
		`{"webhook":"`+m.receiver.URL+`"}`)
	if status != http.StatusCreated {
		t.Fatalf("tenant-a's subscription: %d %s", status, body)
	}
	f.consumerID = f.sub + ":" + strings.ReplaceAll(f.stream, "/", "%2F")
	f.ds = "ds-" + n
	status, body = m.call(t, "PUT", "/__ds/subscriptions/"+f.ds, map[string]string{"Authorization": "Bearer " + subKey, "Content-Type": "application/json"},
		dsMatrixBody(f.stream))
	if status != http.StatusCreated {
		t.Fatalf("tenant-a's reserved-API subscription: %d %s", status, body)
	}
	var ep struct{ ID string }
	m.admin(t, "POST", "/_herald/v1/endpoints", `{"url":"`+m.receiver.URL+`","tenant":"`+matrixTenant+`","event_types":["matrix.`+n+`"]}`, http.StatusCreated, &ep)
	f.endpoint = ep.ID
	f.event = "matrix-event-" + n
	m.admin(t, "POST", "/_herald/v1/events", `{"id":"`+f.event+`","type":"matrix.`+n+`","data":{},"tenant":"`+matrixTenant+`"}`, http.StatusAccepted, nil)
	f.delivery = m.firstDelivery(t, f.endpoint)
	var job struct{ ID string }
	m.admin(t, "POST", "/_herald/v1/endpoints/"+f.endpoint+"/replay", `{"status":"exhausted"}`, http.StatusAccepted, &job)
	f.replay = job.ID
	var k struct{ ID string }
	m.admin(t, "POST", "/_herald/v1/keys", `{"scopes":["streams:read"],"tenant":"`+matrixTenant+`"}`, http.StatusCreated, &k)
	f.keyID = k.ID
	f.eventType = "matrix.type-" + n
	m.admin(t, "POST", "/_herald/v1/event-types", `{"name":"`+f.eventType+`"}`, http.StatusCreated, nil)
	return f
}

// firstDelivery waits for the endpoint's first delivery and returns its
// id.
func (m *matrix) firstDelivery(t *testing.T, endpoint string) string {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		var list struct {
			Data []struct{ ID string } `json:"data"`
		}
		m.admin(t, "GET", "/_herald/v1/endpoints/"+endpoint+"/deliveries", "", http.StatusOK, &list)
		if len(list.Data) > 0 {
			return list.Data[0].ID
		}
		if time.Now().After(deadline) {
			t.Fatalf("the event published for endpoint %s made no delivery", endpoint)
		}
	}
}

// matrixRequest is one concrete request for a route.
type matrixRequest struct {
	method, path, body string
	// owned: the route names one resource of tenant-a by id, which a
	// key of another tenant must not find (404).
	owned bool
	// listsOwned: the answer lists resources; a key of another tenant
	// must not see tenant-a's (the string must not appear).
	listsOwned string
	// installation: the route changes what every tenant shares, or reads
	// figures of the whole installation; a key of any tenant is refused
	// (403 tenant_forbidden) and the right key has no tenant.
	installation bool
	// namesTenant: the body names tenant-a, which a key of another
	// tenant may not act for (403).
	namesTenant bool
	// inPaths: the route names a subscription on the fixture's stream
	// path, or its consumers; a key of tenant-a limited to other paths
	// creates nothing there (403) and finds nothing there (404, or
	// absent from a list).
	inPaths bool
	// streamsListed: the answer lists tenant-a's streams, this one among
	// them; a key of another tenant must see none.
	streamsListed string
	// bodyPaths: the body names tenant-a's streams (a reserved-API
	// subscription's pattern, streams and wake stream): a key of another
	// tenant, or one outside its paths, is refused (403).
	bodyPaths bool
}

// dsMatrixBody is a reserved-API subscription of the matrix's area,
// pull-wake to the stream wake (root-relative paths: the matrix runs
// with the default stream root, /).
func dsMatrixBody(wake string) string {
	return `{"type":"pull-wake","pattern":"` + strings.TrimPrefix(matrixArea, "/") + `*","wake_stream":"` + strings.TrimPrefix(wake, "/") + `"}`
}

// request makes the concrete request for a route, or reports false for
// a route it does not know.
func (f *matrixFixtures) request(rt httpapi.Route) (matrixRequest, bool) {
	r := matrixRequest{method: rt.Method}
	ep := "/_herald/v1/endpoints/" + f.endpoint
	switch rt.Pattern {
	case "/_herald/healthz", "/_herald/readyz", "/_herald/v1/whoami", "/_herald/v1/openapi.json":
		r.path = rt.Pattern
	case "/_herald/metrics", "/_herald/v1/stats", "/_herald/v1/signing-keys/rotate":
		// Installation-wide figures: no tenant's credential reads them.
		r.path, r.installation = rt.Pattern, true
	case "/_herald/ui/":
		r.path = rt.Pattern + "app.js"
	case "/{stream}":
		r.path = f.stream
		switch rt.Method {
		case http.MethodPut:
			r.path = matrixArea + "new-" + f.n
		case http.MethodPost:
			r.body = "data"
		}
	case "/{pattern}?subscription={id}":
		r.path, r.owned, r.inPaths = f.stream+"?subscription="+f.sub, true, true
		if rt.Method == http.MethodPut {
			r.path, r.owned = f.stream+"?subscription=new-"+f.sub, false
			r.body = `{"webhook":"` + f.receiver + `"}`
		}
	case "/{pattern}?subscriptions":
		r.path, r.listsOwned, r.inPaths = f.stream+"?subscriptions", f.sub, true
	case "/_herald/v1/subscriptions/{id}/consumers":
		r.path, r.owned, r.inPaths = "/_herald/v1/subscriptions/"+f.sub+"/consumers", true, true
	case "/_herald/v1/consumers/{consumer_id}":
		r.path, r.owned, r.inPaths = "/_herald/v1/consumers/"+f.consumerID, true, true
	case "/callback/{consumer_id}":
		r.path, r.body = "/callback/"+f.consumerID, `{"epoch":1}`
	case "/__ds/subscriptions/{id}":
		r.path, r.owned, r.inPaths = "/__ds/subscriptions/"+f.ds, true, true
		if rt.Method == http.MethodPut {
			r.path, r.owned, r.bodyPaths, r.body = "/__ds/subscriptions/new-"+f.ds, false, true, dsMatrixBody(f.stream)
		}
	case "/__ds/subscriptions/{id}/streams":
		r.path, r.owned, r.inPaths = "/__ds/subscriptions/"+f.ds+"/streams", true, true
		r.body = `{"streams":["` + strings.TrimPrefix(matrixArea, "/") + `manual"]}`
	case "/__ds/subscriptions/{id}/streams/{path}":
		r.path, r.owned, r.inPaths = "/__ds/subscriptions/"+f.ds+"/streams/"+strings.ReplaceAll(strings.TrimPrefix(f.stream, "/"), "/", "%2F"), true, true
	case "/__ds/subscriptions/{id}/claim":
		r.path, r.owned, r.inPaths, r.body = "/__ds/subscriptions/"+f.ds+"/claim", true, true, `{"worker":"w"}`
	case "/__ds/subscriptions/{id}/callback", "/__ds/subscriptions/{id}/ack", "/__ds/subscriptions/{id}/release":
		r.path, r.body = strings.Replace(rt.Pattern, "{id}", f.ds, 1), `{"wake_id":"w_1","generation":1}`
	case "/__ds/jwks.json":
		r.path = rt.Pattern
	case "/_herald/v1/streams":
		r.path, r.streamsListed = rt.Pattern+"?prefix="+matrixArea, f.stream
	case "/_herald/v1/keys":
		r.path = rt.Pattern
		if rt.Method == http.MethodPost {
			r.body = `{"scopes":["streams:read"]}`
		} else {
			r.listsOwned = f.keyID
		}
	case "/_herald/v1/portal-tokens":
		r.path, r.body, r.namesTenant = rt.Pattern, `{"tenant":"`+matrixTenant+`","ttl":"5m"}`, true
	case "/_herald/v1/keys/{id}":
		r.path, r.owned = "/_herald/v1/keys/"+f.keyID, true
	case "/_herald/v1/endpoints":
		r.path = rt.Pattern
		if rt.Method == http.MethodPost {
			r.body = `{"url":"` + f.receiver + `"}`
		} else {
			r.listsOwned = f.endpoint
		}
	case "/_herald/v1/endpoints/{id}":
		r.path, r.owned = ep, true
		if rt.Method == http.MethodPatch {
			r.body = `{"description":"changed"}`
		}
	case "/_herald/v1/endpoints/{id}/rotate-secret", "/_herald/v1/endpoints/{id}/test", "/_herald/v1/endpoints/{id}/verify":
		r.path, r.owned = ep+strings.TrimPrefix(rt.Pattern, "/_herald/v1/endpoints/{id}"), true
	case "/_herald/v1/endpoints/{id}/replay":
		r.path, r.owned, r.body = ep+"/replay", true, `{"since":"2000-01-01T00:00:00Z"}`
	case "/_herald/v1/endpoints/{id}/deliveries":
		r.path, r.owned = ep+"/deliveries", true
	case "/_herald/v1/replays/{id}":
		r.path, r.owned = "/_herald/v1/replays/"+f.replay, true
	case "/_herald/v1/deliveries/{id}":
		r.path, r.owned = "/_herald/v1/deliveries/"+f.delivery, true
	case "/_herald/v1/deliveries/{id}/retry":
		r.path, r.owned = "/_herald/v1/deliveries/"+f.delivery+"/retry", true
	case "/_herald/v1/events":
		r.path, r.body = rt.Pattern, `{"type":"matrix.other","data":{}}`
		if rt.Method == http.MethodGet {
			r.body, r.listsOwned = "", f.event
		}
	case "/_herald/v1/events/{id}":
		r.path, r.owned = "/_herald/v1/events/"+f.event+"?tenant="+matrixTenant, true
	case "/_herald/v1/event-types":
		r.path = rt.Pattern
		if rt.Method == http.MethodPost {
			r.body, r.installation = `{"name":"matrix.new-`+f.n+`"}`, true
		}
	case "/_herald/v1/event-types/{name}":
		r.path = "/_herald/v1/event-types/" + f.eventType
		switch rt.Method {
		case http.MethodPatch:
			r.body, r.installation = `{"deprecated":true}`, true
		case http.MethodDelete:
			r.installation = true
		}
	default:
		return r, false
	}
	return r, true
}

// check runs every case of one route.
func (m *matrix) check(t *testing.T, rt httpapi.Route, f *matrixFixtures, req matrixRequest) {
	jsonType := "application/json"
	if strings.HasPrefix(req.path, matrixArea) && !strings.Contains(req.path, "?") {
		jsonType = "application/octet-stream" // a stream: any type it was created with
	}
	send := func(key string, extra map[string]string) (int, string) {
		t.Helper()
		hdr := map[string]string{}
		if req.body != "" {
			hdr["Content-Type"] = jsonType
		}
		if key != "" {
			hdr["Authorization"] = "Bearer " + key
		}
		for k, v := range extra {
			hdr[k] = v
		}
		return m.call(t, req.method, req.path, hdr, req.body)
	}
	expect := func(name string, status int, body string, want int, code string) {
		t.Helper()
		// A HEAD answer has no body to carry the code.
		if status != want || (code != "" && req.method != http.MethodHead && !strings.Contains(body, `"code":"`+code+`"`)) {
			t.Errorf("%s: %d %s, want %d %s", name, status, body, want, code)
		}
	}
	allowed := func(name string, status int, body string) {
		t.Helper()
		if status == http.StatusUnauthorized || status == http.StatusForbidden || status >= 500 {
			t.Errorf("%s: %d %s, want the route served", name, status, body)
		}
		if req.owned && status == http.StatusNotFound {
			t.Errorf("%s: %d %s, want its own resource found", name, status, body)
		}
	}
	// notListed: a list answered to who shows none of tenant-a's
	// resource.
	notListed := func(who string, status int, body string) {
		t.Helper()
		allowed("list with "+who, status, body)
		if strings.Contains(body, req.listsOwned) {
			t.Errorf("%s lists tenant-a's %s: %s", who, req.listsOwned, body)
		}
	}
	rule := rt.Rule
	scope := rule.Scope
	if scope == "" {
		scope = auth.ScopeStreamsRead
	}
	var others []auth.Scope
	for _, s := range auth.AllScopes {
		if s != scope && s != auth.ScopeAdmin {
			others = append(others, s)
		}
	}

	// Browser-shaped requests, with the right credential: a foreign
	// Host is refused everywhere (DNS rebinding).
	status, body := send(testAdminKey, map[string]string{"Host": "evil.example"})
	expect("foreign Host", status, body, http.StatusMisdirectedRequest, "HOST_NOT_ALLOWED")
	stream := strings.HasPrefix(rt.Pattern, "/{stream}")
	if !stream {
		status, body = send(testAdminKey, map[string]string{"Origin": "https://evil.example"})
		expect("foreign Origin", status, body, http.StatusForbidden, "ORIGIN_NOT_ALLOWED")
		if req.body != "" && !strings.HasPrefix(rt.Pattern, httpapi.CallbackPrefix) {
			status, body = send(testAdminKey, map[string]string{"Content-Type": "text/plain"})
			expect("text/plain body", status, body, http.StatusUnsupportedMediaType, "UNSUPPORTED_MEDIA_TYPE")
		}
		// One spelling per reserved route: a percent-encoded character
		// anywhere in the path is refused, whatever the credential.
		for _, alias := range encodedSpellings(req.path) {
			status, body = m.call(t, req.method, alias, map[string]string{"Authorization": "Bearer " + testAdminKey, "Content-Type": jsonType}, req.body)
			expect("encoded spelling "+alias, status, body, http.StatusBadRequest, "NON_CANONICAL_PATH")
		}
	}

	switch {
	case rule.Public:
		status, body = send("", nil)
		allowed("no key on a public route", status, body)
		return
	case rule.CallbackToken:
		// Callbacks take their consumer's token, never an API key.
		status, body = send("", nil)
		expect("callback without a token", status, body, http.StatusUnauthorized, "TOKEN_INVALID")
		status, body = send(testAdminKey, nil)
		expect("callback with an API key", status, body, http.StatusUnauthorized, "TOKEN_INVALID")
		return
	}

	status, body = send("", nil)
	expect("no key", status, body, http.StatusUnauthorized, "UNAUTHENTICATED")
	status, body = send("hk_wrong_0123456789abcdef0123456789abcdef", nil)
	expect("wrong key", status, body, http.StatusUnauthorized, "")
	status, body = send(m.key(t, others, matrixTenant), nil)
	pathRule := rule.StreamPath != nil || rule.StreamPattern != nil
	if rule.Scope == "" && !pathRule {
		allowed("a route for any valid key", status, body) // whoami
	} else {
		expect("key without the scope", status, body, http.StatusForbidden, "FORBIDDEN")
	}
	if pathRule || req.bodyPaths {
		status, body = send(m.key(t, []auth.Scope{scope}, "", "/elsewhere/**"), nil)
		expect("key outside its paths", status, body, http.StatusForbidden, "FORBIDDEN")
	}
	if req.inPaths {
		status, body = send(m.key(t, []auth.Scope{scope}, matrixTenant, "/tenants/"+matrixTenant+"/elsewhere/**"), nil)
		switch {
		case req.method == http.MethodPut:
			expect("key outside its paths", status, body, http.StatusForbidden, "FORBIDDEN")
		case req.listsOwned != "":
			notListed("a key outside its paths", status, body)
		default:
			expect("key outside its paths", status, body, http.StatusNotFound, "")
		}
	}
	if stream {
		// A stream is seen through its key in a browser too.
		status, body = send(m.key(t, []auth.Scope{scope}, matrixTenant, matrixArea+"**"), map[string]string{"Origin": "https://app.example"})
		allowed("stream route from a page, with a key", status, body)
	}
	other := m.key(t, []auth.Scope{scope}, otherTenant)
	status, body = send(other, nil)
	switch {
	case pathRule:
		// tenant-a's streams lie outside another tenant's namespace:
		// they answer as if they did not exist, except a create, which
		// is refused whether or not a stream is there.
		if req.method == http.MethodPut {
			expect("key of another tenant", status, body, http.StatusForbidden, "FORBIDDEN")
		} else {
			expect("key of another tenant", status, body, http.StatusNotFound, "")
		}
	case req.bodyPaths:
		expect("key of another tenant naming tenant-a's streams", status, body, http.StatusForbidden, "FORBIDDEN")
	case req.streamsListed != "":
		allowed("stream list with a key of another tenant", status, body)
		if strings.Contains(body, req.streamsListed) || strings.Contains(body, matrixArea) {
			t.Errorf("a key of another tenant lists tenant-a's streams: %s", body)
		}
	case req.installation:
		expect("key of a tenant changing what tenants share", status, body, http.StatusForbidden, "TENANT_FORBIDDEN")
	case req.owned:
		expect("key of another tenant", status, body, http.StatusNotFound, "")
	case req.namesTenant:
		expect("key of another tenant", status, body, http.StatusForbidden, "TENANT_FORBIDDEN")
	case req.listsOwned != "":
		notListed("a key of another tenant", status, body)
	default:
		allowed("key of another tenant", status, body)
	}
	right := matrixTenant
	if req.installation || strings.Contains(rt.Pattern, "/consumers") {
		// Consumers name streams any subscription pattern may reach, so
		// only a credential reaching every stream (a platform one without
		// paths) reads them: the check fails closed for a tenant's.
		right = ""
	}
	status, body = send(m.key(t, []auth.Scope{scope}, right), nil)
	allowed("the right key", status, body)
}

// encodedSpellings returns spellings of a reserved route's path that
// decode to it: its first character after the reserved prefix, and its
// last one, percent-encoded. Other paths have none.
func encodedSpellings(target string) []string {
	path, query, _ := strings.Cut(target, "?")
	if query != "" {
		query = "?" + query
	}
	var prefix string
	switch {
	case strings.HasPrefix(path, httpapi.HeraldPrefix):
		prefix = httpapi.HeraldPrefix
	case strings.HasPrefix(path, httpapi.CallbackPrefix):
		prefix = httpapi.CallbackPrefix
	case strings.HasPrefix(path, "/__ds/"):
		prefix = "/__ds/"
	default:
		return nil // a subscription route: a stream path, any spelling
	}
	enc := func(i int) string {
		return path[:i] + "%" + strings.ToUpper(strconv.FormatInt(int64(path[i]), 16)) + path[i+1:] + query
	}
	return []string{enc(len(prefix)), enc(len(path) - 1)}
}
