package client

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// fakeReserved answers a pull-wake worker as Herald's reserved API does,
// from a script of answers by route, and records the requests.
type fakeReserved struct {
	mu     sync.Mutex
	seen   []string
	answer map[string]func(body string) (int, string)
}

func (f *fakeReserved) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	route := r.Method + " " + r.URL.EscapedPath()
	f.mu.Lock()
	f.seen = append(f.seen, route+" "+r.Header.Get("Authorization")+" "+string(body))
	a := f.answer[route]
	f.mu.Unlock()
	if a == nil {
		http.NotFound(w, r)
		return
	}
	status, out := a(string(body))
	if strings.HasPrefix(route, "GET ") {
		w.Header().Set("Stream-Next-Offset", "0000000000000000_0000000000000009")
		w.Header().Set("Stream-Up-To-Date", "true")
	}
	w.WriteHeader(status)
	_, _ = io.WriteString(w, out)
}

func TestPullWorkerErrors(t *testing.T) {
	t.Parallel()
	f := &fakeReserved{answer: map[string]func(string) (int, string){
		"POST /root/__ds/subscriptions/s%201/claim": func(string) (int, string) {
			return http.StatusConflict, `{"error":{"code":"ALREADY_CLAIMED","message":"m","current_holder":"w2","generation":7}}`
		},
		"POST /root/__ds/subscriptions/s%201/ack": func(string) (int, string) {
			return http.StatusConflict, `{"error":{"code":"FENCED","message":"stale"}}`
		},
	}}
	srv := httptest.NewServer(f)
	defer srv.Close()
	w := &PullWorker{RootURL: srv.URL + "/root/", Subscription: "s 1", Worker: "w1", Key: "hk_x"}
	ctx := context.Background()
	var held *ClaimedError
	if _, err := w.Claim(ctx); !errors.As(err, &held) || held.Holder != "w2" || held.Generation != 7 || !errors.Is(err, ErrAlreadyClaimed) {
		t.Fatalf("claim: %v", err)
	}
	if err := w.Renew(ctx, &Claim{WakeID: "w_1", Generation: 7, Token: "tok"}); !errors.Is(err, ErrFenced) {
		t.Fatalf("renew of a fenced wake: %v", err)
	}
	if !strings.Contains(f.seen[0], "Bearer hk_x") || !strings.Contains(f.seen[1], "Bearer tok") {
		t.Fatalf("credentials: %q", f.seen)
	}
}

// TestPullWorkerWorkReleasesOnFailure: a handler that fails gives the
// wake back instead of acking it.
func TestPullWorkerWorkReleasesOnFailure(t *testing.T) {
	t.Parallel()
	claim := `{"wake_id":"w_1","generation":3,"token":"tok","lease_ttl_ms":30000,
		"streams":[{"path":"a/b","link_type":"glob","acked_offset":"-1","tail_offset":"0000000000000000_0000000000000009","has_pending":true}]}`
	f := &fakeReserved{answer: map[string]func(string) (int, string){
		"POST /__ds/subscriptions/s/claim":   func(string) (int, string) { return http.StatusOK, claim },
		"GET /a/b":                           func(string) (int, string) { return http.StatusOK, "data" },
		"POST /__ds/subscriptions/s/release": func(string) (int, string) { return http.StatusNoContent, "" },
		"POST /__ds/subscriptions/s/ack":     func(string) (int, string) { return http.StatusOK, `{"ok":true,"next_wake":true}` },
	}}
	srv := httptest.NewServer(f)
	defer srv.Close()
	w := &PullWorker{RootURL: srv.URL, Subscription: "s", Worker: "w1"}
	boom := errors.New("boom")
	if _, err := w.Work(context.Background(), func(context.Context, string, []byte) error { return boom }); !errors.Is(err, boom) {
		t.Fatalf("work with a failing handler: %v", err)
	}
	last := f.seen[len(f.seen)-1]
	if !strings.HasPrefix(last, "POST /__ds/subscriptions/s/release Bearer tok") || !strings.Contains(last, `"wake_id":"w_1","generation":3`) {
		t.Fatalf("the wake was not released: %q", f.seen)
	}
	// A handler that succeeds acks the read's next offset, then done.
	var got string
	next, err := w.Work(context.Background(), func(_ context.Context, stream string, data []byte) error {
		got = stream + "=" + string(data)
		return nil
	})
	if err != nil || !next || got != "a/b=data" {
		t.Fatalf("work = %v, %v, handler saw %q", next, err, got)
	}
	done := f.seen[len(f.seen)-1]
	if !strings.Contains(done, `"acks":[{"stream":"a/b","offset":"0000000000000000_0000000000000009"}],"done":true`) {
		t.Fatalf("done = %q", done)
	}
}
