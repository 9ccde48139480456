package reaper_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/heraldstreams/herald/internal/service"
	"github.com/heraldstreams/herald/reaper"
	"github.com/heraldstreams/herald/store"
	"github.com/heraldstreams/herald/store/sqlite"
)

func TestRunOnceRemovesExpiredStreams(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, sqlite.Config{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, p := range []store.StreamCreateParams{
		{Path: "/short", ContentType: "text/plain", TTL: time.Second},
		{Path: "/long", ContentType: "text/plain", TTL: time.Hour},
		{Path: "/forever", ContentType: "text/plain"},
	} {
		p.Now = t0
		if _, err := st.StreamCreate(ctx, &p); err != nil {
			t.Fatal(err)
		}
	}
	now := t0.Add(time.Minute)
	r := reaper.New(reaper.Config{Store: st, Now: func() time.Time { return now }})
	n, err := r.RunOnce(ctx)
	if err != nil || n != 1 {
		t.Fatalf("RunOnce = %d, %v; want 1 stream removed", n, err)
	}
	// The path is free again; the others are untouched.
	if _, err := st.StreamCreate(ctx, &store.StreamCreateParams{Path: "/short", ContentType: "application/json", Now: now}); err != nil {
		t.Fatalf("re-create after reaping: %v", err)
	}
	for _, p := range []string{"/long", "/forever"} {
		if _, err := st.StreamGet(ctx, &store.StreamGetParams{Path: p, Now: now}); err != nil {
			t.Errorf("%s: %v", p, err)
		}
	}
	if n, err := r.RunOnce(ctx); err != nil || n != 0 {
		t.Fatalf("second RunOnce = %d, %v", n, err)
	}
	if _, err := st.StreamGet(ctx, &store.StreamGetParams{Path: "/missing", Now: now}); !errors.Is(err, store.ErrNotFound) {
		t.Fatal(err)
	}
}

// replica is one replica's handle on a shared store: the named leases
// are kept for all of them in one table, by holder.
type replica struct {
	store.Store
	name   string
	leases *leaseTable
}

type leaseTable struct {
	mu      sync.Mutex
	holder  map[string]string
	endings map[string]time.Time
}

func (r *replica) LeaseAcquire(_ context.Context, p *store.LeaseAcquireParams) (bool, error) {
	l := r.leases
	l.mu.Lock()
	defer l.mu.Unlock()
	if h, ok := l.holder[p.Name]; ok && h != r.name && l.endings[p.Name].After(p.Now) {
		return false, nil
	}
	l.holder[p.Name], l.endings[p.Name] = r.name, p.Now.Add(p.TTL)
	return true, nil
}

// Of two replicas, one sweeps while it renews its lease; the other takes
// the sweeps over once the lease of a replica that stopped has ended.
func TestOneSweeperAtATime(t *testing.T) {
	t.Parallel()
	st, err := sqlite.Open(context.Background(), sqlite.Config{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	leases := &leaseTable{holder: map[string]string{}, endings: map[string]time.Time{}}
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	a := reaper.New(reaper.Config{Store: &replica{Store: st, name: "a", leases: leases}, Interval: 5 * time.Second, Now: clock})
	b := reaper.New(reaper.Config{Store: &replica{Store: st, name: "b", leases: leases}, Interval: 5 * time.Second, Now: clock})
	sweep := func(s *reaper.Service) bool {
		t.Helper()
		_, swept, err := s.Sweep(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		return swept
	}
	for range 4 {
		if !sweep(a) || sweep(b) {
			t.Fatal("both replicas swept, or the holder did not")
		}
		now = now.Add(5 * time.Second)
	}
	// a stops: b takes over once a's lease (15 s) ends.
	now = now.Add(5 * time.Second)
	if sweep(b) {
		t.Fatal("b swept while a's lease ran")
	}
	now = now.Add(5 * time.Second)
	if !sweep(b) {
		t.Fatal("b did not take the sweeps over")
	}
}

// manualClock is a service.Clock whose timers fire when the test says.
type manualClock struct{ timers chan manualTimerAt }

type manualTimerAt struct {
	d time.Duration
	t manualTimer
}

func (c manualClock) Now() time.Time { return time.Unix(0, 0) }
func (c manualClock) NewTimer(d time.Duration) service.Timer {
	t := manualTimer(make(chan time.Time, 1))
	c.timers <- manualTimerAt{d, t}
	return t
}

type manualTimer chan time.Time

func (t manualTimer) C() <-chan time.Time { return t }
func (t manualTimer) Stop() bool          { return true }

// countingStore counts the sweeps that reach the store.
type countingStore struct {
	store.Store
	sweeps chan struct{}
}

func (s *countingStore) StreamDeleteExpired(ctx context.Context, p *store.StreamDeleteExpiredParams) (int, error) {
	s.sweeps <- struct{}{}
	return s.Store.StreamDeleteExpired(ctx, p)
}

// Run sweeps at each wait's end, and not before: every Interval while
// sweeps remove streams, a wait that doubles up to MaxInterval while they
// find none. It ends with ctx.
func TestRunBacksOffWhileNothingExpires(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	st, err := sqlite.Open(ctx, sqlite.Config{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	now := time.Now()
	cs := &countingStore{Store: st, sweeps: make(chan struct{})}
	clock := manualClock{timers: make(chan manualTimerAt)}
	done := make(chan struct{})
	go func() {
		defer close(done)
		reaper.New(reaper.Config{Store: cs, Clock: clock, Interval: time.Second, MaxInterval: 4 * time.Second,
			Now: func() time.Time { return now }}).Run(ctx)
	}()
	step := func(want time.Duration) {
		t.Helper()
		tm := <-clock.timers
		if tm.d != want {
			t.Fatalf("waits %v, want %v", tm.d, want)
		}
		select {
		case <-cs.sweeps:
			t.Fatal("swept before the wait ended")
		default:
		}
		tm.t <- now
		<-cs.sweeps
	}
	step(time.Second)
	step(2 * time.Second) // nothing expired: twice as long
	step(4 * time.Second)
	if _, err := st.StreamCreate(ctx, &store.StreamCreateParams{Path: "/short", ContentType: "text/plain", TTL: time.Second, Now: now.Add(-time.Minute)}); err != nil {
		t.Fatal(err)
	}
	step(4 * time.Second) // MaxInterval; this sweep removes /short
	step(time.Second)     // back to Interval
	<-clock.timers
	cancel()
	<-done
}
