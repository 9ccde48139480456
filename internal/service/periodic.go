package service

import (
	"context"
	"time"
)

// Clock is the time a Periodic runner waits on; tests give a fake one.
type Clock interface {
	Now() time.Time
	// NewTimer returns a timer that fires once after d.
	NewTimer(d time.Duration) Timer
}

// Timer is a timer of a Clock.
type Timer interface {
	C() <-chan time.Time
	Stop() bool
}

// RealClock is the system clock.
type RealClock struct{}

// Now returns time.Now().
func (RealClock) Now() time.Time { return time.Now() }

// NewTimer returns a time.Timer.
func (RealClock) NewTimer(d time.Duration) Timer { return realTimer{time.NewTimer(d)} }

type realTimer struct{ t *time.Timer }

func (t realTimer) C() <-chan time.Time { return t.t.C }
func (t realTimer) Stop() bool          { return t.t.Stop() }

// Periodic runs a piece of work again and again: every Interval, at
// once when Kick receives, and sooner when Next says so. Runs never
// overlap: a kick during a run makes one more run after it.
type Periodic struct {
	// Interval between runs; 0: only when kicked (or when Next says).
	Interval time.Duration
	// Kick, when set, makes the work run now.
	Kick <-chan struct{}
	// Next, when set, is called after each run: when ok, the next run is
	// after wait at the latest (a deadline known to be due then).
	Next func() (wait time.Duration, ok bool)
	// Immediately runs the work once when the loop starts.
	Immediately bool
	// Clock; RealClock when nil.
	Clock Clock
	// Run is the work; ctx is Loop's.
	Run func(ctx context.Context)
}

// Loop runs the work until ctx ends.
func (p *Periodic) Loop(ctx context.Context) {
	clock := p.Clock
	if clock == nil {
		clock = RealClock{}
	}
	if p.Immediately {
		p.Run(ctx)
	}
	for {
		wait, timed := p.Interval, p.Interval > 0
		if p.Next != nil {
			if w, ok := p.Next(); ok && (!timed || w < wait) {
				wait, timed = max(w, 0), true
			}
		}
		var fire <-chan time.Time
		var t Timer
		if timed {
			t = clock.NewTimer(wait)
			fire = t.C()
		}
		select {
		case <-ctx.Done():
		case <-fire:
		case <-p.Kick:
		}
		if t != nil {
			t.Stop()
		}
		if ctx.Err() != nil {
			return
		}
		p.Run(ctx)
	}
}

// Kick is a coalescing signal for a Periodic's Kick: signals sent while
// one waits make one run.
type Kick chan struct{}

// NewKick returns a Kick.
func NewKick() Kick { return make(Kick, 1) }

// Signal asks for a run, without waiting.
func (k Kick) Signal() {
	select {
	case k <- struct{}{}:
	default:
	}
}
