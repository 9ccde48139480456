package httpapi

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/heraldstreams/herald/protocol"
	"github.com/heraldstreams/herald/store"
)

func TestCatchUp(t *testing.T) {
	t.Parallel()
	var got *store.StreamReadParams
	st := stream(9, "/v1/s", "text/plain", 11)
	f := &fakeStore{t: t, read: func(p *store.StreamReadParams) (*store.StreamReadResult, error) {
		got = p
		return &store.StreamReadResult{Stream: st, Data: []byte("hello world"), Next: 11}, nil
	}}
	s := newTestServer(f, Config{MaxReadBytes: 1234})
	w := do(s, "GET", "/v1/s", nil, nil)
	h := w.Header()
	if w.Code != http.StatusOK || w.Body.String() != "hello world" || got.From != -1 || got.MaxBytes != 1234 || !got.Now.Equal(testNow) {
		t.Fatalf("GET = %d %q, params %+v", w.Code, w.Body, got)
	}
	if h.Get("Content-Type") != "text/plain" || h.Get("Stream-Next-Offset") != protocol.FormatOffset(11) || h.Get("Stream-Up-To-Date") != "true" ||
		h.Get("Stream-Closed") != "" || h.Get("ETag") != `"9:0:11"` || h.Get("Cache-Control") != "public, max-age=60, stale-while-revalidate=300" ||
		h.Get("Content-Length") != "11" || h.Get("Stream-Cursor") != "" {
		t.Errorf("headers = %v", h)
	}
	// The ETag answers a repeat request with 304 and no body.
	w = do(s, "GET", "/v1/s?offset=-1", nil, map[string]string{"If-None-Match": `"9:0:11"`})
	if w.Code != http.StatusNotModified || w.Body.Len() != 0 {
		t.Errorf("If-None-Match = %d %q", w.Code, w.Body)
	}
	if w = do(s, "GET", "/v1/s", nil, map[string]string{"If-None-Match": `"wrong-etag"`}); w.Code != http.StatusOK {
		t.Errorf("non-matching If-None-Match = %d", w.Code)
	}
	do(s, "GET", "/v1/s?offset="+protocol.FormatOffset(3)+"&foo=bar", nil, nil)
	if got.From != 3 {
		t.Errorf("read from %d, want 3", got.From)
	}
}

func TestCatchUpPartialAndClosed(t *testing.T) {
	t.Parallel()
	st := stream(9, "/v1/s", "application/json", 20)
	st.Closed = true
	res := &store.StreamReadResult{Stream: st, Data: []byte("1\n2\n"), Next: 4}
	f := &fakeStore{t: t, read: func(*store.StreamReadParams) (*store.StreamReadResult, error) { return res, nil }}
	s := newTestServer(f, Config{})
	// More data follows: neither up to date nor closed yet.
	w := do(s, "GET", "/v1/s", nil, nil)
	if w.Body.String() != "[1,2]" || w.Header().Get("Stream-Up-To-Date") != "" || w.Header().Get("Stream-Closed") != "" {
		t.Errorf("partial read = %q %v", w.Body, w.Header())
	}
	// The final chunk carries the closure, and a closure-specific ETag.
	res.Next = 20
	w = do(s, "GET", "/v1/s?offset="+protocol.FormatOffset(16), nil, nil)
	if w.Header().Get("Stream-Up-To-Date") != "true" || w.Header().Get("Stream-Closed") != "true" || w.Header().Get("ETag") != `"9:16:20:c"` {
		t.Errorf("final read headers = %v", w.Header())
	}
	// EOF at the tail: an empty array, closed, and cacheable.
	res.Data = nil
	w = do(s, "GET", "/v1/s?offset="+protocol.FormatOffset(20), nil, nil)
	if w.Code != http.StatusOK || w.Body.String() != "[]" || w.Header().Get("Stream-Closed") != "true" || !strings.HasPrefix(w.Header().Get("Cache-Control"), "public") {
		t.Errorf("EOF read = %d %q %v", w.Code, w.Body, w.Header())
	}
	// The tail of an open stream changes with the next append: not cached.
	res.Stream.Closed = false
	w = do(s, "GET", "/v1/s?offset="+protocol.FormatOffset(20), nil, nil)
	if w.Header().Get("Stream-Up-To-Date") != "true" || w.Header().Get("Cache-Control") != "no-store" {
		t.Errorf("open tail read headers = %v", w.Header())
	}
}

func TestCatchUpOffsetNow(t *testing.T) {
	t.Parallel()
	st := stream(9, "/v1/s", "application/json", 20)
	var readFrom int64
	f := &fakeStore{t: t,
		get: func(*store.StreamGetParams) (*store.Stream, error) { return &st, nil },
		read: func(p *store.StreamReadParams) (*store.StreamReadResult, error) {
			readFrom = p.From
			return &store.StreamReadResult{Stream: st, Next: p.From}, nil
		},
	}
	w := do(newTestServer(f, Config{}), "GET", "/v1/s?offset=now", nil, nil)
	h := w.Header()
	// The read (which resets a sliding TTL) starts at the tail.
	if w.Code != http.StatusOK || w.Body.String() != "[]" || readFrom != 20 || h.Get("Stream-Next-Offset") != protocol.FormatOffset(20) ||
		h.Get("Stream-Up-To-Date") != "true" || h.Get("Cache-Control") != "no-store" || h.Get("ETag") != "" || h.Get("Stream-Closed") != "" {
		t.Errorf("offset=now = %d %q %v", w.Code, w.Body, h)
	}
	st.ContentType, st.Closed = "text/plain", true
	w = do(newTestServer(f, Config{}), "GET", "/v1/s?offset=now", nil, nil)
	if w.Body.Len() != 0 || w.Header().Get("Stream-Closed") != "true" {
		t.Errorf("offset=now on a closed stream = %q %v", w.Body, w.Header())
	}
}

func TestReadRejectsBadParametersWithoutReading(t *testing.T) {
	t.Parallel()
	s := newTestServer(&fakeStore{t: t}, Config{})
	cases := []struct{ query, code string }{
		{"offset=", "INVALID_OFFSET"},
		{"offset=0,1", "INVALID_OFFSET"},
		{"offset=0%201", "INVALID_OFFSET"},
		{"offset=..%2Fx", "INVALID_OFFSET"},
		{"offset=a&offset=b", "INVALID_OFFSET"},
		{"offset=-1&offset=-1", "INVALID_OFFSET"},
		{"live=long-poll", "OFFSET_REQUIRED"},
		{"live=sse", "OFFSET_REQUIRED"},
		{"offset=-1&live=forever", "INVALID_LIVE_MODE"},
	}
	for _, c := range cases {
		expectError(t, do(s, "GET", "/v1/s?"+c.query, nil, nil), http.StatusBadRequest, c.code)
	}
}

func TestReadStoreErrors(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		err    error
		status int
		code   string
	}{
		{store.ErrNotFound, http.StatusNotFound, "STREAM_NOT_FOUND"},
		{store.ErrStreamGone, http.StatusGone, "STREAM_GONE"},
		{store.ErrPositionBeyondTail, http.StatusBadRequest, "OFFSET_BEYOND_TAIL"},
	} {
		f := &fakeStore{t: t, read: func(*store.StreamReadParams) (*store.StreamReadResult, error) { return nil, c.err }}
		for _, q := range []string{"", "?offset=-1&live=long-poll", "?offset=-1&live=sse"} {
			f.notifier = store.NewHub()
			expectError(t, do(newTestServer(f, Config{}), "GET", "/v1/s"+q, nil, nil), c.status, c.code)
		}
	}
}

func TestCacheControl(t *testing.T) {
	t.Parallel()
	now := testNow
	st := stream(1, "/s", "text/plain", 1)
	if got := cacheControl(&st, false, now); got != "no-store" {
		t.Errorf("unstable = %q", got)
	}
	if got := cacheControl(&st, true, now); got != "public, max-age=60, stale-while-revalidate=300" {
		t.Errorf("no expiry = %q", got)
	}
	st.ExpiresAt = now.Add(10 * time.Second)
	if got := cacheControl(&st, true, now); got != "public, max-age=10" {
		t.Errorf("expiring in 10s = %q", got)
	}
	st.ExpiresAt = now.Add(-time.Second)
	if got := cacheControl(&st, true, now); got != "public, max-age=0" {
		t.Errorf("expired = %q", got)
	}
	st.ExpiresAt = time.Time{}
	st.TTL, st.AccessedAt = time.Hour, now
	if got := cacheControl(&st, true, now); got != "public, max-age=60, stale-while-revalidate=300" {
		t.Errorf("TTL of an hour = %q", got)
	}
}

// A read takes offset, live and cursor from its query string as
// url.ParseQuery reads them: the first value of each, every offset
// counted, escapes undone, pairs that do not parse ignored.
func TestParseReadQueryReadsAsURLParseQuery(t *testing.T) {
	t.Parallel()
	for _, raw := range []string{
		"", "offset=-1", "offset=1&offset=2", "offset=now&live=sse&cursor=12", "live=long-poll&live=sse",
		"offset=0000000000000000_0000000000000005&live=long-poll&cursor=9&cursor=10",
		"off%73et=-1", "offset=%ZZ&offset=3", "offset=a;b&live=sse", "offset", "&&offset=&", "cursor=a+b%20c",
		"other=1&offset=2", "%ZZ=1&live=sse", "live=%73se",
	} {
		v, _ := url.ParseQuery(raw)
		q := parseReadQuery(raw)
		if q.offsets != len(v["offset"]) || q.offset != v.Get("offset") || q.live != v.Get("live") || q.cursor != v.Get("cursor") {
			t.Errorf("%q: %+v, url.ParseQuery %v", raw, q, v)
		}
	}
}
