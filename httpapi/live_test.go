package httpapi

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/heraldstreams/herald/protocol"
	"github.com/heraldstreams/herald/store"
)

// memStream is one in-memory stream behind a fakeStore, publishing its
// changes to a Hub as a backend does. Create it inside the synctest bubble.
type memStream struct {
	mu    sync.Mutex
	st    store.Stream
	data  []byte
	hub   *store.Hub
	reads int
}

func newMemStream(ct string, data string) *memStream {
	m := &memStream{st: stream(1, "/v1/s", ct, int64(len(data))), data: []byte(data), hub: store.NewHub()}
	return m
}

func (m *memStream) fake(t *testing.T) *fakeStore {
	return &fakeStore{t: t, read: m.read, get: m.get, notifier: m.hub}
}

func (m *memStream) read(p *store.StreamReadParams) (*store.StreamReadResult, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.reads++
	from := max(p.From, 0)
	if from > int64(len(m.data)) {
		return nil, store.ErrPositionBeyondTail
	}
	end := min(int64(len(m.data)), from+int64(p.MaxBytes))
	return &store.StreamReadResult{Stream: m.st, Data: bytes.Clone(m.data[from:end]), Next: end}, nil
}

func (m *memStream) get(*store.StreamGetParams) (*store.Stream, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	st := m.st
	return &st, nil
}

// add appends data and/or closes, then publishes the change.
func (m *memStream) add(data string, close bool) {
	m.mu.Lock()
	m.data = append(m.data, data...)
	m.st.Tail = int64(len(m.data))
	m.st.Closed = m.st.Closed || close
	c := store.TailChange{StreamID: m.st.ID, Path: m.st.Path, Tail: m.st.Tail, Closed: m.st.Closed}
	m.mu.Unlock()
	m.hub.Publish(c)
}

// serveAsync serves a request on its own goroutine; the returned channel
// yields the response when the handler returns.
func serveAsync(s http.Handler, target string) <-chan *httptest.ResponseRecorder {
	done := make(chan *httptest.ResponseRecorder, 1)
	go func() {
		w := httptest.NewRecorder()
		s.ServeHTTP(w, httptest.NewRequest("GET", target, nil))
		done <- w
	}()
	return done
}

// returned reports whether a response is ready, without waiting.
func returned(done <-chan *httptest.ResponseRecorder) (*httptest.ResponseRecorder, bool) {
	select {
	case w := <-done:
		return w, true
	default:
		return nil, false
	}
}

func TestLongPollReturnsExistingDataAtOnce(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		m := newMemStream("text/plain", "existing")
		w := do(newTestServer(m.fake(t), Config{}), "GET", "/v1/s?offset=-1&live=long-poll", nil, nil)
		if w.Code != http.StatusOK || w.Body.String() != "existing" || w.Header().Get("Stream-Up-To-Date") != "true" {
			t.Errorf("long-poll = %d %q %v", w.Code, w.Body, w.Header())
		}
		if _, err := strconv.ParseInt(w.Header().Get("Stream-Cursor"), 10, 64); err != nil {
			t.Errorf("Stream-Cursor %q is not a number", w.Header().Get("Stream-Cursor"))
		}
	})
}

func TestLongPollWaitsForAppend(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		m := newMemStream("text/plain", "old")
		s := newTestServer(m.fake(t), Config{LongPollTimeout: time.Minute})
		done := serveAsync(s, "/v1/s?offset="+protocol.FormatOffset(3)+"&live=long-poll")
		synctest.Wait()
		if _, ok := returned(done); ok {
			t.Fatal("long-poll at the tail returned before any append")
		}
		m.add("new", false)
		w := <-done
		if w.Code != http.StatusOK || w.Body.String() != "new" || w.Header().Get("Stream-Next-Offset") != protocol.FormatOffset(6) {
			t.Errorf("woken long-poll = %d %q %v", w.Code, w.Body, w.Header())
		}
	})
}

func TestLongPollOffsetNowWaitsForNewData(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		m := newMemStream("text/plain", "historical")
		s := newTestServer(m.fake(t), Config{LongPollTimeout: time.Minute})
		done := serveAsync(s, "/v1/s?offset=now&live=long-poll")
		synctest.Wait()
		m.add("fresh", false)
		if w := <-done; w.Code != http.StatusOK || w.Body.String() != "fresh" {
			t.Errorf("offset=now long-poll = %d %q", w.Code, w.Body)
		}
	})
}

func TestLongPollTimesOut(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		m := newMemStream("text/plain", "abc")
		s := newTestServer(m.fake(t), Config{LongPollTimeout: 2 * time.Second})
		start := time.Now()
		done := serveAsync(s, "/v1/s?offset="+protocol.FormatOffset(3)+"&live=long-poll&cursor=1")
		w := <-done
		if waited := time.Since(start); waited != 2*time.Second {
			t.Errorf("long-poll answered after %v, want the 2s timeout", waited)
		}
		h := w.Header()
		if w.Code != http.StatusNoContent || h.Get("Stream-Next-Offset") != protocol.FormatOffset(3) || h.Get("Stream-Up-To-Date") != "true" ||
			h.Get("Stream-Closed") != "" || h.Get("Cache-Control") != "no-store" {
			t.Errorf("timeout = %d %v", w.Code, h)
		}
		if _, err := strconv.ParseInt(h.Get("Stream-Cursor"), 10, 64); err != nil {
			t.Errorf("Stream-Cursor %q is not a number", h.Get("Stream-Cursor"))
		}
	})
}

func TestLongPollClosedAtTailAnswersAtOnce(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		m := newMemStream("text/plain", "abc")
		m.add("", true)
		s := newTestServer(m.fake(t), Config{LongPollTimeout: time.Minute})
		for _, off := range []string{protocol.FormatOffset(3), "now"} {
			start := time.Now()
			w := do(s, "GET", "/v1/s?offset="+off+"&live=long-poll", nil, nil)
			if time.Since(start) != 0 || w.Code != http.StatusNoContent || w.Header().Get("Stream-Closed") != "true" || w.Header().Get("Stream-Up-To-Date") != "true" {
				t.Errorf("offset %s: %d %v after %v", off, w.Code, w.Header(), time.Since(start))
			}
		}
	})
}

func TestLongPollWokenByClose(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		m := newMemStream("text/plain", "abc")
		s := newTestServer(m.fake(t), Config{LongPollTimeout: time.Minute})
		done := serveAsync(s, "/v1/s?offset="+protocol.FormatOffset(3)+"&live=long-poll")
		synctest.Wait()
		m.add("", true)
		if w := <-done; w.Code != http.StatusNoContent || w.Header().Get("Stream-Closed") != "true" {
			t.Errorf("closed while waiting = %d %v", w.Code, w.Header())
		}
	})
}

// Long-polls of one stream share the notifier's one channel: a single
// append wakes them all, and each reads once more.
func TestManyLongPollsShareOneWake(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		m := newMemStream("text/plain", "")
		s := newTestServer(m.fake(t), Config{LongPollTimeout: time.Minute})
		const n = 200
		var dones []<-chan *httptest.ResponseRecorder
		for range n {
			dones = append(dones, serveAsync(s, "/v1/s?offset=-1&live=long-poll"))
		}
		synctest.Wait()
		m.mu.Lock()
		readsBefore := m.reads
		m.mu.Unlock()
		m.add("x", false)
		for _, done := range dones {
			if w := <-done; w.Code != http.StatusOK || w.Body.String() != "x" {
				t.Fatalf("long-poll = %d %q", w.Code, w.Body)
			}
		}
		if extra := m.reads - readsBefore; extra != n {
			t.Errorf("one append cost %d reads for %d long-polls", extra, n)
		}
	})
}

func TestShutdownEndsLiveReads(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		m := newMemStream("text/plain", "abc")
		s := newTestServer(m.fake(t), Config{LongPollTimeout: time.Minute, SSEMaxDuration: time.Hour})
		poll := serveAsync(s, "/v1/s?offset="+protocol.FormatOffset(3)+"&live=long-poll")
		sse := serveAsync(s, "/v1/s?offset=-1&live=sse")
		synctest.Wait()
		start := time.Now()
		s.Shutdown()
		w := <-poll
		if w.Code != http.StatusNoContent || w.Header().Get("Stream-Up-To-Date") != "true" {
			t.Errorf("long-poll at shutdown = %d %v", w.Code, w.Header())
		}
		if w := <-sse; !strings.Contains(w.Body.String(), "data:abc") {
			t.Errorf("SSE at shutdown = %q", w.Body)
		}
		if time.Since(start) != 0 {
			t.Errorf("live reads took %v to end", time.Since(start))
		}
		// No new live reads; catch-up reads still work.
		expectError(t, do(s, "GET", "/v1/s?offset=-1&live=long-poll", nil, nil), http.StatusServiceUnavailable, "SHUTTING_DOWN")
		expectError(t, do(s, "GET", "/v1/s?offset=-1&live=sse", nil, nil), http.StatusServiceUnavailable, "SHUTTING_DOWN")
		if w := do(s, "GET", "/v1/s", nil, nil); w.Code != http.StatusOK {
			t.Errorf("catch-up after shutdown = %d", w.Code)
		}
	})
}

// sseEvent is one parsed SSE event.
type sseEvent struct{ typ, data string }

// parseSSE parses an SSE body as a reader does: data lines joined by LF,
// one leading space after "data:" dropped.
func parseSSE(t *testing.T, body string) []sseEvent {
	t.Helper()
	if !strings.HasSuffix(body, "\n\n") {
		t.Errorf("SSE body does not end with a complete event: %q", body)
	}
	var events []sseEvent
	for _, block := range strings.Split(strings.TrimSuffix(body, "\n\n"), "\n\n") {
		var ev sseEvent
		var data []string
		for _, line := range strings.Split(block, "\n") {
			switch {
			case strings.HasPrefix(line, "event: "):
				ev.typ = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "data:"):
				data = append(data, strings.TrimPrefix(strings.TrimPrefix(line, "data:"), " "))
			case strings.HasPrefix(line, ":"):
				// A comment (keep-alive): clients ignore it.
				ev.typ = "comment"
			default:
				t.Errorf("unexpected SSE line %q", line)
			}
		}
		ev.data = strings.Join(data, "\n")
		if ev.typ == "comment" {
			continue
		}
		events = append(events, ev)
	}
	return events
}

func TestSSECatchUpThenClose(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		m := newMemStream("text/plain", "line1\nline2")
		m.add("", true)
		w := do(newTestServer(m.fake(t), Config{MaxReadBytes: 6}), "GET", "/v1/s?offset=-1&live=sse", nil, nil)
		if w.Code != http.StatusOK || w.Header().Get("Content-Type") != "text/event-stream" || w.Header().Get("Cache-Control") != "no-cache" ||
			w.Header().Get("Stream-SSE-Data-Encoding") != "" || w.Header().Get("Content-Length") != "" {
			t.Fatalf("SSE = %d %v", w.Code, w.Header())
		}
		got := parseSSE(t, w.Body.String())
		want := []sseEvent{
			{"data", "line1\n"},
			{"control", `{"streamNextOffset":"` + protocol.FormatOffset(6) + `","streamCursor":"CURSOR"}`},
			{"data", "line2"},
			{"control", `{"streamNextOffset":"` + protocol.FormatOffset(11) + `","upToDate":true,"streamClosed":true}`},
		}
		if len(got) != len(want) {
			t.Fatalf("events = %q", got)
		}
		for i := range want {
			if i == 1 {
				// The cursor varies with the clock; check it is a number.
				c := got[i].data
				start := strings.Index(c, `"streamCursor":"`) + len(`"streamCursor":"`)
				end := strings.Index(c[start:], `"`) + start
				if _, err := strconv.Atoi(c[start:end]); err != nil {
					t.Errorf("cursor in %q", c)
				}
				got[i].data = c[:start] + "CURSOR" + c[end:]
			}
			if got[i] != want[i] {
				t.Errorf("event %d = %q, want %q", i, got[i], want[i])
			}
		}
	})
}

func TestSSEFollowsAppends(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		m := newMemStream("application/json", "")
		s := newTestServer(m.fake(t), Config{SSEMaxDuration: time.Minute})
		done := serveAsync(s, "/v1/s?offset=now&live=sse")
		synctest.Wait()
		m.add("{\"n\":1}\n{\"n\":2}\n", false)
		synctest.Wait()
		m.add("", true)
		w := <-done
		got := parseSSE(t, w.Body.String())
		if len(got) != 4 || got[0].typ != "control" || !strings.Contains(got[0].data, `"upToDate":true`) ||
			got[1] != (sseEvent{"data", `[{"n":1},{"n":2}]`}) || got[2].typ != "control" || !strings.Contains(got[3].data, `"streamClosed":true`) ||
			strings.Contains(got[3].data, "streamCursor") {
			t.Errorf("events = %q", got)
		}
	})
}

func TestSSEBase64AndMaxDuration(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		m := newMemStream("application/octet-stream", "Hello")
		s := newTestServer(m.fake(t), Config{SSEMaxDuration: 60 * time.Second})
		start := time.Now()
		w := <-serveAsync(s, "/v1/s?offset=-1&live=sse")
		if time.Since(start) != 60*time.Second {
			t.Errorf("SSE ended after %v, want 60s", time.Since(start))
		}
		got := parseSSE(t, w.Body.String())
		if w.Header().Get("Stream-SSE-Data-Encoding") != "base64" || len(got) != 2 || got[0] != (sseEvent{"data", "SGVsbG8="}) {
			t.Errorf("base64 SSE = %v %q", w.Header(), got)
		}
	})
}

func TestSSEEndsWhenStreamDeleted(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		m := newMemStream("text/plain", "abc")
		f := m.fake(t)
		s := newTestServer(f, Config{SSEMaxDuration: time.Hour})
		done := serveAsync(s, "/v1/s?offset=-1&live=sse")
		synctest.Wait()
		m.mu.Lock()
		f.read = func(*store.StreamReadParams) (*store.StreamReadResult, error) { return nil, store.ErrNotFound }
		m.mu.Unlock()
		m.hub.Publish(store.TailChange{StreamID: 1, Deleted: true})
		if w := <-done; len(parseSSE(t, w.Body.String())) != 2 {
			t.Errorf("SSE body = %q", w.Body)
		}
	})
}

func TestSSEKeepAliveOnIdleResponse(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		m := newMemStream("text/plain", "x")
		s := newTestServer(m.fake(t), Config{SSEMaxDuration: 50 * time.Second, SSEKeepAlive: 15 * time.Second})
		w := <-serveAsync(s, "/v1/s?offset=-1&live=sse")
		// 50 s idle after the first events: comments at 15, 30 and 45 s.
		if n := strings.Count(w.Body.String(), ": keep-alive\n\n"); n != 3 {
			t.Errorf("%d keep-alive comments in %q, want 3", n, w.Body.String())
		}
		if got := parseSSE(t, w.Body.String()); len(got) != 2 || got[0] != (sseEvent{"data", "x"}) {
			t.Errorf("events = %q", got)
		}
	})
}
