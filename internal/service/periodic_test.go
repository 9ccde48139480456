package service

import (
	"context"
	"sync"
	"testing"
	"time"
)

// fakeClock is a Clock moved by hand; timers reports each new timer.
type fakeClock struct {
	mu     sync.Mutex
	now    time.Time
	timers []*fakeTimer
	made   chan time.Duration
}

type fakeTimer struct {
	clock   *fakeClock
	at      time.Time
	c       chan time.Time
	stopped bool
}

func newFakeClock() *fakeClock {
	return &fakeClock{now: time.Unix(1_700_000_000, 0), made: make(chan time.Duration, 16)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) NewTimer(d time.Duration) Timer {
	c.mu.Lock()
	t := &fakeTimer{clock: c, at: c.now.Add(d), c: make(chan time.Time, 1)}
	c.timers = append(c.timers, t)
	c.mu.Unlock()
	c.made <- d
	return t
}

func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	for _, t := range c.timers {
		if !t.stopped && !t.at.After(c.now) {
			t.stopped = true
			t.c <- c.now
		}
	}
}

func (t *fakeTimer) C() <-chan time.Time { return t.c }
func (t *fakeTimer) Stop() bool {
	t.clock.mu.Lock()
	defer t.clock.mu.Unlock()
	was := !t.stopped
	t.stopped = true
	return was
}

func TestPeriodicRunsEveryIntervalAndWhenKicked(t *testing.T) {
	t.Parallel()
	clock := newFakeClock()
	kick := make(chan struct{}, 1)
	runs := make(chan struct{})
	p := &Periodic{Interval: time.Minute, Kick: kick, Clock: clock, Run: func(context.Context) { runs <- struct{}{} }}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); p.Loop(ctx) }()
	if d := <-clock.made; d != time.Minute {
		t.Fatalf("waits %v, want a minute", d)
	}
	clock.advance(59 * time.Second)
	select {
	case <-runs:
		t.Fatal("ran before the interval")
	default:
	}
	clock.advance(time.Second)
	<-runs
	<-clock.made
	kick <- struct{}{}
	<-runs
	<-clock.made
	cancel()
	<-done
}

func TestPeriodicNextAndImmediately(t *testing.T) {
	t.Parallel()
	clock := newFakeClock()
	runs := make(chan struct{}, 1)
	next := 5 * time.Second
	p := &Periodic{Interval: time.Minute, Immediately: true, Clock: clock,
		Next: func() (time.Duration, bool) { return next, true },
		Run:  func(context.Context) { runs <- struct{}{} }}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); p.Loop(ctx) }()
	<-runs // at once
	if d := <-clock.made; d != 5*time.Second {
		t.Fatalf("waits %v, want the 5s Next asked for", d)
	}
	clock.advance(5 * time.Second)
	<-runs
	<-clock.made
	cancel()
	<-done
}

// With no interval and no Next, the work runs only when kicked.
func TestPeriodicKickOnly(t *testing.T) {
	t.Parallel()
	kick := make(chan struct{}, 1)
	runs := make(chan struct{})
	p := &Periodic{Kick: kick, Clock: newFakeClock(), Run: func(context.Context) { runs <- struct{}{} }}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); p.Loop(ctx) }()
	kick <- struct{}{}
	<-runs
	cancel()
	<-done
}

// Signals sent before the loop takes them make one run.
func TestKickCoalesces(t *testing.T) {
	t.Parallel()
	k := NewKick()
	k.Signal()
	k.Signal()
	if len(k) != 1 {
		t.Fatalf("%d signals pending, want 1", len(k))
	}
	l := NewLifecycle()
	runs := make(chan struct{})
	if err := l.Start(context.Background(), func() error {
		l.GoLoops(&Periodic{Kick: k, Clock: newFakeClock(), Run: func(context.Context) { runs <- struct{}{} }})
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	<-runs
	if err := l.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(k) != 0 {
		t.Fatal("the run did not take the signal")
	}
}
