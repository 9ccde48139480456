package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"

	"github.com/heraldstreams/herald/auth"
	"github.com/heraldstreams/herald/delivery"
)

// specCheck sends requests to a running server and validates each request
// and its answer against the document.
type specCheck struct {
	t      *testing.T
	m      *matrix
	doc    *openapi3.T
	router routers.Router
	opts   *openapi3filter.Options
	// exercised are the documented routes a validated answer came from.
	exercised map[routeKey]bool
}

func init() {
	// The dashboard's page is documented as text/html, a string.
	openapi3filter.RegisterBodyDecoder("text/html", openapi3filter.PlainBodyDecoder)
}

// newSpecCheck returns a check of the embedded document against m.
func newSpecCheck(t *testing.T, m *matrix) *specCheck {
	t.Helper()
	doc := openAPIModel(t)
	router, err := gorillamux.NewRouter(doc)
	if err != nil {
		t.Fatal(err)
	}
	opts := &openapi3filter.Options{
		// An answer's status must be one the operation documents.
		IncludeResponseStatus: true,
		// A body sent to an operation that takes none is a mistake.
		RejectWhenRequestBodyNotSpecified: true,
		MultiError:                        true,
		AuthenticationFunc:                bearerPresent,
		SchemaValidationOptions:           []openapi3.SchemaValidationOption{openapi3.EnableFormatValidation()},
	}
	return &specCheck{t: t, m: m, doc: doc, router: router, opts: opts, exercised: map[routeKey]bool{}}
}

// bearerPresent holds a request to its operation's security: both of the
// document's schemes are bearer tokens, so a request meets one when it
// sends a token. Whether the token is good is the server's to say.
func bearerPresent(_ context.Context, in *openapi3filter.AuthenticationInput) error {
	s := in.SecurityScheme
	if s.Type != "http" || !strings.EqualFold(s.Scheme, "bearer") {
		return in.NewError(errors.New("the document names a scheme that is not a bearer token"))
	}
	token, ok := strings.CutPrefix(in.RequestValidationInput.Request.Header.Get("Authorization"), "Bearer ")
	if !ok || token == "" {
		return in.NewError(errors.New("no bearer token"))
	}
	return nil
}

// exchange is one request and the status it must get.
type exchange struct {
	method, path, body string
	// key is the credential, sent as a bearer token; none when "".
	key string
	// header holds headers to send besides those; "Host" sets the Host.
	header map[string]string
	// want is the status the server must answer.
	want int
	// refused: the document itself refuses the request (a missing
	// credential, a value its schema forbids). The validator must say so,
	// and only the answer is validated.
	refused bool
}

// subscriptionTemplate is the document's path of the subscription routes.
const subscriptionTemplate = "/{pattern}"

// do sends x, checks its status and validates the request and the
// answer; it returns the answer's body.
func (c *specCheck) do(x exchange) []byte {
	t := c.t
	t.Helper()
	newRequest := func() *http.Request {
		req, err := http.NewRequest(x.method, c.m.base+x.path, strings.NewReader(x.body))
		if err != nil {
			t.Fatal(err)
		}
		if x.body == "" {
			req.Body, req.ContentLength = http.NoBody, 0
		} else {
			req.Header.Set("Content-Type", "application/json")
		}
		if x.key != "" {
			req.Header.Set("Authorization", "Bearer "+x.key)
		}
		for k, v := range x.header {
			if k == "Host" {
				req.Host = v
			} else {
				req.Header.Set(k, v)
			}
		}
		return req
	}
	resp, err := http.DefaultClient.Do(newRequest())
	if err != nil {
		t.Fatalf("%s %s: %v", x.method, x.path, err)
	}
	body, err := io.ReadAll(resp.Body)
	if cerr := resp.Body.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != x.want {
		t.Fatalf("%s %s: %d %s, want %d", x.method, x.path, resp.StatusCode, body, x.want)
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	req := newRequest()
	resp.Request = req

	route, params := c.route(req)
	in := &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route, Options: c.opts}
	reqErr := openapi3filter.ValidateRequest(req.Context(), in)
	switch {
	case x.refused && reqErr == nil:
		t.Errorf("%s %s: the document accepts this request, which the test sends as one it refuses", x.method, x.path)
	case !x.refused && reqErr != nil:
		t.Errorf("%s %s: the request does not follow the document: %v", x.method, x.path, reqErr)
	}
	// The answer is validated against the request as sent, not as the
	// request's validation read it (its body consumed).
	req = newRequest()
	in = &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route, Options: c.opts}
	out := &openapi3filter.ResponseValidationInput{RequestValidationInput: in, Status: resp.StatusCode,
		Header: resp.Header, Body: io.NopCloser(bytes.NewReader(body)), Options: c.opts}
	if err := openapi3filter.ValidateResponse(req.Context(), out); err != nil {
		t.Errorf("%s %s: the %d answer does not follow the document: %v\n%s", x.method, x.path, resp.StatusCode, err, body)
	}
	c.exercised[routeKey{x.method, pathParam.ReplaceAllString(route.Path, "{}"), ""}] = true
	return body
}

// route finds the operation of a request and its path parameters. The
// subscription routes live at any path of one or more segments, which no
// OpenAPI path template matches: they are described at /{pattern}, whose
// one parameter is the whole path, and named here rather than found by
// matching the request's path.
func (c *specCheck) route(req *http.Request) (*routers.Route, map[string]string) {
	c.t.Helper()
	q := req.URL.Query()
	if q.Has("subscription") || q.Has("subscriptions") {
		item := c.doc.Paths.Value(subscriptionTemplate)
		if item == nil || item.GetOperation(req.Method) == nil {
			c.t.Fatalf("%s %s: the document has no %s %s", req.Method, req.URL, req.Method, subscriptionTemplate)
		}
		return &routers.Route{Spec: c.doc, Path: subscriptionTemplate, PathItem: item, Method: req.Method,
			Operation: item.GetOperation(req.Method)}, map[string]string{"pattern": strings.TrimPrefix(req.URL.Path, "/")}
	}
	route, params, err := c.router.FindRoute(req)
	if err != nil {
		c.t.Fatalf("%s %s: the document has no path for it: %v", req.Method, req.URL, err)
	}
	return route, params
}

// challengeReceiver is an endpoint's URL that answers verification
// challenges: it keeps the last code it received, and echoes it only
// when echo is set. Deliveries get a 204.
type challengeReceiver struct {
	srv  *httptest.Server
	echo atomic.Bool
	mu   sync.Mutex
	code string
}

func newChallengeReceiver(t *testing.T) *challengeReceiver {
	cr := &challengeReceiver{}
	cr.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, err := io.Copy(io.Discard, r.Body); err != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		code := r.Header.Get(delivery.HeaderVerification)
		if code == "" {
			w.WriteHeader(http.StatusNoContent)
			return
		}
		cr.mu.Lock()
		cr.code = code
		cr.mu.Unlock()
		if !cr.echo.Load() {
			w.WriteHeader(http.StatusNoContent)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		if err := json.NewEncoder(w).Encode(map[string]string{"challenge": code}); err != nil {
			t.Errorf("answering the challenge: %v", err)
		}
	}))
	t.Cleanup(cr.srv.Close)
	return cr
}

// URL is the receiver's URL.
func (cr *challengeReceiver) URL() string { return cr.srv.URL }

// lastCode is the code of the last challenge received.
func (cr *challengeReceiver) lastCode(t *testing.T) string {
	t.Helper()
	cr.mu.Lock()
	defer cr.mu.Unlock()
	if cr.code == "" {
		t.Fatal("the endpoint received no challenge")
	}
	return cr.code
}

// decode decodes a JSON answer.
func (c *specCheck) decode(body []byte, out any) {
	c.t.Helper()
	if err := json.Unmarshal(body, out); err != nil {
		c.t.Fatalf("%v in %s", err, body)
	}
}

// fails sends x, which must be refused, and checks the error's code and
// field ("" for none).
func (c *specCheck) fails(x exchange, code, field string) {
	c.t.Helper()
	var bad struct {
		Error struct{ Code, Field string } `json:"error"`
	}
	c.decode(c.do(x), &bad)
	if bad.Error.Code != code || bad.Error.Field != field {
		c.t.Errorf("%s %s answers %+v, want code %q and field %q", x.method, x.path, bad.Error, code, field)
	}
}

// on returns a check of the same document against another server; the
// routes it exercises count for both.
func (c *specCheck) on(a *app) *specCheck {
	other := *c
	other.m = &matrix{t: c.t, app: a, base: "http://" + a.ln.Addr().String(), receiver: c.m.receiver}
	return &other
}

// exerciseReplays starts replay jobs of both kinds on the endpoint at
// epPath (of matrixTenant), reads one back, and makes the usual mistakes.
func exerciseReplays(c *specCheck, epPath string) {
	t, admin := c.t, testAdminKey
	var job struct{ ID, State string }
	c.decode(c.do(exchange{method: "POST", path: epPath + "/replay", key: admin, want: http.StatusAccepted, body: `{"since":"2000-01-01T00:00:00Z","until":"2999-01-01T00:00:00Z"}`}), &job)
	if job.State != "done" && job.State != "running" {
		t.Errorf("a replay job is %q, want done or running", job.State)
	}
	c.do(exchange{method: "POST", path: epPath + "/replay", key: admin, want: http.StatusAccepted, body: `{"offset":"-1","stream":"/herald/events"}`})
	c.do(exchange{method: "POST", path: epPath + "/replay", key: admin, want: http.StatusAccepted, body: `{"status":"exhausted","since":"2000-01-01T00:00:00Z"}`})
	replay := "/_herald/v1/replays/" + job.ID
	c.do(exchange{method: "GET", path: replay, key: admin, want: http.StatusOK})
	reader := c.m.key(t, []auth.Scope{auth.ScopeDeliveriesRead}, otherTenant)
	c.fails(exchange{method: "GET", path: replay, key: reader, want: http.StatusNotFound}, "REPLAY_NOT_FOUND", "")
	c.fails(exchange{method: "GET", path: "/_herald/v1/replays/rpl_000000000000000000000000", key: admin, want: http.StatusNotFound}, "REPLAY_NOT_FOUND", "")
	c.fails(exchange{method: "GET", path: replay + "?verbose=1", key: admin, want: http.StatusBadRequest}, "UNKNOWN_PARAMETER", "verbose")
	c.fails(exchange{method: "POST", path: epPath + "/replay", key: admin, want: http.StatusBadRequest, body: `{"offset":"-1","status":"failed"}`, refused: true}, "INVALID_PARAMETER", "offset")
	c.fails(exchange{method: "POST", path: epPath + "/replay", key: admin, want: http.StatusBadRequest, body: `{"until":"2999-01-01T00:00:00Z"}`, refused: true}, "INVALID_PARAMETER", "since")
	c.fails(exchange{method: "POST", path: epPath + "/replay", key: admin, want: http.StatusBadRequest, body: `{"status":"delivered"}`, refused: true}, "INVALID_PARAMETER", "status")
	c.fails(exchange{method: "POST", path: epPath + "/replay", key: admin, want: http.StatusBadRequest, body: `{"since":"2000-01-01T00:00:00Z","until":"1999-01-01T00:00:00Z"}`}, "INVALID_PARAMETER", "until")
}

// exerciseCatalogue adds, reads, changes and removes event types, as the
// admin key and as keys of a tenant, with the usual mistakes.
func exerciseCatalogue(c *specCheck) {
	t, admin := c.t, testAdminKey
	const types = "/_herald/v1/event-types"
	c.do(exchange{method: "POST", path: types, key: admin, want: http.StatusCreated,
		body: `{"name":"catalogue.created","description":"Something was made.","schema":{"type":"object","required":["region"],"properties":{"region":{"type":"string"}}}}`})
	c.do(exchange{method: "POST", path: types, key: admin, want: http.StatusCreated, body: `{"name":"catalogue.legacy","deprecated":true,"schema":null}`})
	c.fails(exchange{method: "POST", path: types, key: admin, want: http.StatusConflict, body: `{"name":"catalogue.legacy"}`}, "EVENT_TYPE_EXISTS", "")

	reader := c.m.key(t, []auth.Scope{auth.ScopeEndpointsRead}, matrixTenant)
	var page struct {
		NextCursor *string `json:"next_cursor"`
	}
	c.decode(c.do(exchange{method: "GET", path: types + "?limit=1", key: reader, want: http.StatusOK}), &page)
	if page.NextCursor == nil {
		t.Fatal("a page of one of two event types has no next_cursor")
	}
	c.do(exchange{method: "GET", path: types + "?limit=1&cursor=" + *page.NextCursor, key: reader, want: http.StatusOK})
	c.do(exchange{method: "GET", path: types + "/catalogue.created", key: reader, want: http.StatusOK})
	c.do(exchange{method: "PATCH", path: types + "/catalogue.legacy", key: admin, want: http.StatusOK,
		body: `{"description":"Use catalogue.created.","schema":true,"deprecated":null}`})
	c.do(exchange{method: "PATCH", path: types + "/catalogue.legacy", key: admin, want: http.StatusOK, body: `{"description":null,"schema":null,"deprecated":true}`})

	// A tenant reads the catalogue but does not change it, not even with
	// the admin scope; a key without admin does not get that far.
	tenantAdmin := c.m.key(t, []auth.Scope{auth.ScopeAdmin}, matrixTenant)
	c.fails(exchange{method: "POST", path: types, key: tenantAdmin, want: http.StatusForbidden, body: `{"name":"catalogue.mine"}`}, "TENANT_FORBIDDEN", "")
	c.fails(exchange{method: "PATCH", path: types + "/catalogue.created", key: tenantAdmin, want: http.StatusForbidden, body: `{"deprecated":true}`}, "TENANT_FORBIDDEN", "")
	c.fails(exchange{method: "DELETE", path: types + "/catalogue.created", key: tenantAdmin, want: http.StatusForbidden}, "TENANT_FORBIDDEN", "")
	c.fails(exchange{method: "POST", path: types, key: reader, want: http.StatusForbidden, body: `{"name":"catalogue.mine"}`}, "FORBIDDEN", "")

	c.fails(exchange{method: "POST", path: types, key: admin, want: http.StatusBadRequest, body: `{"name":"catalogue.bad","schema":{"type":12}}`}, "INVALID_SCHEMA", "schema/type")
	c.fails(exchange{method: "POST", path: types, key: admin, want: http.StatusBadRequest, body: `{"name":"catalogue.remote","schema":{"$ref":"https://example.com/schema.json"}}`}, "INVALID_SCHEMA", "schema")
	c.fails(exchange{method: "POST", path: types, key: admin, want: http.StatusBadRequest, body: `{"name":"catalogue.colour","colour":"red"}`, refused: true}, "UNKNOWN_FIELD", "colour")
	c.fails(exchange{method: "POST", path: types, key: admin, want: http.StatusBadRequest, body: `{"name":"not a type"}`, refused: true}, "INVALID_EVENT_TYPE", "name")
	big := `{"name":"catalogue.big","schema":{"description":"` + strings.Repeat("x", delivery.MaxSchemaBytes) + `"}}`
	c.fails(exchange{method: "POST", path: types, key: admin, want: http.StatusRequestEntityTooLarge, body: big}, "SCHEMA_TOO_LARGE", "schema")
	c.fails(exchange{method: "PATCH", path: types + "/catalogue.created", key: admin, want: http.StatusBadRequest, body: `{"deprecated":"yes"}`, refused: true}, "INVALID_JSON", "deprecated")
	c.fails(exchange{method: "GET", path: types + "?order=name", key: admin, want: http.StatusBadRequest}, "UNKNOWN_PARAMETER", "order")
	c.fails(exchange{method: "GET", path: types + "/catalogue.none", key: reader, want: http.StatusNotFound}, "EVENT_TYPE_NOT_FOUND", "")
	c.fails(exchange{method: "PATCH", path: types + "/catalogue.none", key: admin, want: http.StatusNotFound, body: `{"deprecated":true}`}, "EVENT_TYPE_NOT_FOUND", "")

	c.do(exchange{method: "DELETE", path: types + "/catalogue.legacy", key: admin, want: http.StatusNoContent})
	c.fails(exchange{method: "DELETE", path: types + "/catalogue.legacy", key: admin, want: http.StatusNotFound}, "EVENT_TYPE_NOT_FOUND", "")
}

// exerciseEnforcedCatalogue publishes to a server that enforces the event
// type catalogue: an unknown type, data that fails its schema, a
// deprecated type, and an endpoint whose event_types cover no type.
func exerciseEnforcedCatalogue(c *specCheck) {
	t, admin := c.t, testAdminKey
	c.do(exchange{method: "POST", path: "/_herald/v1/event-types", key: admin, want: http.StatusCreated,
		body: `{"name":"shop.order","schema":{"type":"object","properties":{"items":{"type":"array","items":{"type":"string"}}}}}`})
	c.do(exchange{method: "POST", path: "/_herald/v1/event-types", key: admin, want: http.StatusCreated, body: `{"name":"shop.basket","deprecated":true}`})
	c.fails(exchange{method: "POST", path: "/_herald/v1/events", key: admin, want: http.StatusBadRequest, body: `{"type":"shop.refund","data":{}}`}, "UNKNOWN_EVENT_TYPE", "type")
	c.fails(exchange{method: "POST", path: "/_herald/v1/events", key: admin, want: http.StatusBadRequest, body: `{"type":"shop.order","data":{"items":["a",2]}}`}, "EVENT_DATA_INVALID", "data/items/1")
	var published struct {
		DeprecatedType bool `json:"deprecated_type"`
	}
	c.decode(c.do(exchange{method: "POST", path: "/_herald/v1/events", key: admin, want: http.StatusAccepted, body: `{"type":"shop.basket","data":{}}`}), &published)
	if !published.DeprecatedType {
		t.Error("an event of a deprecated type is answered without deprecated_type")
	}
	c.fails(exchange{method: "POST", path: "/_herald/v1/endpoints", key: admin, want: http.StatusBadRequest,
		body: `{"url":"` + c.m.receiver.URL + `","event_types":["shop.*","billing.*"]}`}, "UNKNOWN_EVENT_TYPE", "event_types[1]")
}

// TestOpenAPIDescribesRealAnswers drives a full server through the life
// of keys, endpoints (their ownership verification included), events,
// deliveries, replay jobs, the event type catalogue (and a second server
// that enforces it), subscriptions and their consumers, a callback with a
// bad token, whoami, the stats and the dashboard, and the usual mistakes
// (404, 400 with a field, 401, 403, 409, 413, 415, 421, 422), and validates
// every request and answer against the document with an independent
// OpenAPI validator. Every documented operation must have been exercised.
