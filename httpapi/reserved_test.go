package httpapi

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/heraldstreams/herald/store"
	"github.com/heraldstreams/herald/subscription"
	"github.com/heraldstreams/herald/subscription/wake"
)

// fakeReserved records what the reserved API's routes ask of the
// service.
type fakeReserved struct {
	calls []string
	claim error
}

func (f *fakeReserved) record(s string) { f.calls = append(f.calls, s) }

func (f *fakeReserved) Create(_ context.Context, p *wake.ReservedCreateParams) (*subscription.DSSubscriptionView, bool, error) {
	f.record("create " + p.ID + " " + p.Config.Type + " " + p.Config.Pattern)
	return &subscription.DSSubscriptionView{ID: p.ID, SubscriptionID: p.ID, Type: p.Config.Type}, true, nil
}

func (f *fakeReserved) Get(_ context.Context, _ wake.Caller, id string) (*subscription.DSSubscriptionView, error) {
	f.record("get " + id)
	return &subscription.DSSubscriptionView{ID: id}, nil
}

func (f *fakeReserved) Delete(_ context.Context, _ wake.Caller, id string) error {
	f.record("delete " + id)
	return nil
}

func (f *fakeReserved) AddStreams(_ context.Context, _ wake.Caller, id string, rels []string) error {
	f.record("add " + id + " " + strings.Join(rels, ","))
	return nil
}

func (f *fakeReserved) RemoveStream(_ context.Context, _ wake.Caller, id, rel string) error {
	f.record("remove " + id + " " + rel)
	return nil
}

func (f *fakeReserved) Claim(_ context.Context, _ wake.Caller, id, worker string) (*subscription.DSClaimResponse, error) {
	f.record("claim " + id + " " + worker)
	if f.claim != nil {
		return nil, f.claim
	}
	return &subscription.DSClaimResponse{WakeID: "w_1", Generation: 1, Token: "t"}, nil
}

func (f *fakeReserved) Ack(_ context.Context, id, token string, req *subscription.DSAckRequest) (*subscription.DSAckResponse, error) {
	f.record("ack " + id + " " + token + " " + req.WakeID)
	return &subscription.DSAckResponse{OK: true}, nil
}

func (f *fakeReserved) Release(_ context.Context, id, token string, req *subscription.DSAckRequest) error {
	f.record("release " + id + " " + token + " " + req.WakeID)
	return nil
}

func (f *fakeReserved) JWKS() []byte { return []byte(`{"keys":[]}`) }

func (f *fakeReserved) RotateSigningKey(context.Context) (string, error) {
	f.record("rotate")
	return "ds_new", nil
}

func (f *fakeReserved) last() string {
	if len(f.calls) == 0 {
		return ""
	}
	return f.calls[len(f.calls)-1]
}

// TestStreamRoot: with a stream root, streams live under it only, and
// the reserved API lives at its __ds/ prefix, where no stream may be
// made.
func TestStreamRoot(t *testing.T) {
	t.Parallel()
	st := &fakeStore{t: t, get: func(p *store.StreamGetParams) (*store.Stream, error) {
		s := stream(1, p.Path, "text/plain", 0)
		return &s, nil
	}}
	s := newTestServer(st, Config{StreamRoot: "/v1/stream"})
	f := &fakeReserved{}
	s.Mount(APIs{Reserved: f})
	if w := do(s, "HEAD", "/elsewhere/a", nil, nil); w.Code != http.StatusNotFound {
		t.Errorf("HEAD outside the root = %d, want 404", w.Code)
	}
	expectError(t, do(s, "GET", "/elsewhere/a", nil, nil), http.StatusNotFound, "STREAM_NOT_FOUND")
	if w := do(s, "HEAD", "/v1/stream/a", nil, nil); w.Code != http.StatusOK {
		t.Errorf("HEAD under the root = %d, want 200", w.Code)
	}
	// No stream under the reserved prefix.
	expectError(t, do(s, "PUT", "/v1/stream/__ds/mine", nil, nil), http.StatusNotFound, "NOT_FOUND")
	if w := do(s, "GET", "/v1/stream/__ds/jwks.json", nil, nil); w.Code != http.StatusOK ||
		w.Header().Get("Content-Type") != "application/jwk-set+json" || w.Header().Get("Cache-Control") != "public, max-age=300" {
		t.Errorf("GET jwks.json = %d %v", w.Code, w.Header())
	}
	// A __ds segment elsewhere is no stream either: it is the other
	// subscription API's, not mounted here.
	expectError(t, do(s, "GET", "/__ds/jwks.json", nil, nil), http.StatusNotFound, "SUBSCRIPTIONS_UNAVAILABLE")
}

// TestReservedRoutes: each route reaches its service call with the
// id, the root-relative paths and the wake token it names.
func TestReservedRoutes(t *testing.T) {
	t.Parallel()
	s := newTestServer(&fakeStore{t: t}, Config{StreamRoot: "/v1/stream"})
	f := &fakeReserved{}
	s.Mount(APIs{Reserved: f})
	sub := "/v1/stream/__ds/subscriptions/s1"
	for _, c := range []struct {
		method, target, body, token string
		status                      int
		call                        string
	}{
		{"PUT", sub, `{"type":"pull-wake","pattern":"events/*","wake_stream":"wake/pool"}`, "", http.StatusCreated, "create s1 pull-wake events/*"},
		{"GET", sub, "", "", http.StatusOK, "get s1"},
		{"POST", sub + "/streams", `{"streams":["b/x","a","a"]}`, "", http.StatusNoContent, "add s1 a,b/x"},
		{"DELETE", sub + "/streams/events%2Fa%20b", "", "", http.StatusNoContent, "remove s1 events/a b"},
		{"POST", sub + "/claim", `{"worker":"w"}`, "", http.StatusOK, "claim s1 w"},
		{"POST", sub + "/callback", `{"wake_id":"w_1","generation":1,"done":true}`, "tok", http.StatusOK, "ack s1 tok w_1"},
		{"POST", sub + "/ack", `{"wake_id":"w_1","generation":1}`, "tok", http.StatusOK, "ack s1 tok w_1"},
		{"POST", sub + "/release", `{"wake_id":"w_1","generation":1}`, "tok", http.StatusNoContent, "release s1 tok w_1"},
		{"DELETE", sub, "", "", http.StatusNoContent, "delete s1"},
		{"POST", "/_herald/v1/signing-keys/rotate", "", "", http.StatusOK, "rotate"},
	} {
		h := map[string]string{}
		if c.body != "" {
			h["Content-Type"] = "application/json"
		}
		if c.token != "" {
			h["Authorization"] = "Bearer " + c.token
		}
		w := do(s, c.method, c.target, strings.NewReader(c.body), h)
		if w.Code != c.status || f.last() != c.call {
			t.Errorf("%s %s = %d %s, service saw %q; want %d and %q", c.method, c.target, w.Code, w.Body, f.last(), c.status, c.call)
		}
	}
}

// TestReservedRefusals: bodies the protocol forbids, a wake route
// without its token, another spelling of a route, and the claim
// conflict's body.
func TestReservedRefusals(t *testing.T) {
	t.Parallel()
	s := newTestServer(&fakeStore{t: t}, Config{})
	f := &fakeReserved{claim: &subscription.ClaimedError{Holder: "worker-2", Generation: 7}}
	s.Mount(APIs{Reserved: f})
	jsonBody := map[string]string{"Content-Type": "application/json"}
	for _, body := range []string{
		`{"type":"webhook","pattern":"a/*"}`,                                                  // no webhook.url
		`{"type":"pull-wake","streams":["a"],"wake_stream":"a"}`,                              // its own wake stream
		`{"type":"webhook","pattern":"a/*","webhook":{"url":"https://x"},"lease_ttl_ms":999}`, // lease below 1 s
		`{"type":"webhook","webhook":{"url":"https://x"}}`,                                    // neither pattern nor streams
		`{"type":"webhook","streams":["/abs"],"webhook":{"url":"https://x"}}`,                 // not root-relative
		`{"type":"carrier-pigeon","pattern":"a/*"}`,
	} {
		expectError(t, do(s, "PUT", "/__ds/subscriptions/s1", strings.NewReader(body), jsonBody), http.StatusBadRequest, "INVALID_REQUEST")
	}
	expectError(t, do(s, "POST", "/__ds/subscriptions/s1/ack", strings.NewReader(`{"wake_id":"w","generation":1}`), jsonBody),
		http.StatusUnauthorized, "TOKEN_INVALID")
	expectError(t, do(s, "GET", "/__ds/%73ubscriptions/s1", nil, nil), http.StatusBadRequest, "NON_CANONICAL_PATH")
	expectError(t, do(s, "GET", "/__ds/subscriptions%2Fs1", nil, nil), http.StatusBadRequest, "NON_CANONICAL_PATH")

	w := do(s, "POST", "/__ds/subscriptions/s1/claim", strings.NewReader(`{"worker":"w"}`), jsonBody)
	var body struct {
		Error struct {
			Code          string `json:"code"`
			CurrentHolder string `json:"current_holder"`
			Generation    int64  `json:"generation"`
		} `json:"error"`
	}
	if err := json.Unmarshal(w.Body.Bytes(), &body); err != nil || w.Code != http.StatusConflict ||
		body.Error.Code != "ALREADY_CLAIMED" || body.Error.CurrentHolder != "worker-2" || body.Error.Generation != 7 {
		t.Errorf("a claim while another worker holds the lease = %d %s", w.Code, w.Body)
	}
}
