package httpapi

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/heraldstreams/herald/store"
)

// fakeStore is a store.Store whose methods are function fields. A call to
// a method whose field is nil fails the test: the handler was not meant to
// reach the store.
type fakeStore struct {
	// SubscriptionStore is nil: the stream handlers never use it, and a
	// call through it panics, failing the test.
	store.SubscriptionStore
	// DSSubscriptionStore and SigningKeyStore are nil for the same
	// reason.
	store.DSSubscriptionStore
	store.SigningKeyStore
	// DeliveryStore is nil for the same reason.
	store.DeliveryStore
	// KeyStore is nil for the same reason.
	store.KeyStore
	// LeaseStore is nil for the same reason.
	store.LeaseStore
	// EventTypeStore is nil for the same reason.
	store.EventTypeStore
	// ReplicaStore is nil for the same reason.
	store.ReplicaStore
	// StreamChangeStore is nil for the same reason.
	store.StreamChangeStore
	t        *testing.T
	create   func(*store.StreamCreateParams) (*store.StreamCreateResult, error)
	append   func(*store.StreamAppendParams) (*store.StreamAppendResult, error)
	get      func(*store.StreamGetParams) (*store.Stream, error)
	read     func(*store.StreamReadParams) (*store.StreamReadResult, error)
	delete   func(*store.StreamDeleteParams) error
	notifier store.Notifier
}

var _ store.Store = (*fakeStore)(nil)

// Peers implements store.Store: the fake is one handle's alone.
func (f *fakeStore) Peers() bool { return false }

func (f *fakeStore) unexpected(method string) {
	f.t.Helper()
	f.t.Errorf("unexpected store call %s", method)
}

func (f *fakeStore) StreamCreate(_ context.Context, p *store.StreamCreateParams) (*store.StreamCreateResult, error) {
	if f.create == nil {
		f.unexpected("StreamCreate")
		return nil, store.ErrClosedStore
	}
	return f.create(p)
}

func (f *fakeStore) StreamAppend(_ context.Context, p *store.StreamAppendParams) (*store.StreamAppendResult, error) {
	if f.append == nil {
		f.unexpected("StreamAppend")
		return nil, store.ErrClosedStore
	}
	return f.append(p)
}

func (f *fakeStore) StreamGet(_ context.Context, p *store.StreamGetParams) (*store.Stream, error) {
	if f.get == nil {
		f.unexpected("StreamGet")
		return nil, store.ErrClosedStore
	}
	return f.get(p)
}

func (f *fakeStore) StreamRead(_ context.Context, p *store.StreamReadParams) (*store.StreamReadResult, error) {
	if f.read == nil {
		f.unexpected("StreamRead")
		return nil, store.ErrClosedStore
	}
	return f.read(p)
}

func (f *fakeStore) StreamDelete(_ context.Context, p *store.StreamDeleteParams) error {
	if f.delete == nil {
		f.unexpected("StreamDelete")
		return store.ErrClosedStore
	}
	return f.delete(p)
}

func (f *fakeStore) StreamDeleteExpired(context.Context, *store.StreamDeleteExpiredParams) (int, error) {
	f.unexpected("StreamDeleteExpired")
	return 0, nil
}

func (f *fakeStore) Notifier() store.Notifier {
	if f.notifier == nil {
		f.unexpected("Notifier")
		return store.NewHub()
	}
	return f.notifier
}

func (f *fakeStore) Close() error { return nil }

// testNow is the clock of every test server.
var testNow = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)

// newTestServer returns a Server on f with a pinned clock.
func newTestServer(f *fakeStore, cfg Config) *Server {
	cfg.Store = f
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = func() time.Time { return testNow }
	}
	return New(cfg)
}

// do serves one request and returns the recorded response.
// jsonHeader is the header of a request with a JSON body.
var jsonHeader = map[string]string{"Content-Type": "application/json"}

func do(s http.Handler, method, target string, body io.Reader, headers map[string]string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(method, target, body)
	for k, v := range headers {
		r.Header.Set(k, v)
	}
	w := httptest.NewRecorder()
	s.ServeHTTP(w, r)
	return w
}

// errorCode returns the code of a JSON error body, failing the test when
// the body is not one.
func errorCode(t *testing.T, w *httptest.ResponseRecorder) string {
	t.Helper()
	if ct := w.Header().Get("Content-Type"); ct != "application/json" {
		t.Errorf("error Content-Type = %q, want application/json", ct)
	}
	var body errorBody
	if err := json.Unmarshal(w.Body.Bytes(), &body); err != nil {
		t.Fatalf("error body %q is not JSON: %v", w.Body.String(), err)
	}
	if body.Error.Code == "" || body.Error.Message == "" {
		t.Errorf("error body %q lacks a code or message", w.Body.String())
	}
	return body.Error.Code
}

// expectError checks an error response's status and code.
func expectError(t *testing.T, w *httptest.ResponseRecorder, status int, code string) {
	t.Helper()
	if w.Code != status {
		t.Errorf("status = %d, want %d (body %s)", w.Code, status, strings.TrimSpace(w.Body.String()))
	}
	if got := errorCode(t, w); got != code {
		t.Errorf("code = %s, want %s", got, code)
	}
}

// stream returns a Stream value for tests.
func stream(id int64, path, ct string, tail int64) store.Stream {
	return store.Stream{ID: id, Path: path, ContentType: ct, Tail: tail, CreatedAt: testNow, AccessedAt: testNow}
}

// discardLogger is a logger for tests that provoke logged errors.
func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }
