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
		if err := a.stop(10 * time.Second); err != nil {
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
}

func (m *matrix) fixtures(t *testing.T) *matrixFixtures {
	t.Helper()
	m.made++
	n := strconv.Itoa(m.made)
	f := &matrixFixtures{n: n, stream: "/area/s-" + n, sub: "sub-" + n, receiver: m.receiver.URL}
	m.admin(t, "PUT", f.stream, "", http.StatusCreated, nil)
	m.admin(t, "PUT", f.stream+"?subscription="+f.sub, `{"webhook":"`+m.receiver.URL+`"}`, http.StatusCreated, nil)
	f.consumerID = f.sub + ":" + strings.ReplaceAll(f.stream, "/", "%2F")
	var ep struct{ ID string }
	m.admin(t, "POST", "/_herald/v1/endpoints", `{"url":"`+m.receiver.URL+`","tenant":"`+matrixTenant+`","event_types":["matrix.`+n+`"]}`, http.StatusCreated, &ep)
	f.endpoint = ep.ID
	m.admin(t, "POST", "/_herald/v1/events", `{"type":"matrix.`+n+`","data":{},"tenant":"`+matrixTenant+`"}`, http.StatusAccepted, nil)
	for deadline := time.Now().Add(10 * time.Second); f.delivery == ""; {
		var list struct {
			Data []struct{ ID string } `json:"data"`
		}
		m.admin(t, "GET", "/_herald/v1/endpoints/"+f.endpoint+"/deliveries", "", http.StatusOK, &list)
		if len(list.Data) > 0 {
			f.delivery = list.Data[0].ID
		} else if time.Now().After(deadline) {
			t.Fatal("the published event made no delivery")
		} else {
			time.Sleep(10 * time.Millisecond)
		}
	}
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

// matrixRequest is one concrete request for a route.
type matrixRequest struct {
	method, path, body string
	// owned: the route names one resource of tenant-a by id, which a
	// key of another tenant must not find (404).
	owned bool
	// listsOwned: the answer lists resources; a key of another tenant
	// must not see tenant-a's (the string must not appear).
	listsOwned string
	// installation: the route changes what every tenant shares; a key of
	// any tenant is refused (403 tenant_forbidden) and the right key has
	// no tenant.
	installation bool
	// namesTenant: the body names tenant-a, which a key of another
	// tenant may not act for (403).
	namesTenant bool
}

// request makes the concrete request for a route, or reports false for
// a route it does not know.
func (f *matrixFixtures) request(rt httpapi.Route) (matrixRequest, bool) {
	r := matrixRequest{method: rt.Method}
	ep := "/_herald/v1/endpoints/" + f.endpoint
	switch rt.Pattern {
	case "/_herald/healthz", "/_herald/readyz", "/_herald/metrics", "/_herald/v1/whoami", "/_herald/v1/stats", "/_herald/v1/openapi.json":
		r.path = rt.Pattern
	case "/_herald/ui/":
		r.path = rt.Pattern + "app.js"
	case "/{stream}":
		r.path = f.stream
		switch rt.Method {
		case http.MethodPut:
			r.path = "/area/new-" + f.n
		case http.MethodPost:
			r.body = "data"
		}
	case "/{pattern}?subscription={id}":
		r.path = f.stream + "?subscription=" + f.sub
		if rt.Method == http.MethodPut {
			r.path = f.stream + "?subscription=new-" + f.sub
			r.body = `{"webhook":"` + f.receiver + `"}`
		}
	case "/{pattern}?subscriptions":
		r.path = f.stream + "?subscriptions"
	case "/_herald/v1/subscriptions/{id}/consumers":
		r.path = "/_herald/v1/subscriptions/" + f.sub + "/consumers"
	case "/_herald/v1/consumers/{consumer_id}":
		r.path = "/_herald/v1/consumers/" + f.consumerID
	case "/callback/{consumer_id}":
		r.path, r.body = "/callback/"+f.consumerID, `{"epoch":1}`
	case "/_herald/v1/streams":
		r.path = rt.Pattern + "?prefix=/area/"
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
	if strings.HasPrefix(req.path, "/area/") && !strings.Contains(req.path, "?") {
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
	if rule.Scope == "" && rule.StreamPath == nil {
		allowed("a route for any valid key", status, body) // whoami
	} else {
		expect("key without the scope", status, body, http.StatusForbidden, "FORBIDDEN")
	}
	if rule.StreamPath != nil {
		status, body = send(m.key(t, []auth.Scope{scope}, "", "/elsewhere/**"), nil)
		expect("key outside its paths", status, body, http.StatusForbidden, "FORBIDDEN")
	}
	if stream {
		// A stream is seen through its key in a browser too.
		status, body = send(m.key(t, []auth.Scope{scope}, matrixTenant, "/area/**"), map[string]string{"Origin": "https://app.example"})
		allowed("stream route from a page, with a key", status, body)
	}
	other := m.key(t, []auth.Scope{scope}, otherTenant)
	status, body = send(other, nil)
	switch {
	case req.installation:
		expect("key of a tenant changing what tenants share", status, body, http.StatusForbidden, "TENANT_FORBIDDEN")
	case req.owned:
		expect("key of another tenant", status, body, http.StatusNotFound, "")
	case req.namesTenant:
		expect("key of another tenant", status, body, http.StatusForbidden, "FORBIDDEN")
	case req.listsOwned != "":
		allowed("list with a key of another tenant", status, body)
		if strings.Contains(body, req.listsOwned) {
			t.Errorf("a key of another tenant lists tenant-a's %s: %s", req.listsOwned, body)
		}
	default:
		allowed("key of another tenant", status, body)
	}
	right := matrixTenant
	if req.installation {
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
	default:
		return nil // a subscription route: a stream path, any spelling
	}
	enc := func(i int) string {
		return path[:i] + "%" + strings.ToUpper(strconv.FormatInt(int64(path[i]), 16)) + path[i+1:] + query
	}
	return []string{enc(len(prefix)), enc(len(path) - 1)}
}
