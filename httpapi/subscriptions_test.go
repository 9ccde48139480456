package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path"
	"strings"
	"testing"

	"github.com/heraldstreams/herald/subscription"
	"github.com/heraldstreams/herald/subscription/wake"
	"github.com/heraldstreams/herald/webhook"
)

// fakeSubscriptions is a SubscriptionService that records what it was
// asked and answers with its fields.
type fakeSubscriptions struct {
	create    func(*wake.CreateSubscriptionParams) (*wake.CreateSubscriptionResult, error)
	get       func(id string) (*subscription.Subscription, error)
	list      func(pattern string) ([]subscription.Subscription, error)
	del       func(pattern, id string) error
	callback  func(*wake.CallbackParams) (*subscription.CallbackResponse, error)
	lastCall  string
	callCount int
}

func (f *fakeSubscriptions) record(call string) { f.lastCall = call; f.callCount++ }

func (f *fakeSubscriptions) CreateSubscription(_ context.Context, p *wake.CreateSubscriptionParams) (*wake.CreateSubscriptionResult, error) {
	f.record(fmt.Sprintf("create %s %s %s %q", p.ID, p.Pattern, p.Webhook, p.Description))
	return f.create(p)
}

func (f *fakeSubscriptions) GetSubscription(_ context.Context, _ wake.Caller, id string) (*subscription.Subscription, error) {
	f.record("get " + id)
	return f.get(id)
}

func (f *fakeSubscriptions) ListSubscriptions(_ context.Context, _ wake.Caller, pattern string) ([]subscription.Subscription, error) {
	f.record("list " + pattern)
	return f.list(pattern)
}

func (f *fakeSubscriptions) DeleteSubscription(_ context.Context, _ wake.Caller, pattern, id string) error {
	f.record("delete " + pattern + " " + id)
	return f.del(pattern, id)
}

func (f *fakeSubscriptions) Callback(_ context.Context, p *wake.CallbackParams) (*subscription.CallbackResponse, error) {
	f.record(fmt.Sprintf("callback %s %s %s", p.ConsumerID, p.Token, p.Body))
	return f.callback(p)
}

// GetConsumer implements ConsumerService: the fake has no consumers.
func (f *fakeSubscriptions) GetConsumer(_ context.Context, _ wake.Caller, id string) (*subscription.ConsumerInfo, error) {
	f.record("consumer " + id)
	return nil, wake.ErrConsumerNotFound
}

// ListConsumers implements ConsumerService: the fake has no consumers.
func (f *fakeSubscriptions) ListConsumers(_ context.Context, _ wake.Caller, subscriptionID, _ string, _ int) (*subscription.ConsumerList, error) {
	f.record("consumers " + subscriptionID)
	return nil, wake.ErrSubscriptionNotFound
}

func subscriptionServer(t *testing.T, f *fakeSubscriptions) *Server {
	s := newTestServer(&fakeStore{t: t}, Config{})
	s.Mount(APIs{Subscriptions: f})
	return s
}

var sub1 = subscription.Subscription{SubscriptionID: "s1", Pattern: "/agents/*", Webhook: "https://hooks.example/h", Description: "d"}

func TestSubscriptionCreate(t *testing.T) {
	t.Parallel()
	created := true
	f := &fakeSubscriptions{create: func(p *wake.CreateSubscriptionParams) (*wake.CreateSubscriptionResult, error) {
		out := sub1
		if created {
			out.WebhookSecret = "whsec_x"
		}
		return &wake.CreateSubscriptionResult{Subscription: out, Created: created}, nil
	}}
	s := subscriptionServer(t, f)
	body := `{"webhook": "https://hooks.example/h", "description": "d"}`
	w := do(s, http.MethodPut, "/agents/%2A?subscription=s1", strings.NewReader(body), jsonHeader)
	if w.Code != http.StatusCreated {
		t.Fatalf("status %d: %s", w.Code, w.Body)
	}
	if f.lastCall != `create s1 /agents/* https://hooks.example/h "d"` {
		t.Fatalf("call = %s", f.lastCall)
	}
	var got subscription.Subscription
	if err := json.Unmarshal(w.Body.Bytes(), &got); err != nil || got.WebhookSecret != "whsec_x" || got.Pattern != "/agents/*" {
		t.Fatalf("body %s: %v", w.Body, err)
	}
	created = false
	w = do(s, http.MethodPut, "/agents/*?subscription=s1", strings.NewReader(body), jsonHeader)
	if w.Code != http.StatusOK || strings.Contains(w.Body.String(), "webhook_secret") {
		t.Fatalf("idempotent create: %d %s", w.Code, w.Body)
	}
}

func TestSubscriptionErrors(t *testing.T) {
	t.Parallel()
	refused := &webhook.RefusedError{Reason: webhook.ReasonPrivate, Detail: "10.0.0.1 is a private address"}
	for _, tc := range []struct {
		name         string
		method, path string
		body         string
		err          error
		status       int
		code         string
	}{
		{"taken id", "PUT", "/a/*?subscription=s1", `{"webhook":"https://h.example/"}`, wake.ErrSubscriptionExists, 409, "SUBSCRIPTION_EXISTS"},
		{"pattern outside the paths", "PUT", "/a/*?subscription=s1", `{"webhook":"https://h.example/"}`, wake.ErrPatternForbidden, 403, "FORBIDDEN"},
		{"refused webhook", "PUT", "/a/*?subscription=s1", `{"webhook":"https://10.0.0.1/"}`, refused, 400, "URL_REFUSED"},
		{"bad id", "PUT", "/a/*?subscription=s1", `{"webhook":"https://h.example/"}`, fmt.Errorf("%w: bad", subscription.ErrInvalidSubscriptionID), 400, "INVALID_SUBSCRIPTION_ID"},
		{"bad body", "PUT", "/a/*?subscription=s1", `{"webhook": 3}`, nil, 400, "INVALID_REQUEST"},
		{"unknown field", "PUT", "/a/*?subscription=s1", `{"webhook":"https://h.example/","hook":1}`, nil, 400, "INVALID_REQUEST"},
		{"missing", "GET", "/**?subscription=nope", "", wake.ErrSubscriptionNotFound, 404, "SUBSCRIPTION_NOT_FOUND"},
		{"delete missing", "DELETE", "/a/*?subscription=nope", "", wake.ErrSubscriptionNotFound, 404, "SUBSCRIPTION_NOT_FOUND"},
		{"both parameters", "GET", "/a/*?subscription=s1&subscriptions", "", nil, 400, "INVALID_REQUEST"},
		{"wrong method", "POST", "/a/*?subscription=s1", "", nil, 405, "METHOD_NOT_ALLOWED"},
		{"server fault", "GET", "/a/*?subscriptions", "", errors.New("disk on fire"), 500, "INTERNAL"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakeSubscriptions{
				create: func(*wake.CreateSubscriptionParams) (*wake.CreateSubscriptionResult, error) {
					return nil, tc.err
				},
				get:  func(string) (*subscription.Subscription, error) { return nil, tc.err },
				list: func(string) ([]subscription.Subscription, error) { return nil, tc.err },
				del:  func(string, string) error { return tc.err },
			}
			w := do(subscriptionServer(t, f), tc.method, tc.path, strings.NewReader(tc.body), jsonHeader)
			expectError(t, w, tc.status, tc.code)
			if tc.err == nil && f.callCount != 0 {
				t.Errorf("the service was called: %s", f.lastCall)
			}
		})
	}
}

func TestSubscriptionReadAndDelete(t *testing.T) {
	t.Parallel()
	f := &fakeSubscriptions{
		get:  func(id string) (*subscription.Subscription, error) { s := sub1; return &s, nil },
		list: func(string) ([]subscription.Subscription, error) { return []subscription.Subscription{sub1}, nil },
		del:  func(string, string) error { return nil },
	}
	s := subscriptionServer(t, f)
	w := do(s, "GET", "/**?subscriptions", nil, nil)
	if w.Code != 200 || f.lastCall != "list /**" || !strings.HasPrefix(w.Body.String(), `{"subscriptions":[{"subscription_id":"s1"`) {
		t.Fatalf("list: %d %s (%s)", w.Code, w.Body, f.lastCall)
	}
	w = do(s, "GET", "/**?subscription=s1", nil, nil)
	if w.Code != 200 || f.lastCall != "get s1" || strings.Contains(w.Body.String(), "secret") {
		t.Fatalf("get: %d %s", w.Code, w.Body)
	}
	w = do(s, "DELETE", "/agents/*?subscription=s1", nil, nil)
	if w.Code != http.StatusNoContent || f.lastCall != "delete /agents/* s1" {
		t.Fatalf("delete: %d %s", w.Code, f.lastCall)
	}
}

func TestCallbackRoute(t *testing.T) {
	t.Parallel()
	var got *wake.CallbackParams
	f := &fakeSubscriptions{callback: func(p *wake.CallbackParams) (*subscription.CallbackResponse, error) {
		got = p
		return &subscription.CallbackResponse{OK: true, Token: "next", Streams: []subscription.StreamOffset{{Path: "/agents/a", Offset: "-1"}}}, nil
	}}
	s := subscriptionServer(t, f)
	w := do(s, "POST", "/callback/my-sub:%2Fagents%2Fa", strings.NewReader(`{"epoch":1}`), map[string]string{"Authorization": "Bearer tok"})
	if w.Code != 200 || w.Body.String() != `{"ok":true,"token":"next","streams":[{"path":"/agents/a","offset":"-1"}]}` {
		t.Fatalf("callback: %d %s", w.Code, w.Body)
	}
	// The consumer id reaches the service still encoded.
	if got.ConsumerID != "my-sub:%2Fagents%2Fa" || got.Token != "tok" || string(got.Body) != `{"epoch":1}` {
		t.Fatalf("params = %+v", got)
	}
	// No bearer: the service decides (TOKEN_INVALID), with an empty token.
	do(s, "POST", "/callback/my-sub:%2Fagents%2Fa", strings.NewReader(`{}`), map[string]string{"Authorization": "Basic abc"})
	if got.Token != "" {
		t.Fatalf("token from a Basic header: %q", got.Token)
	}
}

func TestCallbackErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		err    error
		status int
		code   string
	}{
		{subscription.ErrInvalidRequest, 400, "INVALID_REQUEST"},
		{subscription.ErrTokenExpired, 401, "TOKEN_EXPIRED"},
		{subscription.ErrTokenInvalid, 401, "TOKEN_INVALID"},
		{subscription.ErrAlreadyClaimed, 409, "ALREADY_CLAIMED"},
		{subscription.ErrInvalidOffset, 409, "INVALID_OFFSET"},
		{subscription.ErrStaleEpoch, 409, "STALE_EPOCH"},
		{subscription.ErrConsumerGone, 410, "CONSUMER_GONE"},
		{errors.New("disk on fire"), 500, "INTERNAL"},
	} {
		t.Run(tc.code, func(t *testing.T) {
			f := &fakeSubscriptions{callback: func(*wake.CallbackParams) (*subscription.CallbackResponse, error) {
				return nil, &wake.CallbackError{Err: fmt.Errorf("%w: details", tc.err), Token: "t2"}
			}}
			if tc.status == 500 {
				f.callback = func(*wake.CallbackParams) (*subscription.CallbackResponse, error) { return nil, tc.err }
			}
			w := do(subscriptionServer(t, f), "POST", "/callback/s:%2Fa", strings.NewReader(`{"epoch":1}`), map[string]string{"Authorization": "Bearer t"})
			if w.Code != tc.status {
				t.Fatalf("status %d, want %d: %s", w.Code, tc.status, w.Body)
			}
			var body subscription.ErrorResponse
			if err := json.Unmarshal(w.Body.Bytes(), &body); err != nil {
				t.Fatal(err)
			}
			if body.OK || body.Error.Code != tc.code || body.Error.Message == "" {
				t.Fatalf("body = %s", w.Body)
			}
			if wantTok := tc.status != 500; (body.Token == "t2") != wantTok {
				t.Fatalf("token in %s", w.Body)
			}
			if !strings.Contains(w.Body.String(), `"ok":false`) {
				t.Fatalf("body lacks ok:false: %s", w.Body)
			}
		})
	}
}

// FuzzCallbackRoute sends arbitrary callback paths, Authorization headers
// and bodies through the route to a service that runs the real consumer id
// and body parsers: every answer is JSON with a status of
// docs/subscriptions.md's table, and the consumer id reaches the service
// still encoded.
func FuzzCallbackRoute(f *testing.F) {
	f.Add("my-sub:%2Fagents%2Ftask-1", "Bearer abc", `{"epoch": 1, "wake_id": "w_1", "done": true}`)
	f.Add("s:%2Fa%2F%252F", "bearer  x ", `{"epoch": 2, "acks": [{"path": "/a", "offset": "-1"}]}`)
	f.Add("no-colon", "", `{}`)
	f.Add("s:%zz", "Basic abc", `not json`)
	f.Add("s:%2Fa/extra", "Bearer", `{"epoch": -1}`)
	f.Fuzz(func(t *testing.T, id, auth, body string) {
		var gotID string
		svc := &fakeSubscriptions{callback: func(p *wake.CallbackParams) (*subscription.CallbackResponse, error) {
			gotID = p.ConsumerID
			if _, _, err := subscription.ParseConsumerID(p.ConsumerID); err != nil {
				return nil, &wake.CallbackError{Err: fmt.Errorf("%w: %v", subscription.ErrConsumerGone, err)}
			}
			if p.Token == "" {
				return nil, &wake.CallbackError{Err: subscription.ErrTokenInvalid}
			}
			if _, err := subscription.ParseCallbackRequest(p.Body); err != nil {
				return nil, &wake.CallbackError{Err: err, Token: p.Token}
			}
			return &subscription.CallbackResponse{OK: true, Token: p.Token, Streams: []subscription.StreamOffset{}}, nil
		}}
		s := subscriptionServer(t, svc)
		r := httptest.NewRequest("POST", "/callback/x", strings.NewReader(body))
		r.URL.RawPath = "/callback/" + id
		r.URL.Path = "/callback/" + id
		if unescaped, err := url.PathUnescape(id); err == nil {
			r.URL.Path = "/callback/" + unescaped
		}
		if auth != "" {
			r.Header.Set("Authorization", auth)
		}
		w := httptest.NewRecorder()
		s.ServeHTTP(w, r)
		if w.Code == http.StatusTemporaryRedirect && path.Clean(r.URL.Path) != r.URL.Path {
			return // net/http's ServeMux redirects an unclean path
		}
		switch w.Code {
		case 200, 400, 401, 404, 405, 409, 410:
		default:
			t.Fatalf("status %d for %q %q %q: %s", w.Code, id, auth, body, w.Body)
		}
		if !json.Valid(w.Body.Bytes()) {
			t.Fatalf("body is not JSON: %q", w.Body)
		}
		if gotID != "" && gotID != r.URL.EscapedPath()[len("/callback/"):] {
			t.Fatalf("service got %q for path %q", gotID, r.URL.EscapedPath())
		}
	})
}
