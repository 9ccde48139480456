package sqlite_test

import (
	"context"
	"fmt"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/heraldstreams/herald/store"
)

// BenchmarkConsumerWake measures the store's share of a webhook wake:
// each op is the two consumer writes of one wake (IDLE → WAKING with the
// offsets notified, then WAKING → IDLE with them acked), from 1,000
// consumers updated by 64 goroutines at once, as concurrent wakes are.
// Besides ns/op (the committer's throughput), it reports the process CPU
// time per wake, which is what the store costs on a loaded machine.
func BenchmarkConsumerWake(b *testing.B) {
	const consumers, workers = 1000, 64
	s := open(b, b.TempDir())
	ctx := context.Background()
	now := time.Now()
	cs := make([]store.Consumer, consumers)
	for i := range cs {
		path := fmt.Sprintf("/bench/s%d", i)
		cs[i] = store.Consumer{ID: "sub:" + path, SubscriptionID: "sub", PrimaryStream: path, State: "IDLE",
			Streams: []store.ConsumerStream{{Path: path, Acked: "0000000000000000_0000000000000000"}}}
	}
	if _, err := s.ConsumerInsert(ctx, &store.ConsumerInsertParams{Consumers: cs}); err != nil {
		b.Fatal(err)
	}
	for i := range cs {
		cs[i].Version = 1
	}
	offset := func(n int) string { return fmt.Sprintf("%016d_%016d", 0, n) }

	ks := make([]int, workers) // each worker's next consumer: its own ones, in turn
	for w := range ks {
		ks[w] = w
	}
	runOps(b, workers, func(w, n int) error {
		k := ks[w]
		if ks[w] += workers; ks[w] >= consumers {
			ks[w] = w
		}
		c := &cs[k]
		c.Epoch++
		c.State, c.WakeID = "WAKING", fmt.Sprintf("w%d", n)
		c.WakingDeadline = now.Add(10 * time.Second)
		c.DueAt = c.WakingDeadline
		c.Streams[0].Notified = offset(n)
		v, err := s.ConsumerUpdate(ctx, &store.ConsumerUpdateParams{Consumer: *c, ExpectVersion: c.Version})
		if err != nil {
			return err
		}
		c.State, c.WakeID, c.WakingDeadline, c.DueAt = "IDLE", "", time.Time{}, time.Time{}
		c.Streams[0].Acked = offset(n)
		if v, err = s.ConsumerUpdate(ctx, &store.ConsumerUpdateParams{Consumer: *c, ExpectVersion: v}); err != nil {
			return err
		}
		c.Version = v
		return nil
	})
}

// runOps runs b.N ops on workers goroutines at once, each op given its
// worker (0 to workers-1) and its number (1 to b.N), and reports the
// process's CPU time per op (cpu-µs/op): what the store costs on a
// loaded machine.
func runOps(b *testing.B, workers int, op func(w, n int) error) {
	var next sync.Mutex
	i := 0
	take := func() (int, bool) {
		next.Lock()
		defer next.Unlock()
		if i >= b.N {
			return 0, false
		}
		i++
		return i, true
	}
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := cpuTime(b)
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				n, ok := take()
				if !ok {
					return
				}
				if err := op(w, n); err != nil {
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

// cpuTime returns the CPU time (user and system) the process used so far.
func cpuTime(tb testing.TB) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
