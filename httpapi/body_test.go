package httpapi

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/heraldstreams/herald/store"
)

// TestBodiesOfEverySize: bodies around every buffer size the reader
// grows through arrive byte-exact, announced or chunked, and give back
// their budget.
func TestBodiesOfEverySize(t *testing.T) {
	t.Parallel()
	const maxBody = 300 << 10
	var got *store.StreamAppendParams
	s := newTestServer(appendStore(t, &got, &store.StreamAppendResult{Stream: stream(1, "/v1/s", "application/octet-stream", 5)}), Config{MaxBodyBytes: maxBody})
	for _, n := range []int{1, firstBodyChunk - 1, firstBodyChunk, firstBodyChunk + 1, 16<<10 + 7, 64 << 10, maxBody} {
		body := bytes.Repeat([]byte("0123456789abcdef"), n/16+1)[:n]
		for _, chunked := range []bool{false, true} {
			// Pieces of 1000 bytes, so that the reader sees many reads.
			var pieces []io.Reader
			for rest := body; len(rest) > 0; rest = rest[min(len(rest), 1000):] {
				pieces = append(pieces, bytes.NewReader(rest[:min(len(rest), 1000)]))
			}
			r := httptest.NewRequest("POST", "/v1/s", io.MultiReader(pieces...))
			r.Header.Set("Content-Type", "application/octet-stream")
			if chunked {
				r.ContentLength = -1
			}
			w := httptest.NewRecorder()
			s.ServeHTTP(w, r)
			if w.Code != http.StatusNoContent || !bytes.Equal(got.Data, body) {
				t.Fatalf("%d bytes (chunked %v): %d, %d bytes stored", n, chunked, w.Code, len(got.Data))
			}
			if used := s.bodies.used.Load(); used != 0 {
				t.Fatalf("%d bytes (chunked %v): %d bytes of budget still charged", n, chunked, used)
			}
		}
	}
	r := httptest.NewRequest("POST", "/v1/s", strings.NewReader(strings.Repeat("x", maxBody+1)))
	r.ContentLength = -1
	r.Header.Set("Content-Type", "application/octet-stream")
	w := httptest.NewRecorder()
	s.ServeHTTP(w, r)
	expectError(t, w, http.StatusRequestEntityTooLarge, "PAYLOAD_TOO_LARGE")
	if used := s.bodies.used.Load(); used != 0 {
		t.Fatalf("after a body too large: %d bytes of budget still charged", used)
	}
}

// TestBodyBudgetRefuses: a body that does not fit the budget left is a
// 503 SERVER_BUSY with Retry-After, that never reaches the store and
// holds no budget afterwards.
func TestBodyBudgetRefuses(t *testing.T) {
	t.Parallel()
	s := newTestServer(&fakeStore{t: t}, Config{MaxBodyBytes: 1 << 20, MaxBufferedBytes: 64 << 10})
	s.bodies.used.Store(60 << 10) // other requests hold most of it
	w := do(s, "POST", "/v1/s", strings.NewReader(strings.Repeat("x", 10<<10)), map[string]string{"Content-Type": "text/plain"})
	expectError(t, w, http.StatusServiceUnavailable, "SERVER_BUSY")
	if w.Header().Get("Retry-After") != "1" {
		t.Errorf("Retry-After = %q, want 1", w.Header().Get("Retry-After"))
	}
	if used, refused := s.bodies.used.Load(), s.bodies.refusals.Load(); used != 60<<10 || refused != 1 {
		t.Errorf("budget used %d, refusals %d; want 61440 and 1", used, refused)
	}
}

// TestStoredHeadersAreCapped: Stream-Seq over the cap is refused before
// the body is read or the store is asked.
func TestStoredHeadersAreCapped(t *testing.T) {
	t.Parallel()
	s := newTestServer(&fakeStore{t: t}, Config{})
	w := do(s, "POST", "/v1/s", strings.NewReader("x"), map[string]string{"Content-Type": "text/plain", "Stream-Seq": strings.Repeat("1", 257)})
	expectError(t, w, http.StatusBadRequest, "HEADER_TOO_LONG")
	if !strings.Contains(w.Body.String(), "Stream-Seq must be at most 256 bytes long") {
		t.Errorf("body = %s", w.Body)
	}
}

// resettableBody is a request body a test can refill without allocating.
type resettableBody struct{ bytes.Reader }

func (*resettableBody) Close() error { return nil }

// TestReadBodyAllocatesOnce: a small append's body costs one allocation,
// its buffer, as before there was a budget.
func TestReadBodyAllocatesOnce(t *testing.T) {
	s := newTestServer(&fakeStore{t: t}, Config{})
	data := bytes.Repeat([]byte("x"), 1000)
	body := &resettableBody{}
	r := httptest.NewRequest("POST", "/v1/s", nil)
	r.ContentLength = int64(len(data))
	var d bodyDeadline
	allocs := testing.AllocsPerRun(100, func() {
		body.Reset(data)
		r.Body = body
		b, err := s.readBody(r, &d)
		if err != nil || len(b) != len(data) {
			t.Fatalf("readBody = %d bytes, %v", len(b), err)
		}
		s.releaseBody(b)
	})
	if allocs != 1 {
		t.Errorf("readBody of %d bytes allocated %v times, want 1", len(data), allocs)
	}
}
