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

// discardWriter is a ResponseWriter that drops the body, so benchmarks
// measure the handler alone.
type discardWriter struct{ h http.Header }

func (d *discardWriter) Header() http.Header         { return d.h }
func (d *discardWriter) Write(b []byte) (int, error) { return len(b), nil }
func (d *discardWriter) WriteHeader(int)             {}

// newAppendRig returns a server of cfg on a store whose appends succeed
// at once, and a function that serves it (or another handler) one
// 100-byte append, reusing the request and the writer.
func newAppendRig(cfg Config) (*Server, func(http.Handler)) {
	res := &store.StreamAppendResult{Stream: stream(1, "/bench/s", "application/octet-stream", 100)}
	cfg.Store = &fakeStore{append: func(*store.StreamAppendParams) (*store.StreamAppendResult, error) { return res, nil }}
	s := New(cfg)
	body := strings.Repeat("x", 100)
	r := httptest.NewRequest("POST", "/bench/s", nil)
	r.Header.Set("Content-Type", "application/octet-stream")
	w := &discardWriter{h: http.Header{}}
	return s, func(h http.Handler) {
		r.Body = io.NopCloser(strings.NewReader(body))
		r.ContentLength = int64(len(body))
		clear(w.h)
		h.ServeHTTP(w, r)
	}
}

// BenchmarkAppend measures the handler's own cost of a 100-byte append.
func BenchmarkAppend(b *testing.B) {
	s, serve := newAppendRig(Config{})
	b.ReportAllocs()
	for b.Loop() {
		serve(s)
	}
}

// BenchmarkCatchUpJSON measures the handler's own cost of a 4 MiB catch-up
// response of a JSON stream (framed data to a JSON array).
func BenchmarkCatchUpJSON(b *testing.B) {
	msg := []byte(`{"id":12345,"type":"event","payload":"abcdefghijklmnopqrstuvwxyz0123456789"}` + "\n")
	data := bytes.Repeat(msg, DefaultMaxReadBytes/len(msg))
	res := &store.StreamReadResult{Stream: stream(1, "/bench/s", "application/json", int64(len(data))), Data: data, Next: int64(len(data))}
	f := &fakeStore{read: func(*store.StreamReadParams) (*store.StreamReadResult, error) { return res, nil }}
	s := New(Config{Store: f})
	r := httptest.NewRequest("GET", "/bench/s?offset=-1", nil)
	w := &discardWriter{h: http.Header{}}
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		clear(w.h)
		s.ServeHTTP(w, r)
	}
}
