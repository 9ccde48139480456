package main

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/heraldstreams/herald/store"
	"github.com/heraldstreams/herald/store/sqlite"
)

// TestFillCreatesTheStreamsInTheStore: fill leaves prefix/s0 to
// prefix/s(n-1) in the data directory's store, and no more.
func TestFillCreatesTheStreamsInTheStore(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	r := bench(t, "fill", "-dir", dir, "-n", "50", "-c", "8", "-prefix", "/filled")
	if r["n"] != 50.0 {
		t.Fatalf("filled %v streams, want 50", r["n"])
	}
	ctx := context.Background()
	st, err := sqlite.Open(ctx, sqlite.Config{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := st.Close(); err != nil {
			t.Error(err)
		}
	}()
	for _, p := range []string{"/filled/s0", "/filled/s49"} {
		s, err := st.StreamGet(ctx, &store.StreamGetParams{Path: p, Now: time.Now()})
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		if s.ContentType != octetStream {
			t.Fatalf("%s: content type %q", p, s.ContentType)
		}
	}
	if _, err := st.StreamGet(ctx, &store.StreamGetParams{Path: "/filled/s50", Now: time.Now()}); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("/filled/s50: %v, want not found", err)
	}
}

// TestAppendExistingCreatesNothing: append -existing appends to
// prefix/s0 to s(streams-1) as they are, without a create.
func TestAppendExistingCreatesNothing(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	seen := map[string]int{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen[r.Method+" "+r.URL.Path]++
		mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(srv.Close)
	r := bench(t, "append", "-base", srv.URL, "-existing", "-prefix", "/filled", "-streams", "2", "-c", "2", "-d", "200ms")
	positive(t, r, "n")
	mu.Lock()
	defer mu.Unlock()
	for k := range seen {
		if k != "POST /filled/s0" && k != "POST /filled/s1" {
			t.Fatalf("request %q; want appends to /filled/s0 and /filled/s1 only (all: %v)", k, seen)
		}
	}
}
