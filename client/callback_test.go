package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// A callback Herald cannot take now (its database is away: 503
// STORE_UNAVAILABLE; a proxy in front of it lost the replica: 502) is
// sent again until it goes through, so the wake stays alive; one that
// keeps failing is an error once CallbackRetryFor has passed; an answer
// that means something else is not sent again.
func TestCallbackClientSendsAgainWhenHeraldCannotTakeIt(t *testing.T) {
	t.Parallel()
	f, srv := newFakeHerald(t)
	f.reply = func(n int, _ map[string]any) (int, string) {
		switch n {
		case 1:
			return http.StatusServiceUnavailable, `{"ok":false,"error":{"code":"STORE_UNAVAILABLE","message":"the database cannot be reached; retry later"}}`
		case 2:
			return http.StatusBadGateway, "<html>bad gateway</html>"
		}
		return 0, ""
	}
	cb := NewCallbackClient(wakeFor(srv), srv.Client())
	res, err := cb.Send(context.Background(), Callback{})
	if err != nil {
		t.Fatal(err)
	}
	if len(f.calls) != 3 || len(res.Streams) != 3 || cb.Token() != "t1" {
		t.Fatalf("calls %q, streams %+v, token %s", f.calls, res.Streams, cb.Token())
	}

	f.reply = func(int, map[string]any) (int, string) {
		return http.StatusServiceUnavailable, `{"ok":false,"error":{"code":"STORE_UNAVAILABLE","message":"away"}}`
	}
	cb.retryFor = 300 * time.Millisecond
	before := len(f.calls)
	_, err = cb.Send(context.Background(), Callback{Done: true})
	var ce *CallbackError
	if !errors.As(err, &ce) || ce.Status != http.StatusServiceUnavailable || ce.Code != "STORE_UNAVAILABLE" {
		t.Fatalf("err = %v", err)
	}
	if n := len(f.calls) - before; n < 2 {
		t.Fatalf("a callback Herald could not take was sent %d times", n)
	}

	f.reply = func(int, map[string]any) (int, string) {
		return http.StatusConflict, `{"ok":false,"error":{"code":"STALE_EPOCH","message":"newer wake"}}`
	}
	before = len(f.calls)
	if _, err := cb.Send(context.Background(), Callback{}); !errors.Is(err, ErrFenced) || len(f.calls)-before != 1 {
		t.Fatalf("a fenced callback: %v after %d sends", err, len(f.calls)-before)
	}
}

// A wake whose request ends while it is handled (the replica that sent
// it died) is handled to its end: the consumer acks and says done
// instead of leaving the wake claimed until the liveness timeout.
func TestConsumerServeHTTPOutlivesHeraldsRequest(t *testing.T) {
	t.Parallel()
	f, srv := newFakeHerald(t)
	entered, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	c := NewConsumer(ConsumerConfig{Secret: "whsec_test", HTTPClient: srv.Client(), Process: func(context.Context, Batch) error {
		once.Do(func() {
			close(entered)
			<-release
		})
		return nil
	}})
	body, err := json.Marshal(wakeFor(srv))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := httptest.NewRequest("POST", "/hook", bytes.NewReader(body)).WithContext(ctx)
	r.Header.Set(WakeSignatureHeader, sign("whsec_test", body, time.Now()))
	w := httptest.NewRecorder()
	done := make(chan struct{})
	go func() {
		defer close(done)
		c.ServeHTTP(w, r)
	}()
	<-entered
	cancel() // the sender is gone
	close(release)
	<-done
	f.mu.Lock()
	defer f.mu.Unlock()
	if w.Code != http.StatusOK || len(f.calls) != 6 || !strings.Contains(f.calls[5], `"done":true`) {
		t.Fatalf("after the request ended: %d, callbacks %q", w.Code, f.calls)
	}
}
