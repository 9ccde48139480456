package dispatch

import (
	"context"
	"sync"
	"time"

	"github.com/heraldstreams/herald/store"
)

// leaseBook is what the engine knows of the delivery leases it holds,
// so that it can end those it does not know of: a write that takes
// leases (a claim, an enqueue of fresh deliveries leased) may fail after
// the database committed it (the database restarted before it answered),
// and its leases would hold their deliveries, and on an ordered endpoint
// their streams, for the whole lease while this replica lives, with no
// peer to find it dead. After such a failure the sweep ends, through
// store.DeliveryStore.DeliveryReleaseOwn, this replica's leases that are
// neither being sent on nor possibly taken by a write whose answer is
// still to come.
type leaseBook struct {
	mu sync.Mutex
	// sending counts, by lease token, the deliveries being sent on: from
	// the answer of the write that leased them until their outcome is
	// recorded (or given up).
	sending map[int64]int // guarded by mu
	// writes are the Now of each write under way that takes leases.
	writes map[uint64]time.Time // guarded by mu
	next   uint64               // guarded by mu
	// lost is set when such a write failed: the rows may hold leases of
	// this replica that it does not know of.
	lost bool // guarded by mu
}

func newLeaseBook() *leaseBook {
	return &leaseBook{sending: make(map[int64]int), writes: make(map[uint64]time.Time)}
}

// begin notes a write that takes leases and returns it with the Now it
// must use. The time is read under the book's lock, so a write that
// begins after release took its snapshot has a later Now, and its leases
// end after the snapshot's bound.
func (b *leaseBook) begin(clock func() time.Time) (uint64, time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := clock()
	b.next++
	b.writes[b.next] = now
	return b.next, now
}

// end notes the answer of a write: the deliveries it leased are being
// sent on; an error leaves leases that may be in the rows unknown.
func (b *leaseBook) end(write uint64, leased []store.Delivery, err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.writes, write)
	if err != nil {
		b.lost = true
	}
	for _, d := range leased {
		b.sending[d.LeaseToken]++
	}
}

// done notes that the deliveries are no longer sent on (their outcome is
// recorded, or was given up: then they are claimed when their lease
// ends, or when it is released).
func (b *leaseBook) done(ds []store.Delivery) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, d := range ds {
		if b.sending[d.LeaseToken]--; b.sending[d.LeaseToken] <= 0 {
			delete(b.sending, d.LeaseToken)
		}
	}
}

// orphans returns what to release after a lost write (ok false when no
// write failed since the last release): every lease of this replica but
// those of the tokens sent on, and those that the writes under way, or
// any begun from now on, may take (ending at their Now plus lease or
// later).
func (b *leaseBook) orphans(clock func() time.Time, lease time.Duration) (params *store.DeliveryReleaseOwnParams, ok bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.lost {
		return nil, false
	}
	b.lost = false
	now := clock()
	first := now
	for _, at := range b.writes {
		if at.Before(first) {
			first = at
		}
	}
	params = &store.DeliveryReleaseOwnParams{Before: first.Add(lease), Now: now, Keep: make([]int64, 0, len(b.sending))}
	for token := range b.sending {
		params.Keep = append(params.Keep, token)
	}
	return params, true
}

// failed notes that a release failed: the next sweep tries again.
func (b *leaseBook) failed() {
	b.mu.Lock()
	b.lost = true
	b.mu.Unlock()
}

// releaseOrphans ends, after a write that takes leases failed, this
// replica's leases that it does not know of (leaseBook), and has the
// runners claim their deliveries.
func (e *Engine) releaseOrphans(ctx context.Context) {
	params, ok := e.leases.orphans(e.now, e.cfg.Lease)
	if !ok {
		return
	}
	n, err := e.st.DeliveryReleaseOwn(ctx, params)
	if err != nil {
		e.leases.failed()
		if ctx.Err() == nil {
			e.log.Warn("releasing the leases of writes whose answer was lost failed; the next sweep tries again", "err", err)
		}
		return
	}
	if n > 0 {
		e.log.Warn("released leases of this replica that a write took while its answer was lost", "deliveries", n)
		e.wakeRunners()
	}
}
