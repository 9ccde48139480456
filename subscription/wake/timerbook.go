package wake

import (
	"context"
	"errors"
	"time"

	"github.com/heraldstreams/herald/internal/claimbook"
	"github.com/heraldstreams/herald/store"
)

// timerBook is what the engine knows of the consumer timers it claimed,
// so that it can end those it does not know of: a ConsumerClaimDue may
// fail after the database committed it (the database restarted before
// it answered), and its timers would wait for the whole TimerLease while
// this replica lives, with no peer to find it dead. After such a failure
// the sweep ends, through store.SubscriptionStore.ConsumerReleaseOwn,
// this replica's timer claims that it neither fires nor may have taken
// in a claim whose answer is still to come (claimbook). Its zero value
// is ready.
type timerBook struct {
	// book holds, by consumer ID, the claimed timers being fired: from
	// the answer of the claim until their tick ended.
	book claimbook.Book[string]
}

// ids are the IDs of cs.
func ids(cs []store.Consumer) []string {
	out := make([]string, len(cs))
	for i := range cs {
		out[i] = cs[i].ID
	}
	return out
}

// begin notes a claim and returns it with the Now it must use
// (claimbook.Book.Begin).
func (b *timerBook) begin(clock func() time.Time) (uint64, time.Time) { return b.book.Begin(clock) }

// end notes the answer of a claim: the consumers it claimed are being
// fired; an error leaves the timers it may have claimed unknown.
func (b *timerBook) end(claim uint64, claimed []store.Consumer, err error) {
	b.book.End(claim, ids(claimed), err)
}

// fired notes that the consumers' ticks ended. A tick that failed
// because the database was away (err) may have left its claim in the
// row: it is released too. Any other error keeps its claim until the
// lease ends, so a tick that keeps failing is not tried every sweep.
func (b *timerBook) fired(cs []store.Consumer, err error) {
	b.book.Done(ids(cs))
	if errors.Is(err, store.ErrUnavailable) {
		b.book.Lost()
	}
}

// orphans returns what to release (ok false when nothing was lost since
// the last release): every timer claim of this replica but those of the
// consumers being fired, and those that the claims under way, or any
// begun from now on, may take.
func (b *timerBook) orphans(clock func() time.Time) (*store.ConsumerReleaseOwnParams, bool) {
	r, ok := b.book.Orphans(clock, TimerLease)
	return &store.ConsumerReleaseOwnParams{Keep: r.Keep, Before: r.Before, Now: r.Now}, ok
}

// failed notes that a release failed: the next sweep tries again.
func (b *timerBook) failed() { b.book.Lost() }

// releaseOrphans ends, after a claim whose answer was lost, this
// replica's timer claims that it does not fire (timerBook), so the
// sweep that follows claims them at once.
func (e *Engine) releaseOrphans(ctx context.Context) {
	params, ok := e.claims.orphans(e.now)
	if !ok {
		return
	}
	n, err := e.st.ConsumerReleaseOwn(ctx, params)
	if err != nil {
		e.claims.failed()
		if ctx.Err() == nil {
			e.log.Warn("releasing the timers of claims whose answer was lost failed; the next sweep tries again", "err", err)
		}
		return
	}
	if n > 0 {
		e.log.Warn("released timers of this replica that a claim took while its answer was lost", "consumers", n)
	}
}
