package webhook

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
)

// acquireAsync starts one acquire in the bubble; its release (or error)
// arrives on done.
func acquireAsync(ctx context.Context, l *limiter, host string, done chan<- func(), failed chan<- error) {
	go func() {
		rel, err := l.acquire(ctx, host)
		if err != nil {
			failed <- err
			return
		}
		done <- rel
	}()
}

func TestLimiterBoundsPerHostAndGlobally(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		l := newLimiter(3, 2)
		ctx := t.Context()
		done := make(chan func(), 10)
		failed := make(chan error, 10)

		for range 4 {
			acquireAsync(ctx, l, "a.example", done, failed)
		}
		synctest.Wait()
		if got := len(done); got != 2 {
			t.Fatalf("host a.example: %d sends hold a slot, want 2 (per-host bound)", got)
		}

		// Another host is not held back by a.example's queue.
		acquireAsync(ctx, l, "b.example", done, failed)
		synctest.Wait()
		if got := len(done); got != 3 {
			t.Fatalf("after b.example: %d slots held, want 3", got)
		}

		// The global bound (3) is reached: a third host waits.
		acquireAsync(ctx, l, "c.example", done, failed)
		synctest.Wait()
		if got := len(done); got != 3 {
			t.Fatalf("global bound: %d slots held, want 3", got)
		}

		// Releasing one slot lets exactly one waiter in.
		rel := <-done
		rel()
		rel() // a second call is harmless
		synctest.Wait()
		if got := len(done); got != 3 {
			t.Fatalf("after one release: %d slots held, want 3", got)
		}

		// Drain everything: every waiter eventually gets a slot.
		for range 6 - 1 {
			rel := <-done
			rel()
		}
		synctest.Wait()
		if len(failed) != 0 {
			t.Fatalf("unexpected acquire error: %v", <-failed)
		}
		if n := len(l.hosts); n != 0 {
			t.Fatalf("limiter still tracks %d hosts after every release", n)
		}
		if n := len(l.global); n != 0 {
			t.Fatalf("%d global slots still held", n)
		}
	})
}

func TestLimiterWaitEndsWithContext(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		l := newLimiter(1, 1)
		done := make(chan func(), 2)
		failed := make(chan error, 2)
		acquireAsync(t.Context(), l, "a.example", done, failed)
		synctest.Wait()

		ctx, cancel := context.WithCancel(t.Context())
		acquireAsync(ctx, l, "a.example", done, failed)
		// Waiting on the global slot (host b is free, global is not).
		acquireAsync(ctx, l, "b.example", done, failed)
		synctest.Wait()
		if len(done) != 1 || len(failed) != 0 {
			t.Fatalf("want one holder and two waiters, got %d holders, %d failures", len(done), len(failed))
		}
		cancel()
		synctest.Wait()
		if len(failed) != 2 {
			t.Fatalf("want both waiters to give up with the context, got %d failures", len(failed))
		}
		for range 2 {
			if err := <-failed; !errors.Is(err, context.Canceled) {
				t.Fatalf("waiter error = %v, want context.Canceled", err)
			}
		}
		(<-done)()
		if n := len(l.hosts); n != 0 {
			t.Fatalf("limiter still tracks %d hosts", n)
		}
		if n := len(l.global); n != 0 {
			t.Fatalf("%d global slots still held after cancelled waits", n)
		}
	})
}
