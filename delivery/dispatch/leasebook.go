package dispatch

import (
	"context"
	"time"

	"github.com/heraldstreams/herald/internal/claimbook"
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
	// book holds, by lease token, the deliveries being sent on: from the
	// answer of the write that leased them until their outcome is
	// recorded (or given up).
	book claimbook.Book[int64]
}

func newLeaseBook() *leaseBook { return &leaseBook{} }

// tokens are the lease tokens of ds, one a delivery.
func tokens(ds []store.Delivery) []int64 {
	out := make([]int64, len(ds))
	for i := range ds {
		out[i] = ds[i].LeaseToken
	}
	return out
}

// begin notes a write that takes leases and returns it with the Now it
// must use (claimbook.Book.Begin).
func (b *leaseBook) begin(clock func() time.Time) (uint64, time.Time) { return b.book.Begin(clock) }

// end notes the answer of a write: the deliveries it leased are being
// sent on; an error leaves leases that may be in the rows unknown.
func (b *leaseBook) end(write uint64, leased []store.Delivery, err error) {
	b.book.End(write, tokens(leased), err)
}

// done notes that the deliveries are no longer sent on (their outcome is
// recorded, or was given up: then they are claimed when their lease
// ends, or when it is released).
func (b *leaseBook) done(ds []store.Delivery) { b.book.Done(tokens(ds)) }

// orphans returns what to release after a lost write (ok false when no
// write failed since the last release): every lease of this replica but
// those of the tokens sent on, and those that the writes under way, or
// any begun from now on, may take.
func (b *leaseBook) orphans(clock func() time.Time, lease time.Duration) (*store.DeliveryReleaseOwnParams, bool) {
	r, ok := b.book.Orphans(clock, lease)
	return &store.DeliveryReleaseOwnParams{Keep: r.Keep, Before: r.Before, Now: r.Now}, ok
}

// failed notes that a write's outcome or a release failed: the next
// sweep releases.
func (b *leaseBook) failed() { b.book.Lost() }

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
