package sqlite_test

import (
	"context"
	"fmt"
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
	ps := make([]*store.StreamAppendParams, writers)
	for w := range ps {
		ps[w] = &store.StreamAppendParams{Path: fmt.Sprintf("/bench/s%d", w), ContentType: "application/octet-stream",
			Data: data, Messages: 1, Now: now}
	}
	runOps(b, writers, func(w, _ int) error {
		_, err := s.StreamAppend(ctx, ps[w])
		return err
	})
}
