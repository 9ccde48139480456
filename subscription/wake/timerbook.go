package wake

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/heraldstreams/herald/store"
)

// timerBook is what the engine knows of the consumer timers it claimed,
// so that it can end those it does not know of: a ConsumerClaimDue may
// fail after the database committed it (the database restarted before
// it answered), and its timers would wait for the whole TimerLease while
// this replica lives, with no peer to find it dead. After such a failure
// the sweep ends, through store.SubscriptionStore.ConsumerReleaseOwn,
// this replica's timer claims that it neither fires nor may have taken
// in a claim whose answer is still to come. Its zero value is ready.
type timerBook struct {
	mu sync.Mutex
	// firing counts, by consumer ID, the claimed timers being fired:
	// from the answer of the claim until their tick ended.
	firing map[string]int // guarded by mu
	// claims are the Now of each claim under way.
	claims map[uint64]time.Time // guarded by mu
	next   uint64               // guarded by mu
	// lost is set when a claim failed, or a tick failed because the
	// database was away: the rows may hold timer claims of this replica
	// that nothing fires.
	lost bool // guarded by mu
}

// begin notes a claim and returns it with the Now it must use. The time
// is read under the book's lock, so a claim that begins after a release
// took its snapshot has a later Now, and its timers end after the
// snapshot's bound.
func (b *timerBook) begin(clock func() time.Time) (uint64, time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.claims == nil {
		b.claims, b.firing = make(map[uint64]time.Time), make(map[string]int)
	}
	now := clock()
	b.next++
	b.claims[b.next] = now
	return b.next, now
}

// end notes the answer of a claim: the consumers it claimed are being
// fired; an error leaves the timers it may have claimed unknown.
func (b *timerBook) end(claim uint64, claimed []store.Consumer, err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.claims, claim)
	if err != nil {
		b.lost = true
	}
	for i := range claimed {
		b.firing[claimed[i].ID]++
	}
}

// fired notes that the consumers' ticks ended. A tick that failed
// because the database was away (err) may have left its claim in the
// row: it is released too. Any other error keeps its claim until the
// lease ends, so a tick that keeps failing is not tried every sweep.
func (b *timerBook) fired(cs []store.Consumer, err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for i := range cs {
		id := cs[i].ID
		if b.firing[id]--; b.firing[id] <= 0 {
			delete(b.firing, id)
		}
	}
	if errors.Is(err, store.ErrUnavailable) {
		b.lost = true
	}
}

// orphans returns what to release (ok false when nothing was lost since
// the last release): every timer claim of this replica but those of the
// consumers being fired, and those that the claims under way, or any
// begun from now on, may take (ending at their Now plus TimerLease or
// later).
func (b *timerBook) orphans(clock func() time.Time) (params *store.ConsumerReleaseOwnParams, ok bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.lost {
		return nil, false
	}
	b.lost = false
	now := clock()
	first := now
	for _, at := range b.claims {
		if at.Before(first) {
			first = at
		}
	}
	params = &store.ConsumerReleaseOwnParams{Before: first.Add(TimerLease), Now: now, Keep: make([]string, 0, len(b.firing))}
	for id := range b.firing {
		params.Keep = append(params.Keep, id)
	}
	return params, true
}

// failed notes that a release failed: the next sweep tries again.
func (b *timerBook) failed() {
	b.mu.Lock()
	b.lost = true
	b.mu.Unlock()
}

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
