// Package claimbook keeps what an engine knows of the claims it holds in
// the store's rows (delivery leases, consumer timers), so that it can end
// those it does not know of: a write that takes claims may fail after the
// database committed it (the database restarted before it answered), and
// its claims would wait for their whole lease while the replica lives,
// with no peer to find it dead. After such a failure the engine releases
// its own claims but those it works on (by key: a lease token, a
// consumer) and those that a write whose answer is still to come may have
// taken (by when they end).
package claimbook

import (
	"sync"
	"time"
)

// Book is what one engine knows of its claims, by key. Its zero value is
// ready.
type Book[K comparable] struct {
	mu sync.Mutex
	// held counts, by key, the claims worked on: from the answer of the
	// write that took them until the work ended.
	held map[K]int // guarded by mu
	// writes are the Now of each write under way that takes claims.
	writes map[uint64]time.Time // guarded by mu
	next   uint64               // guarded by mu
	// lost is set when such a write failed: the rows may hold claims of
	// this replica that it does not know of.
	lost bool // guarded by mu
}

// Release is what to release after a lost write: every claim of the
// replica that runs at Now and ends before Before, but those of the keys
// in Keep.
type Release[K comparable] struct {
	Keep   []K
	Before time.Time
	Now    time.Time
}

// Begin notes a write that takes claims and returns it with the Now it
// must use. The time is read under the book's lock, so a write that
// begins after Orphans took its snapshot has a later Now, and its claims
// end after the snapshot's bound.
func (b *Book[K]) Begin(clock func() time.Time) (uint64, time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.writes == nil {
		b.writes, b.held = make(map[uint64]time.Time), make(map[K]int)
	}
	now := clock()
	b.next++
	b.writes[b.next] = now
	return b.next, now
}

// End notes the answer of a write: the claims of keys are worked on; an
// error leaves the claims it may have taken unknown.
func (b *Book[K]) End(write uint64, keys []K, err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.writes, write)
	if err != nil {
		b.lost = true
	}
	for _, k := range keys {
		b.held[k]++
	}
}

// Done notes that the work on the claims of keys ended (one count each).
func (b *Book[K]) Done(keys []K) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, k := range keys {
		if b.held[k]--; b.held[k] <= 0 {
			delete(b.held, k)
		}
	}
}

// Lost notes that the rows may hold claims nothing works on: a release
// failed (the next one tries again), or work failed leaving its claim.
func (b *Book[K]) Lost() {
	b.mu.Lock()
	b.lost = true
	b.mu.Unlock()
}

// Orphans returns what to release (ok false when nothing was lost since
// the last release): every claim but those of the keys worked on, and
// those that the writes under way, or any begun from now on, may take
// (ending at their Now plus lease or later).
func (b *Book[K]) Orphans(clock func() time.Time, lease time.Duration) (Release[K], bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.lost {
		return Release[K]{}, false
	}
	b.lost = false
	now := clock()
	first := now
	for _, at := range b.writes {
		if at.Before(first) {
			first = at
		}
	}
	r := Release[K]{Before: first.Add(lease), Now: now, Keep: make([]K, 0, len(b.held))}
	for k := range b.held {
		r.Keep = append(r.Keep, k)
	}
	return r, true
}
