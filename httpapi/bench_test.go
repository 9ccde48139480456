package httpapi

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/heraldstreams/herald/auth"
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
// 100-byte append, reusing the request and the writer; key, when not "",
// is sent as the bearer credential.
func newAppendRig(cfg Config, key string) (*Server, func(http.Handler)) {
	res := &store.StreamAppendResult{Stream: stream(1, "/bench/s", "application/octet-stream", 100)}
	cfg.Store = &fakeStore{append: func(*store.StreamAppendParams) (*store.StreamAppendResult, error) { return res, nil }}
	s := New(cfg)
	body := strings.Repeat("x", 100)
	r := httptest.NewRequest("POST", "/bench/s", nil)
	r.Header.Set("Content-Type", "application/octet-stream")
	if key != "" {
		r.Header.Set("Authorization", "Bearer "+key)
	}
	w := &discardWriter{h: http.Header{}}
	return s, func(h http.Handler) {
		r.Body = io.NopCloser(strings.NewReader(body))
		r.ContentLength = int64(len(body))
		clear(w.h)
		h.ServeHTTP(w, r)
	}
}

// BenchmarkAppend measures the handler's own cost of a 100-byte append,
// with access control off and with a stored key (cached, as every request
// after a key's first finds it), limited to stream paths, to a tenant's
// stream namespace, or not: the cost access control adds to the append
// path.
func BenchmarkAppend(b *testing.B) {
	b.Run("auth=off", func(b *testing.B) { benchAppend(b, Config{}, "") })
	for name, k := range map[string]store.Key{
		"auth=key":            {},
		"auth=key-with-paths": {Paths: []string{"/other/**", "/bench/**"}},
		// The rig appends to /bench/s: the namespace of tenant "bench"
		// under the prefix /{tenant}/.
		"auth=tenant-key": {Tenant: "bench"},
	} {
		b.Run(name, func(b *testing.B) {
			keys := &benchKeys{}
			id, key, hash, err := auth.NewKey(nil)
			if err != nil {
				b.Fatal(err)
			}
			k.ID, k.Hash, k.Scopes = id, hash, []string{string(auth.ScopeStreamsWrite)}
			keys.key = k
			a, err := auth.New(auth.Config{Keys: keys, AdminKey: strings.Repeat("a", auth.MinAdminKeyLength), TenantStreamPrefix: "/{tenant}/"})
			if err != nil {
				b.Fatal(err)
			}
			benchAppend(b, Config{Auth: a}, key)
		})
	}
}

func benchAppend(b *testing.B, cfg Config, key string) {
	s, serve := newAppendRig(cfg, key)
	b.ReportAllocs()
	for b.Loop() {
		serve(s)
	}
}

// benchKeys is a key store of one key.
type benchKeys struct {
	store.KeyStore
	key store.Key
}

func (k *benchKeys) KeyGet(_ context.Context, p *store.KeyGetParams) (*store.Key, error) {
	if p.ID != k.key.ID {
		return nil, store.ErrKeyNotFound
	}
	return &k.key, nil
}

// BenchmarkCatchUpJSON measures the handler's own cost of a 4 MiB catch-up
// response of a JSON stream (framed data to a JSON array).
func BenchmarkCatchUpJSON(b *testing.B) {
	data := benchMessages(DefaultMaxReadBytes)
	res := &store.StreamReadResult{Stream: stream(1, "/bench/s", "application/json", int64(len(data))), Data: data, Next: int64(len(data))}
	f := &fakeStore{read: func(*store.StreamReadParams) (*store.StreamReadResult, error) { return res, nil }}
	benchCatchUp(b, New(Config{Store: f}), len(data))
}

// benchMessages is about n bytes of framed JSON messages.
func benchMessages(n int) []byte {
	msg := []byte(`{"id":12345,"type":"event","payload":"abcdefghijklmnopqrstuvwxyz0123456789"}` + "\n")
	return bytes.Repeat(msg, n/len(msg))
}

// benchCatchUp serves s catch-up reads of a stream of n bytes from its
// start, reusing the request and the writer.
func benchCatchUp(b *testing.B, s *Server, n int) {
	r := httptest.NewRequest("GET", "/bench/s?offset=-1", nil)
	w := &discardWriter{h: http.Header{}}
	b.SetBytes(int64(n))
	b.ReportAllocs()
	for b.Loop() {
		clear(w.h)
		s.ServeHTTP(w, r)
	}
}

// jsonFileStore serves every read as one section of a file of framed
// JSON messages, as the embedded store serves a catch-up read from its
// segments.
type jsonFileStore struct {
	*fakeStore
	name string
	n    int64
}

func (j *jsonFileStore) StreamReadFiles(_ context.Context, p *store.StreamReadParams) (*store.StreamFileRead, error) {
	f, err := os.Open(j.name)
	if err != nil {
		return nil, err
	}
	return &store.StreamFileRead{
		Result:   store.StreamReadResult{Stream: stream(1, p.Path, "application/json", j.n), Next: j.n},
		Sections: []store.Section{{File: f, N: j.n}},
		Len:      j.n,
		Files:    []*os.File{f},
	}, nil
}

// BenchmarkCatchUpJSONFiles measures the handler's own cost of a 10 MB
// catch-up response of a JSON stream whose bytes are in a file (the
// embedded store's segments): read, made into the array and written.
func BenchmarkCatchUpJSONFiles(b *testing.B) {
	data := benchMessages(10_000_000)
	name := filepath.Join(b.TempDir(), "seg")
	if err := os.WriteFile(name, data, 0o600); err != nil {
		b.Fatal(err)
	}
	benchCatchUp(b, New(Config{Store: &jsonFileStore{fakeStore: &fakeStore{}, name: name, n: int64(len(data))}}), len(data))
}
