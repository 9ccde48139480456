package sqlite_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/heraldstreams/herald/store"
)

// BenchmarkStreamAppend measures the store's append path: 64 writers
// appending 100 bytes each to a stream of their own, committed in
// groups (one transaction and one fsync a batch). cpu-µs/op is the
// process's CPU time per append; allocs/op counts every goroutine's.
func BenchmarkStreamAppend(b *testing.B) {
	const writers = 64
	s := open(b, b.TempDir())
	ctx := context.Background()
	now := time.Now()
	for w := range writers {
		if _, err := s.StreamCreate(ctx, &store.StreamCreateParams{Path: fmt.Sprintf("/bench/s%d", w),
			ContentType: "application/octet-stream", Now: now}); err != nil {
			b.Fatal(err)
		}
	}
	data := make([]byte, 100)
	var next sync.Mutex
	i := 0
	take := func() bool {
		next.Lock()
		defer next.Unlock()
		i++
		return i <= b.N
	}
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := cpuTime(b)
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p := &store.StreamAppendParams{Path: fmt.Sprintf("/bench/s%d", w), ContentType: "application/octet-stream",
				Data: data, Messages: 1, Now: now}
			for take() {
				if _, err := s.StreamAppend(ctx, p); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	b.StopTimer()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
	b.ReportMetric(float64(cpuTime(b)-cpu0)/float64(time.Microsecond)/float64(b.N), "cpu-µs/op")
}
