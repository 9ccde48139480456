package httpapi

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/heraldstreams/herald/store"
)

// appendStore is a fake store whose append records its params and answers
// with res.
func appendStore(t *testing.T, got **store.StreamAppendParams, res *store.StreamAppendResult) *fakeStore {
	return &fakeStore{t: t, append: func(p *store.StreamAppendParams) (*store.StreamAppendResult, error) {
		*got = p
		return res, nil
	}}
}

func TestAppend(t *testing.T) {
	t.Parallel()
	var got *store.StreamAppendParams
	res := &store.StreamAppendResult{Stream: stream(1, "/v1/s", "application/json", 42), Outcome: store.Appended}
	s := newTestServer(appendStore(t, &got, res), Config{})
	w := do(s, "POST", "/v1/s", strings.NewReader(`[{"a":1},[2]]`), map[string]string{"Content-Type": "application/json", "Stream-Seq": "007"})
	if w.Code != http.StatusNoContent || w.Header().Get("Stream-Next-Offset") != "0000000000000000_0000000000000042" ||
		w.Header().Get("Stream-Closed") != "" || w.Header().Get("Producer-Epoch") != "" {
		t.Errorf("append = %d %v", w.Code, w.Header())
	}
	if got.Path != "/v1/s" || got.ContentType != "application/json" || string(got.Data) != "{\"a\":1}\n[2]\n" || got.Messages != 2 ||
		got.Seq != "007" || got.Close || got.Producer != nil || !got.Now.Equal(testNow) {
		t.Errorf("append params = %+v", got)
	}
	// Bytes of other types are stored as sent.
	do(s, "POST", "/v1/s", strings.NewReader("raw\x00bytes"), map[string]string{"Content-Type": " TEXT/plain; charset=utf-8"})
	if got.ContentType != "TEXT/plain; charset=utf-8" || string(got.Data) != "raw\x00bytes" || got.Messages != 0 {
		t.Errorf("text append params = %+v", got)
	}
}

func TestAppendWithProducer(t *testing.T) {
	t.Parallel()
	var got *store.StreamAppendParams
	res := &store.StreamAppendResult{Stream: stream(1, "/v1/s", "text/plain", 3), Outcome: store.Appended, ProducerEpoch: 2, ProducerSeq: 5}
	s := newTestServer(appendStore(t, &got, res), Config{})
	hdr := map[string]string{"Content-Type": "text/plain", "Producer-Id": "p1", "Producer-Epoch": "2", "Producer-Seq": "5"}
	w := do(s, "POST", "/v1/s", strings.NewReader("abc"), hdr)
	if w.Code != http.StatusOK || w.Header().Get("Producer-Epoch") != "2" || w.Header().Get("Producer-Seq") != "5" {
		t.Errorf("producer append = %d %v", w.Code, w.Header())
	}
	if *got.Producer != (store.Producer{ID: "p1", Epoch: 2, Seq: 5}) {
		t.Errorf("producer = %+v", got.Producer)
	}
	// A duplicate is 204, echoing the highest accepted seq.
	res.Outcome, res.ProducerSeq = store.Duplicate, 9
	w = do(s, "POST", "/v1/s", strings.NewReader("abc"), hdr)
	if w.Code != http.StatusNoContent || w.Header().Get("Producer-Seq") != "9" {
		t.Errorf("duplicate = %d %v", w.Code, w.Header())
	}
}

func TestCloseOnly(t *testing.T) {
	t.Parallel()
	var got *store.StreamAppendParams
	st := stream(1, "/v1/s", "application/json", 7)
	st.Closed = true
	s := newTestServer(appendStore(t, &got, &store.StreamAppendResult{Stream: st, Outcome: store.Closed}), Config{})
	// The Content-Type of an empty body is ignored, even a malformed one.
	w := do(s, "POST", "/v1/s", nil, map[string]string{"Stream-Closed": "true", "Content-Type": "not a type"})
	if w.Code != http.StatusNoContent || w.Header().Get("Stream-Closed") != "true" || w.Header().Get("Stream-Next-Offset") != "0000000000000000_0000000000000007" {
		t.Errorf("close = %d %v", w.Code, w.Header())
	}
	if !got.Close || got.ContentType != "" || len(got.Data) != 0 {
		t.Errorf("close params = %+v", got)
	}
}

func TestAppendRejectsBadRequestsWithoutAppending(t *testing.T) {
	t.Parallel()
	open := stream(1, "/v1/s", "application/json", 7)
	f := &fakeStore{t: t, get: func(*store.StreamGetParams) (*store.Stream, error) { return &open, nil }}
	s := newTestServer(f, Config{MaxBodyBytes: 16})
	cases := []struct {
		headers map[string]string
		body    string
		status  int
		code    string
	}{
		{map[string]string{"Content-Type": "application/json"}, "", http.StatusBadRequest, "EMPTY_BODY"},
		{nil, "data", http.StatusBadRequest, "MISSING_CONTENT_TYPE"},
		{map[string]string{"Content-Type": "bogus"}, "data", http.StatusBadRequest, "INVALID_CONTENT_TYPE"},
		{map[string]string{"Content-Type": "application/json"}, "{ bad }", http.StatusBadRequest, "INVALID_JSON"},
		{map[string]string{"Content-Type": "application/json"}, "[]", http.StatusBadRequest, "EMPTY_JSON_ARRAY"},
		{map[string]string{"Content-Type": "text/plain", "Producer-Id": "p"}, "x", http.StatusBadRequest, "INVALID_PRODUCER_HEADERS"},
		{map[string]string{"Content-Type": "text/plain", "Producer-Id": "", "Producer-Epoch": "0", "Producer-Seq": "0"}, "x", http.StatusBadRequest, "INVALID_PRODUCER_HEADERS"},
		{map[string]string{"Content-Type": "text/plain", "Producer-Id": "p", "Producer-Epoch": "1e3", "Producer-Seq": "0"}, "x", http.StatusBadRequest, "INVALID_PRODUCER_HEADERS"},
		{map[string]string{"Content-Type": "text/plain"}, strings.Repeat("x", 17), http.StatusRequestEntityTooLarge, "PAYLOAD_TOO_LARGE"},
	}
	for _, c := range cases {
		expectError(t, do(s, "POST", "/v1/s", strings.NewReader(c.body), c.headers), c.status, c.code)
	}
}

// A request that is wrong in several ways gets the error the protocol puts
// first: a missing stream, then a closed one, then the content type.
func TestAppendErrorPrecedence(t *testing.T) {
	t.Parallel()
	closed := stream(1, "/v1/s", "text/plain", 7)
	closed.Closed = true
	f := &fakeStore{t: t, get: func(*store.StreamGetParams) (*store.Stream, error) { return &closed, nil }}
	s := newTestServer(f, Config{})
	w := do(s, "POST", "/v1/s", strings.NewReader("{ bad }"), map[string]string{"Content-Type": "application/json"})
	expectError(t, w, http.StatusConflict, "STREAM_CLOSED")
	if w.Header().Get("Stream-Closed") != "true" || w.Header().Get("Stream-Next-Offset") != "0000000000000000_0000000000000007" {
		t.Errorf("closed headers = %v", w.Header())
	}
	closed.Closed = false
	expectError(t, do(s, "POST", "/v1/s", strings.NewReader("{ bad }"), map[string]string{"Content-Type": "application/json"}), http.StatusConflict, "CONTENT_TYPE_MISMATCH")
	expectError(t, do(s, "POST", "/v1/s", strings.NewReader("x"), nil), http.StatusBadRequest, "MISSING_CONTENT_TYPE")
	// The stream's type is compared by media type: parameters do not make
	// a mismatch, so the request's own error shows.
	json := stream(1, "/v1/s", "application/json; charset=utf-8", 7)
	f.get = func(*store.StreamGetParams) (*store.Stream, error) { return &json, nil }
	expectError(t, do(s, "POST", "/v1/s", strings.NewReader("{ bad }"), map[string]string{"Content-Type": "Application/JSON"}), http.StatusBadRequest, "INVALID_JSON")
	f.get = func(*store.StreamGetParams) (*store.Stream, error) { return nil, store.ErrNotFound }
	expectError(t, do(s, "POST", "/v1/s", nil, nil), http.StatusNotFound, "STREAM_NOT_FOUND")
	f.get = func(*store.StreamGetParams) (*store.Stream, error) { return nil, store.ErrStreamGone }
	expectError(t, do(s, "POST", "/v1/s", strings.NewReader("[]"), map[string]string{"Content-Type": "application/json"}), http.StatusGone, "STREAM_GONE")
}

func TestAppendStoreErrors(t *testing.T) {
	t.Parallel()
	cases := []struct {
		err     error
		status  int
		code    string
		headers map[string]string
	}{
		{&store.ClosedError{Tail: 12}, http.StatusConflict, "STREAM_CLOSED", map[string]string{"Stream-Closed": "true", "Stream-Next-Offset": "0000000000000000_0000000000000012"}},
		{&store.ProducerEpochStaleError{Current: 3}, http.StatusForbidden, "PRODUCER_EPOCH_STALE", map[string]string{"Producer-Epoch": "3"}},
		{&store.ProducerSeqGapError{Expected: 1, Received: 2}, http.StatusConflict, "PRODUCER_SEQ_GAP", map[string]string{"Producer-Expected-Seq": "1", "Producer-Received-Seq": "2"}},
		{store.ErrProducerEpochSeq, http.StatusBadRequest, "INVALID_PRODUCER_EPOCH_SEQ", nil},
		{store.ErrSeqRegression, http.StatusConflict, "SEQUENCE_CONFLICT", nil},
		{store.ErrContentTypeMismatch, http.StatusConflict, "CONTENT_TYPE_MISMATCH", nil},
		{store.ErrNotFound, http.StatusNotFound, "STREAM_NOT_FOUND", nil},
		{store.ErrStreamGone, http.StatusGone, "STREAM_GONE", nil},
		{store.ErrClosedStore, http.StatusServiceUnavailable, "UNAVAILABLE", nil},
		{io.ErrUnexpectedEOF, http.StatusInternalServerError, "INTERNAL", nil},
	}
	for _, c := range cases {
		f := &fakeStore{t: t, append: func(*store.StreamAppendParams) (*store.StreamAppendResult, error) { return nil, c.err }}
		w := do(newTestServer(f, Config{Logger: discardLogger()}), "POST", "/v1/s", strings.NewReader("x"), map[string]string{"Content-Type": "text/plain"})
		expectError(t, w, c.status, c.code)
		// Clients recognise a sequence conflict by these words.
		if c.code == "SEQUENCE_CONFLICT" || c.code == "PRODUCER_SEQ_GAP" {
			if !strings.Contains(w.Body.String(), "sequence conflict") {
				t.Errorf("%s body = %s, want the words \"sequence conflict\"", c.code, w.Body)
			}
		}
		for k, v := range c.headers {
			if got := w.Header().Get(k); got != v {
				t.Errorf("%v: %s = %q, want %q", c.err, k, got, v)
			}
		}
	}
}

func TestAppendChunkedBody(t *testing.T) {
	t.Parallel()
	var got *store.StreamAppendParams
	s := newTestServer(appendStore(t, &got, &store.StreamAppendResult{Stream: stream(1, "/v1/s", "text/plain", 5)}), Config{MaxBodyBytes: 8})
	r := httptest.NewRequest("POST", "/v1/s", io.MultiReader(strings.NewReader("ab"), strings.NewReader("cde")))
	r.ContentLength = -1
	r.Header.Set("Content-Type", "text/plain")
	w := httptest.NewRecorder()
	s.ServeHTTP(w, r)
	if w.Code != http.StatusNoContent || string(got.Data) != "abcde" {
		t.Errorf("chunked append = %d, data %q", w.Code, got.Data)
	}
	r = httptest.NewRequest("POST", "/v1/s", strings.NewReader("123456789"))
	r.ContentLength = -1
	r.Header.Set("Content-Type", "text/plain")
	w = httptest.NewRecorder()
	s.ServeHTTP(w, r)
	expectError(t, w, http.StatusRequestEntityTooLarge, "PAYLOAD_TOO_LARGE")
}

func TestErrorMessagesNameNoPackage(t *testing.T) {
	t.Parallel()
	f := &fakeStore{t: t, append: func(*store.StreamAppendParams) (*store.StreamAppendResult, error) { return nil, store.ErrNotFound }}
	w := do(newTestServer(f, Config{}), "POST", "/v1/s", strings.NewReader("x"), map[string]string{"Content-Type": "text/plain"})
	if !strings.Contains(w.Body.String(), `"message":"stream not found"`) {
		t.Errorf("body = %s", w.Body)
	}
}

// A stream in a tenant's namespace (under the configured prefix) holds
// only that tenant's events, whoever writes: with access control off too,
// a message naming another tenant there is refused and nothing stored.
func TestAppendInANamespaceNamesNoOtherTenant(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		path, body string
		status     int
	}{
		{"/orgs/acme/x", `{"type":"a","tenant":"globex"}`, http.StatusForbidden},
		{"/orgs/acme/x", `{"type":"a","tenant":"acme"}`, http.StatusNoContent},
		{"/orgs/acme/x", `{"type":"a"}`, http.StatusNoContent},
		// Not a namespace under this prefix: the platform's stream.
		{"/tenants/acme/x", `{"type":"a","tenant":"globex"}`, http.StatusNoContent},
	} {
		var got *store.StreamAppendParams
		res := &store.StreamAppendResult{Stream: stream(1, c.path, "application/json", 42), Outcome: store.Appended}
		s := newTestServer(appendStore(t, &got, res), Config{TenantStreamPrefix: "/orgs/{tenant}/"})
		w := do(s, "POST", c.path, strings.NewReader(c.body), map[string]string{"Content-Type": "application/json"})
		if w.Code != c.status {
			t.Errorf("%s %s: %d %s, want %d", c.path, c.body, w.Code, w.Body, c.status)
		}
		if c.status == http.StatusForbidden && (got != nil || errorCode(t, w) != "TENANT_FORBIDDEN") {
			t.Errorf("%s %s: stored %+v, code %q", c.path, c.body, got, errorCode(t, w))
		}
	}
}
