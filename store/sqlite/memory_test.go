package sqlite_test

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/heraldstreams/herald/store"
)

// liveHeap returns the bytes of live heap after a full collection.
func liveHeap() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// streamHeap creates n streams with a small first chunk each and returns
// the live heap they added, per stream.
func streamHeap(tb testing.TB, n int) float64 {
	s := open(tb, tb.TempDir())
	now := time.Now()
	// Warm up: prepared statements, caches, the first map growth.
	mustCreateN(tb, s, "/warm/", 1000, now)
	before := liveHeap()
	mustCreateN(tb, s, "/mem/s", n, now)
	after := liveHeap()
	runtime.KeepAlive(s)
	return float64(after-before) / float64(n)
}

// mustCreateN creates n streams from 16 goroutines (so that they are
// group committed, like concurrent requests).
func mustCreateN(tb testing.TB, s store.Store, prefix string, n int, now time.Time) {
	tb.Helper()
	const workers = 16
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < n; i += workers {
				_, err := s.StreamCreate(context.Background(), &store.StreamCreateParams{Path: fmt.Sprintf("%s%d", prefix, i),
					ContentType: "application/json", Data: []byte(`{"event":"created","n":1}` + "\n"), Messages: 1, Now: now})
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		tb.Fatal(err)
	}
}

// maxStreamHeap is the live heap one cached stream may cost the embedded
// store (its metadata in the stream cache, which holds up to
// DefaultStreamCache of them): a full cache must fit in a process of
// 200 MB with a subscription's consumers.
const maxStreamHeap = 280

// TestStreamMemory: a cached stream costs at most maxStreamHeap bytes of
// live heap (453 when every entry carried a full Stream, a producer map
// and its last chunk). Not parallel: it measures the process's heap, so
// it runs before the parallel tests start.
func TestStreamMemory(t *testing.T) {
	if got := streamHeap(t, 10000); got > maxStreamHeap {
		t.Fatalf("%.0f bytes of heap per stream, want at most %d", got, maxStreamHeap)
	} else {
		t.Logf("%.0f bytes of heap per stream", got)
	}
}

func BenchmarkStreamMemory(b *testing.B) {
	for range b.N {
		b.ReportMetric(streamHeap(b, 20000), "heap-B/stream")
	}
}
