package httpapi

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/heraldstreams/herald/store"
)

func TestCreate(t *testing.T) {
	t.Parallel()
	var got *store.StreamCreateParams
	f := &fakeStore{t: t, create: func(p *store.StreamCreateParams) (*store.StreamCreateResult, error) {
		got = p
		st := stream(1, p.Path, p.ContentType, int64(len(p.Data)))
		st.Closed = p.Closed
		return &store.StreamCreateResult{Stream: st, Created: true}, nil
	}}
	s := newTestServer(f, Config{})
	w := do(s, "PUT", "http://herald.test/v1/s", strings.NewReader(`[{"a": 1}, {"b": 2}]`), map[string]string{
		"Content-Type": "Application/JSON; charset=utf-8", "Stream-TTL": "3600", "Stream-Closed": "TRUE",
	})
	if w.Code != http.StatusCreated {
		t.Fatalf("status = %d: %s", w.Code, w.Body)
	}
	// The content type is kept as sent, parameters included; JSON mode
	// goes by its media type.
	want := store.StreamCreateParams{Path: "/v1/s", ContentType: "Application/JSON; charset=utf-8", TTL: time.Hour, Closed: true,
		Data: []byte("{\"a\":1}\n{\"b\":2}\n"), Messages: 2, ForkOffset: -1, Now: testNow}
	if got == nil || string(got.Data) != string(want.Data) || got.Messages != 2 || got.Path != want.Path || got.ContentType != want.ContentType ||
		got.TTL != want.TTL || !got.Closed || got.ForkSource != "" || got.ForkOffset != -1 || !got.Now.Equal(testNow) {
		t.Errorf("create params = %+v, want %+v", got, want)
	}
	h := w.Header()
	if h.Get("Location") != "http://herald.test/v1/s" || h.Get("Content-Type") != "Application/JSON; charset=utf-8" ||
		h.Get("Stream-Next-Offset") != "0000000000000000_0000000000000016" || h.Get("Stream-Closed") != "true" {
		t.Errorf("headers = %v", h)
	}
}

func TestCreateDefaultsAndIdempotence(t *testing.T) {
	t.Parallel()
	var got *store.StreamCreateParams
	f := &fakeStore{t: t, create: func(p *store.StreamCreateParams) (*store.StreamCreateResult, error) {
		got = p
		return &store.StreamCreateResult{Stream: stream(1, p.Path, p.ContentType, 0)}, nil
	}}
	s := newTestServer(f, Config{})
	w := do(s, "PUT", "/v1/s", nil, nil)
	if w.Code != http.StatusOK || got.ContentType != "application/octet-stream" || got.Closed || got.TTL != 0 {
		t.Errorf("existing stream: %d, params %+v", w.Code, got)
	}
	if w.Header().Get("Location") != "" || w.Header().Get("Stream-Closed") != "" {
		t.Errorf("200 headers = %v", w.Header())
	}
	// Only "true" closes; other values are ignored, not rejected.
	do(s, "PUT", "/v1/s", nil, map[string]string{"Stream-Closed": "yes", "Stream-Expires-At": "2030-01-02T03:04:05+01:00"})
	if got.Closed || !got.ExpiresAt.Equal(time.Date(2030, 1, 2, 2, 4, 5, 0, time.UTC)) {
		t.Errorf("params = %+v", got)
	}
	// An empty JSON array creates an empty stream.
	do(s, "PUT", "/v1/s", strings.NewReader("[]"), map[string]string{"Content-Type": "application/json"})
	if len(got.Data) != 0 || got.Messages != 0 {
		t.Errorf("empty array params = %+v", got)
	}
}

func TestCreateFork(t *testing.T) {
	t.Parallel()
	var got *store.StreamCreateParams
	f := &fakeStore{t: t,
		create: func(p *store.StreamCreateParams) (*store.StreamCreateResult, error) {
			got = p
			return &store.StreamCreateResult{Stream: stream(2, p.Path, "application/json", 10), Created: true}, nil
		},
		get: func(p *store.StreamGetParams) (*store.Stream, error) {
			if p.Path != "/v1/src" {
				t.Errorf("looked up %s", p.Path)
			}
			st := stream(1, p.Path, "application/json", 10)
			return &st, nil
		},
	}
	s := newTestServer(f, Config{})
	w := do(s, "PUT", "/v1/fork", strings.NewReader(`{"x":1}`), map[string]string{
		"Stream-Forked-From": "/v1/src", "Stream-Fork-Offset": "0000000000000000_0000000000000004", "Stream-Fork-Sub-Offset": "2",
	})
	if w.Code != http.StatusCreated {
		t.Fatalf("status %d: %s", w.Code, w.Body)
	}
	// No Content-Type: the fork inherits the source's, and the body is
	// framed as the source's type says.
	if got.ForkSource != "/v1/src" || got.ForkOffset != 4 || got.ForkSubOffset != 2 || got.ContentType != "" ||
		string(got.Data) != "{\"x\":1}\n" || got.Messages != 1 {
		t.Errorf("fork params = %+v", got)
	}
	if w.Header().Get("Stream-Forked-From") != "" || w.Header().Get("Content-Type") != "application/json" {
		t.Errorf("fork headers = %v", w.Header())
	}
	do(s, "PUT", "/v1/fork", nil, map[string]string{"Stream-Forked-From": "/v1/src", "Stream-Fork-Offset": "-1", "Content-Type": "text/plain"})
	if got.ForkOffset != 0 || got.ContentType != "text/plain" {
		t.Errorf("fork at -1 params = %+v", got)
	}
	do(s, "PUT", "/v1/fork", nil, map[string]string{"Stream-Forked-From": "/v1/src", "Stream-Fork-Sub-Offset": "0"})
	if got.ForkOffset != -1 || got.ForkSubOffset != 0 {
		t.Errorf("default fork params = %+v", got)
	}
}

func TestCreateRejectsBadHeadersWithoutStoring(t *testing.T) {
	t.Parallel()
	s := newTestServer(&fakeStore{t: t}, Config{MaxBodyBytes: 10})
	cases := []struct {
		headers map[string]string
		body    string
		code    string
	}{
		{map[string]string{"Stream-TTL": "3600", "Stream-Expires-At": "2030-01-02T03:04:05Z"}, "", "CONFLICTING_EXPIRY"},
		{map[string]string{"Stream-TTL": "abc"}, "", "INVALID_TTL"},
		{map[string]string{"Stream-TTL": "-1"}, "", "INVALID_TTL"},
		{map[string]string{"Stream-TTL": "00060"}, "", "INVALID_TTL"},
		{map[string]string{"Stream-Expires-At": "not-a-timestamp"}, "", "INVALID_EXPIRES_AT"},
		{map[string]string{"Content-Type": "nonsense"}, "", "INVALID_CONTENT_TYPE"},
		{map[string]string{"Content-Type": "application/json"}, "{ bad }", "INVALID_JSON"},
		{map[string]string{"Stream-Fork-Sub-Offset": "0"}, "", "INVALID_FORK_HEADERS"},
		{map[string]string{"Stream-Fork-Offset": "0000000000000000_0000000000000000"}, "", "INVALID_FORK_HEADERS"},
		{map[string]string{"Stream-Forked-From": "/v1/src", "Stream-Fork-Sub-Offset": "1"}, "", "INVALID_FORK_HEADERS"},
		{map[string]string{"Stream-Forked-From": "/v1/src", "Stream-Fork-Offset": "9999999999999999_9999999999999999"}, "", "INVALID_OFFSET"},
		{map[string]string{"Stream-Forked-From": "/v1/src", "Stream-Fork-Offset": "0000000000000000_0000000000000000", "Stream-Fork-Sub-Offset": "05"}, "", "INVALID_FORK_SUB_OFFSET"},
		{map[string]string{"Stream-Forked-From": "/v1/../etc"}, "", "INVALID_FORK_SOURCE"},
		{map[string]string{"Stream-Forked-From": "/_herald/x"}, "", "INVALID_FORK_SOURCE"},
		{map[string]string{"Stream-Forked-From": "http://elsewhere/v1/src"}, "", "INVALID_FORK_SOURCE"},
		{nil, "123456789ab", "PAYLOAD_TOO_LARGE"},
	}
	for _, c := range cases {
		w := do(s, "PUT", "/v1/s", strings.NewReader(c.body), c.headers)
		status := http.StatusBadRequest
		if c.code == "PAYLOAD_TOO_LARGE" {
			status = http.StatusRequestEntityTooLarge
		}
		expectError(t, w, status, c.code)
	}
}

func TestCreateStoreErrors(t *testing.T) {
	t.Parallel()
	cases := []struct {
		err    error
		status int
		code   string
	}{
		{store.ErrStreamExists, http.StatusConflict, "STREAM_EXISTS"},
		{store.ErrStreamGone, http.StatusConflict, "STREAM_GONE"}, // soft-deleted path: re-creation is a conflict
		{store.ErrNotFound, http.StatusNotFound, "STREAM_NOT_FOUND"},
		{store.ErrForkSourceGone, http.StatusConflict, "FORK_SOURCE_GONE"},
		{store.ErrContentTypeMismatch, http.StatusConflict, "CONTENT_TYPE_MISMATCH"},
		{store.ErrForkOffsetBeyondTail, http.StatusBadRequest, "FORK_OFFSET_BEYOND_TAIL"},
		{store.ErrForkSubOffset, http.StatusBadRequest, "INVALID_FORK_SUB_OFFSET"},
	}
	for _, c := range cases {
		f := &fakeStore{t: t, create: func(*store.StreamCreateParams) (*store.StreamCreateResult, error) { return nil, c.err }}
		expectError(t, do(newTestServer(f, Config{}), "PUT", "/v1/s", nil, nil), c.status, c.code)
	}
}

func TestHead(t *testing.T) {
	t.Parallel()
	f := &fakeStore{t: t, get: func(p *store.StreamGetParams) (*store.Stream, error) {
		st := stream(1, p.Path, "text/plain", 5)
		st.TTL = time.Hour
		st.ExpiresAt = time.Date(2030, 5, 6, 7, 8, 9, 123_456_789, time.UTC)
		st.Closed = true
		return &st, nil
	}}
	w := do(newTestServer(f, Config{}), "HEAD", "/v1/s", nil, nil)
	h := w.Header()
	if w.Code != http.StatusOK || h.Get("Content-Type") != "text/plain" || h.Get("Stream-Next-Offset") != "0000000000000000_0000000000000005" ||
		h.Get("Stream-TTL") != "3600" || h.Get("Stream-Expires-At") != "2030-05-06T07:08:09.123Z" || h.Get("Stream-Closed") != "true" ||
		h.Get("Cache-Control") != "no-store" || w.Body.Len() != 0 {
		t.Errorf("HEAD = %d %v %q", w.Code, h, w.Body)
	}
	f.get = func(*store.StreamGetParams) (*store.Stream, error) { return nil, store.ErrStreamGone }
	if w := do(newTestServer(f, Config{}), "HEAD", "/v1/s", nil, nil); w.Code != http.StatusGone || w.Body.Len() != 0 {
		t.Errorf("HEAD of a soft-deleted stream = %d %q", w.Code, w.Body)
	}
}

func TestDelete(t *testing.T) {
	t.Parallel()
	var deleted string
	f := &fakeStore{t: t, delete: func(p *store.StreamDeleteParams) error {
		deleted = p.Path
		return nil
	}}
	if w := do(newTestServer(f, Config{}), "DELETE", "/v1/s", nil, nil); w.Code != http.StatusNoContent || deleted != "/v1/s" {
		t.Errorf("DELETE = %d, deleted %q", w.Code, deleted)
	}
	f.delete = func(*store.StreamDeleteParams) error { return store.ErrStreamGone }
	expectError(t, do(newTestServer(f, Config{}), "DELETE", "/v1/s", nil, nil), http.StatusGone, "STREAM_GONE")
	f.delete = func(*store.StreamDeleteParams) error { return store.ErrNotFound }
	expectError(t, do(newTestServer(f, Config{}), "DELETE", "/v1/s", nil, nil), http.StatusNotFound, "STREAM_NOT_FOUND")
}
