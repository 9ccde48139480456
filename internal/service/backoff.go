package service

import (
	"sync"
	"time"
)

// Backoff spaces the runs of a Periodic (its Next) whose work may find
// nothing to do: Base after a run that found work (or failed), twice the
// last wait after one that found none, up to Max, so that an idle server
// does not write to its store every Base. The zero wait before the first
// run is Base.
type Backoff struct {
	Base, Max time.Duration

	mu   sync.Mutex
	wait time.Duration // until the next run once set; guarded by mu
	set  bool          // guarded by mu
}

// Next is Periodic's Next: the wait before the next run.
func (b *Backoff) Next() (time.Duration, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.set {
		return b.Base, true
	}
	return b.wait, true
}

// Ran records a run's outcome: busy when it found work or failed.
func (b *Backoff) Ran(busy bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	last := b.Base
	if b.set {
		last = b.wait
	}
	b.wait, b.set = b.Base, true
	if !busy {
		b.wait = max(b.Base, min(2*last, b.Max))
	}
}

// Again makes the next run start at once (a run that filled its batch).
func (b *Backoff) Again() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.wait, b.set = 0, true
}
