package service

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
)

// goer starts workers as a Lifecycle does, and lets a test wait for
// every one of them to end.
type goer struct {
	wg      sync.WaitGroup
	started atomic.Int64
}

func (g *goer) start(fn func()) bool {
	g.started.Add(1)
	g.wg.Go(fn)
	return true
}

// Serve starts no worker while nothing waits, starts them with the work,
// up to n at once, and every one ends once no key is left: an idle
// queue holds no goroutine.
func TestServeWorkersOnDemand(t *testing.T) {
	t.Parallel()
	q := NewQueue(orFlags)
	var g goer
	release := make(chan struct{})
	var mu sync.Mutex
	var busy, most int
	done := map[string]uint8{}
	q.Serve(context.Background(), 3, g.start, func(key string, v uint8) {
		mu.Lock()
		busy++
		most = max(most, busy)
		mu.Unlock()
		<-release
		mu.Lock()
		busy--
		done[key] |= v
		mu.Unlock()
	})
	if n, w := g.started.Load(), q.Workers(); n != 0 || w != 0 {
		t.Fatalf("before any work: %d workers started, %d running", n, w)
	}
	for i := range 10 {
		q.Push(fmt.Sprintf("/s%d", i), 1)
	}
	if w := q.Workers(); w != 3 {
		t.Fatalf("%d workers for 10 keys, want 3", w)
	}
	close(release)
	g.wg.Wait()
	if w := q.Workers(); w != 0 || len(done) != 10 || most > 3 {
		t.Fatalf("after the work: %d workers running, %d keys done, %d at once", w, len(done), most)
	}
	// More work starts workers again.
	q.Push("/again", 2)
	g.wg.Wait()
	if w := q.Workers(); w != 0 || done["/again"] != 2 {
		t.Fatalf("after more work: %d workers running, /again = %d", w, done["/again"])
	}
}

// A key pushed again while its worker holds it starts no second worker
// (that worker takes it after its Done); another key does.
func TestServeOneKeyOneWorker(t *testing.T) {
	t.Parallel()
	q := NewQueue(orFlags)
	var g goer
	took, first := make(chan struct{}), make(chan struct{})
	var mu sync.Mutex
	var seen []string
	var as atomic.Int64
	q.Serve(context.Background(), 4, g.start, func(key string, _ uint8) {
		if key == "/a" && as.Add(1) == 1 {
			close(took)
			<-first
		}
		mu.Lock()
		seen = append(seen, key)
		mu.Unlock()
	})
	q.Push("/a", 1) // one worker, busy with /a
	<-took
	q.Push("/a", 1) // held: queued again after /a's Done, no second worker
	if n := g.started.Load(); n != 1 {
		t.Fatalf("%d workers started for one key, want 1", n)
	}
	q.Push("/b", 1) // a second worker: the first holds a key
	if n := g.started.Load(); n != 2 {
		t.Fatalf("%d workers started, want 2", n)
	}
	close(first)
	g.wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 3 || q.Workers() != 0 {
		t.Fatalf("worked on %v, %d workers left", seen, q.Workers())
	}
}

// Keys pushed before Serve are taken when it is called; once ctx ends,
// a worker takes no more keys.
func TestServeBeforeAndAfter(t *testing.T) {
	t.Parallel()
	q := NewQueue(orFlags)
	q.Push("/early", 1)
	var g goer
	ctx, cancel := context.WithCancel(context.Background())
	var worked atomic.Int64
	q.Serve(ctx, 2, g.start, func(string, uint8) {
		worked.Add(1)
		cancel()
	})
	g.wg.Wait()
	q.Push("/late", 1)
	q.Push("/later", 1)
	g.wg.Wait()
	if n := worked.Load(); n != 1 || q.Workers() != 0 {
		t.Fatalf("worked on %d keys, %d workers left; want 1 and 0", n, q.Workers())
	}
}

// Under concurrent pushes, workers ending as the queue empties leave no
// key without a worker.
func TestServeLosesNoKey(t *testing.T) {
	t.Parallel()
	q := NewQueue(orFlags)
	var g goer
	var worked atomic.Int64
	q.Serve(context.Background(), 4, g.start, func(string, uint8) { worked.Add(1) })
	var pushers sync.WaitGroup
	for p := range 8 {
		pushers.Go(func() {
			for i := range 500 {
				q.Push(fmt.Sprintf("/p%d/%d", p, i), 1)
			}
		})
	}
	pushers.Wait()
	g.wg.Wait()
	if n := worked.Load(); n != 4000 || q.Workers() != 0 || q.Len() != 0 {
		t.Fatalf("worked on %d of 4000 keys; %d workers, %d keys left", n, q.Workers(), q.Len())
	}
}
