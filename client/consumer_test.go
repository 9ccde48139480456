package client

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeHerald serves catch-up reads of in-memory streams (at most 4 bytes
// per response, so a stream takes several batches) and the callback API,
// recording every callback.
type fakeHerald struct {
	t       *testing.T
	mu      sync.Mutex
	streams map[string]string
	acked   map[string]string
	tokens  int
	// calls are the callback bodies, with the token each carried.
	calls []string
	// reply, when set, answers a callback instead of the default.
	reply func(n int, body map[string]any) (int, string)
	// key, when set, is the API key every stream read must carry, as
	// Herald with access control on requires.
	key string
}

func offsetOf(n int) string { return fmt.Sprintf("%010d", n) }

func (f *fakeHerald) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if strings.HasPrefix(r.URL.Path, "/callback/") {
		f.callback(w, r)
		return
	}
	if f.key != "" && r.Header.Get("Authorization") != "Bearer "+f.key {
		http.Error(w, `{"error":{"code":"UNAUTHENTICATED"}}`, http.StatusUnauthorized)
		return
	}
	data, ok := f.streams[r.URL.Path]
	if !ok {
		http.NotFound(w, r)
		return
	}
	from := 0
	if off := r.URL.Query().Get("offset"); off != "-1" {
		n, err := strconv.Atoi(off)
		if err != nil {
			http.Error(w, "bad offset", http.StatusBadRequest)
			return
		}
		from = n
	}
	to := min(from+4, len(data))
	w.Header().Set("Stream-Next-Offset", offsetOf(to))
	if to == len(data) {
		w.Header().Set("Stream-Up-To-Date", "true")
	}
	io.WriteString(w, data[from:to])
}

func (f *fakeHerald) callback(w http.ResponseWriter, r *http.Request) {
	var body map[string]any
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		f.t.Errorf("callback body: %v", err)
	}
	raw, _ := json.Marshal(body)
	f.calls = append(f.calls, strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")+" "+string(raw))
	if f.reply != nil {
		if status, out := f.reply(len(f.calls), body); status != 0 {
			w.WriteHeader(status)
			io.WriteString(w, out)
			return
		}
	}
	if acks, ok := body["acks"].([]any); ok {
		for _, a := range acks {
			a := a.(map[string]any)
			f.acked[a["path"].(string)] = a["offset"].(string)
		}
	}
	f.tokens++
	var streams []StreamOffset
	for _, p := range slices.Sorted(func(yield func(string) bool) {
		for p := range f.acked {
			if !yield(p) {
				return
			}
		}
	}) {
		streams = append(streams, StreamOffset{Path: p, Offset: f.acked[p]})
	}
	out, _ := json.Marshal(map[string]any{"ok": true, "token": fmt.Sprintf("t%d", f.tokens), "streams": streams})
	w.Write(out)
}

func newFakeHerald(t *testing.T) (*fakeHerald, *httptest.Server) {
	f := &fakeHerald{t: t,
		streams: map[string]string{"/agents/a": "hello world", "/tools/t": "abc"},
		acked:   map[string]string{"/agents/a": "-1", "/tools/t": offsetOf(1), "/later/x": "-1"},
	}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	return f, srv
}

func wakeFor(srv *httptest.Server) *Wake {
	return &Wake{ConsumerID: "s:%2Fagents%2Fa", Epoch: 3, WakeID: "w_1", PrimaryStream: "/agents/a",
		Callback: srv.URL + "/callback/s:%2Fagents%2Fa", Token: "t0"}
}

func TestConsumerHandleWake(t *testing.T) {
	t.Parallel()
	f, srv := newFakeHerald(t)
	var got []string
	c := NewConsumer(ConsumerConfig{Process: func(_ context.Context, b Batch) error {
		got = append(got, b.Stream+"@"+b.Offset+":"+string(b.Data))
		return nil
	}})
	if err := c.HandleWake(context.Background(), wakeFor(srv)); err != nil {
		t.Fatal(err)
	}
	// Every stream is read from its acked offset in batches; a stream that
	// does not exist yet is skipped.
	want := []string{
		"/agents/a@-1:hell", "/agents/a@" + offsetOf(4) + ":o wo", "/agents/a@" + offsetOf(8) + ":rld",
		"/tools/t@" + offsetOf(1) + ":bc",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("batches = %q, want %q", got, want)
	}
	// Claim first (with the wake's token and wake id), an ack per batch,
	// each callback with the freshest token, done last.
	wantCalls := []string{
		`t0 {"epoch":3,"wake_id":"w_1"}`,
		`t1 {"acks":[{"offset":"` + offsetOf(4) + `","path":"/agents/a"}],"epoch":3}`,
		`t2 {"acks":[{"offset":"` + offsetOf(8) + `","path":"/agents/a"}],"epoch":3}`,
		`t3 {"acks":[{"offset":"` + offsetOf(11) + `","path":"/agents/a"}],"epoch":3}`,
		`t4 {"acks":[{"offset":"` + offsetOf(3) + `","path":"/tools/t"}],"epoch":3}`,
		`t5 {"done":true,"epoch":3}`,
	}
	if !slices.Equal(f.calls, wantCalls) {
		t.Fatalf("callbacks:\n%s\nwant:\n%s", strings.Join(f.calls, "\n"), strings.Join(wantCalls, "\n"))
	}
}

// TestConsumerReadsWithItsKey: with access control on, the consumer's
// reads carry ConsumerConfig.Key while its callbacks keep the wake's
// token; without the key every read is refused and nothing is acked.
func TestConsumerReadsWithItsKey(t *testing.T) {
	t.Parallel()
	f, srv := newFakeHerald(t)
	f.key = "hk_reader"
	var got []string
	c := NewConsumer(ConsumerConfig{Key: "hk_reader", Process: func(_ context.Context, b Batch) error {
		got = append(got, string(b.Data))
		return nil
	}})
	if err := c.HandleWake(context.Background(), wakeFor(srv)); err != nil {
		t.Fatal(err)
	}
	if want := []string{"hell", "o wo", "rld", "bc"}; !slices.Equal(got, want) {
		t.Fatalf("batches = %q, want %q", got, want)
	}
	for _, call := range f.calls {
		if strings.Contains(call, "hk_reader") {
			t.Fatalf("a callback carried the API key instead of the wake's token: %s", call)
		}
	}

	f2, srv2 := newFakeHerald(t)
	f2.key = "hk_reader"
	keyless := NewConsumer(ConsumerConfig{RetryBackoff: time.Millisecond, Process: func(context.Context, Batch) error {
		t.Error("a batch was processed without the key")
		return nil
	}})
	err := keyless.HandleWake(context.Background(), wakeFor(srv2))
	if err == nil || !strings.Contains(err.Error(), "status 401") {
		t.Fatalf("HandleWake without the key: %v, want a 401 read failure", err)
	}
	for _, call := range f2.calls {
		if strings.Contains(call, `"acks"`) {
			t.Fatalf("acked without reading: %s", call)
		}
	}
}

func TestConsumerStopsWhenFencedOrFailing(t *testing.T) {
	t.Parallel()
	f, srv := newFakeHerald(t)
	f.reply = func(n int, _ map[string]any) (int, string) {
		if n == 3 {
			return http.StatusConflict, `{"ok":false,"error":{"code":"STALE_EPOCH","message":"newer wake"},"token":"tz"}`
		}
		return 0, ""
	}
	batches := 0
	c := NewConsumer(ConsumerConfig{Process: func(context.Context, Batch) error { batches++; return nil }})
	err := c.HandleWake(context.Background(), wakeFor(srv))
	var ce *CallbackError
	if !errors.Is(err, ErrFenced) || !errors.As(err, &ce) || ce.Code != CodeStaleEpoch || ce.Status != 409 {
		t.Fatalf("err = %v, want a fenced STALE_EPOCH", err)
	}
	if batches != 2 || len(f.calls) != 3 {
		t.Fatalf("went on after the fence: %d batches, %d callbacks", batches, len(f.calls))
	}

}

// TestConsumerFailureEndsTheWakeAfterTheBackoff: a failing batch is not
// acked, nor is the rest of its stream; the batches before it and the
// other streams are; after RetryBackoff the wake is ended with done, so
// Herald wakes the consumer again from the failed batch at once rather
// than after its liveness timeout.
func TestConsumerFailureEndsTheWakeAfterTheBackoff(t *testing.T) {
	t.Parallel()
	f, srv := newFakeHerald(t)
	boom := errors.New("boom")
	const backoff = 150 * time.Millisecond
	var got []string
	c := NewConsumer(ConsumerConfig{RetryBackoff: backoff, Process: func(_ context.Context, b Batch) error {
		got = append(got, b.Stream+"@"+b.Offset)
		if b.Stream == "/agents/a" && b.Offset == offsetOf(4) {
			return boom
		}
		return nil
	}})
	var failedAt time.Time
	f.reply = func(_ int, body map[string]any) (int, string) {
		if failedAt.IsZero() && len(got) == 3 {
			failedAt = time.Now() // the first callback after the failure
		}
		if body["done"] == true && time.Since(failedAt) < backoff {
			t.Errorf("done %v after the failure, before the backoff of %v", time.Since(failedAt), backoff)
		}
		return 0, ""
	}
	err := c.HandleWake(context.Background(), wakeFor(srv))
	if !errors.Is(err, boom) || errors.Is(err, ErrFenced) {
		t.Fatalf("err = %v, want the processing error", err)
	}
	if want := []string{"/agents/a@-1", "/agents/a@" + offsetOf(4), "/tools/t@" + offsetOf(1)}; !slices.Equal(got, want) {
		t.Fatalf("batches = %q, want %q", got, want)
	}
	wantCalls := []string{
		`t0 {"epoch":3,"wake_id":"w_1"}`,
		`t1 {"acks":[{"offset":"` + offsetOf(4) + `","path":"/agents/a"}],"epoch":3}`,
		`t2 {"acks":[{"offset":"` + offsetOf(3) + `","path":"/tools/t"}],"epoch":3}`,
		`t3 {"done":true,"epoch":3}`,
	}
	if !slices.Equal(f.calls, wantCalls) {
		t.Fatalf("callbacks:\n%s\nwant:\n%s", strings.Join(f.calls, "\n"), strings.Join(wantCalls, "\n"))
	}
}

// TestConsumerFailureKeepsTheWakeAlive: a backoff longer than the
// keep-alive interval sends empty callbacks, so the wake does not lapse
// into Herald's liveness timeout; a fenced keep-alive stops the wait.
func TestConsumerFailureKeepsTheWakeAlive(t *testing.T) {
	t.Parallel()
	f, srv := newFakeHerald(t)
	boom := errors.New("boom")
	c := NewConsumer(ConsumerConfig{RetryBackoff: 200 * time.Millisecond, Process: func(context.Context, Batch) error { return boom }})
	c.keepAlive = 30 * time.Millisecond
	if err := c.HandleWake(context.Background(), wakeFor(srv)); !errors.Is(err, boom) {
		t.Fatalf("err = %v", err)
	}
	// The claim, keep-alives, the done.
	keepAlives := 0
	for _, call := range f.calls[1 : len(f.calls)-1] {
		if !strings.HasSuffix(call, ` {"epoch":3}`) {
			t.Fatalf("not a keep-alive: %s", call)
		}
		keepAlives++
	}
	if keepAlives < 2 || !strings.HasSuffix(f.calls[len(f.calls)-1], ` {"done":true,"epoch":3}`) {
		t.Fatalf("callbacks: %q", f.calls)
	}

	f, srv = newFakeHerald(t)
	f.reply = func(n int, _ map[string]any) (int, string) {
		if n == 2 {
			return http.StatusGone, `{"ok":false,"error":{"code":"CONSUMER_GONE","message":"removed"}}`
		}
		return 0, ""
	}
	c = NewConsumer(ConsumerConfig{RetryBackoff: time.Hour, Process: func(context.Context, Batch) error { return boom }})
	c.keepAlive = 10 * time.Millisecond
	if err := c.HandleWake(context.Background(), wakeFor(srv)); !errors.Is(err, boom) || !errors.Is(err, ErrFenced) {
		t.Fatalf("err = %v, want the failure and the fence", err)
	}
	if len(f.calls) != 2 {
		t.Fatalf("callbacks after the fence: %q", f.calls)
	}
}

// TestConsumerFailureWithoutContext: when the context ends during the
// backoff the wake is left to Herald's liveness timeout: no done, which
// would retry it sooner than the backoff.
func TestConsumerFailureWithoutContext(t *testing.T) {
	t.Parallel()
	f, srv := newFakeHerald(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	boom := errors.New("boom")
	c := NewConsumer(ConsumerConfig{RetryBackoff: time.Hour, Process: func(context.Context, Batch) error {
		cancel()
		return boom
	}})
	err := c.HandleWake(ctx, wakeFor(srv))
	if !errors.Is(err, boom) || !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v", err)
	}
	for _, call := range f.calls {
		if strings.Contains(call, "done") {
			t.Fatalf("done without the backoff: %q", f.calls)
		}
	}
}

func TestCallbackClientRenewsExpiredToken(t *testing.T) {
	t.Parallel()
	f, srv := newFakeHerald(t)
	f.reply = func(n int, _ map[string]any) (int, string) {
		if n == 1 {
			return http.StatusUnauthorized, `{"ok":false,"error":{"code":"TOKEN_EXPIRED","message":"expired"},"token":"renewed"}`
		}
		return 0, ""
	}
	cb := NewCallbackClient(wakeFor(srv), srv.Client())
	res, err := cb.Send(context.Background(), Callback{Subscribe: []string{"/later/x"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(f.calls) != 2 || !strings.HasPrefix(f.calls[1], "renewed ") || cb.Token() != "t1" || len(res.Streams) != 3 {
		t.Fatalf("calls %q, token %s, streams %+v", f.calls, cb.Token(), res.Streams)
	}
	// Claimed: later callbacks carry no wake id.
	if _, err := cb.Send(context.Background(), Callback{Done: true}); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(f.calls[2], "wake_id") {
		t.Fatalf("wake id after the claim: %s", f.calls[2])
	}
	// A token that stays invalid is an error, not a loop.
	f.reply = func(int, map[string]any) (int, string) {
		return http.StatusUnauthorized, `{"ok":false,"error":{"code":"TOKEN_EXPIRED","message":"expired"},"token":"again"}`
	}
	_, err = cb.Send(context.Background(), Callback{})
	var ce *CallbackError
	if !errors.As(err, &ce) || ce.Code != CodeTokenExpired || errors.Is(err, ErrFenced) {
		t.Fatalf("err = %v", err)
	}
}

func sign(secret string, body []byte, at time.Time) string {
	ts := strconv.FormatInt(at.Unix(), 10)
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(ts + "."))
	mac.Write(body)
	return "t=" + ts + ",sha256=" + hex.EncodeToString(mac.Sum(nil))
}

func TestConsumerServeHTTP(t *testing.T) {
	t.Parallel()
	f, srv := newFakeHerald(t)
	now := time.Now()
	c := NewConsumer(ConsumerConfig{Secret: "whsec_test", Now: func() time.Time { return now },
		Process: func(context.Context, Batch) error { return nil }})
	body, err := json.Marshal(wakeFor(srv))
	if err != nil {
		t.Fatal(err)
	}
	post := func(sig string, b []byte) *httptest.ResponseRecorder {
		r := httptest.NewRequest("POST", "/hook", strings.NewReader(string(b)))
		r.Header.Set(WakeSignatureHeader, sig)
		w := httptest.NewRecorder()
		c.ServeHTTP(w, r)
		return w
	}
	if w := post(sign("whsec_other", body, now), body); w.Code != http.StatusUnauthorized || len(f.calls) != 0 {
		t.Fatalf("wrong secret: %d, %d callbacks", w.Code, len(f.calls))
	}
	if w := post(sign("whsec_test", body, now.Add(-10*time.Minute)), body); w.Code != http.StatusUnauthorized {
		t.Fatalf("old signature: %d", w.Code)
	}
	bad := []byte(`{"epoch":1}`)
	if w := post(sign("whsec_test", bad, now), bad); w.Code != http.StatusBadRequest {
		t.Fatalf("not a wake: %d", w.Code)
	}
	if w := post(sign("whsec_test", body, now), body); w.Code != http.StatusOK || len(f.calls) != 6 {
		t.Fatalf("valid wake: %d, %d callbacks", w.Code, len(f.calls))
	}

	// A failed wake answers 500, after it was ended with done.
	f.calls = nil
	f.acked["/agents/a"] = "-1"
	c.cfg.RetryBackoff = time.Millisecond
	c.cfg.Process = func(context.Context, Batch) error { return errors.New("boom") }
	if w := post(sign("whsec_test", body, now), body); w.Code != http.StatusInternalServerError ||
		len(f.calls) == 0 || !strings.Contains(f.calls[len(f.calls)-1], `"done":true`) {
		t.Fatalf("failed wake: %d, callbacks %q", w.Code, f.calls)
	}
}
