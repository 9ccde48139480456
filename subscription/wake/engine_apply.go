package wake

import (
	"context"
	"errors"
	"fmt"

	"github.com/heraldstreams/herald/store"
	"github.com/heraldstreams/herald/subscription"
)

// applied is the outcome of one event, for a row of either kind.
type applied struct {
	Consumer subscription.Consumer
	// Version is the stored version of Consumer (unless Removed), so the
	// next event of the same consumer can skip re-reading it.
	Version int64
	Effects []subscription.Effect
	Removed bool
	// Tails are the tails the decision was made at, and Config the
	// row's configuration: a reserved-API row's wake shows the tails of
	// its links and goes where its configuration says; nil for a
	// query-string consumer.
	Tails  subscription.Tails
	Config *subscription.DSConfig
}

// edit is the reserved front door's part of one input: it may change
// the links of sub (membership), reads the stored row, and returns the
// event the machine decides (nil for none) or an error that leaves the
// row unchanged.
type edit func(sub *subscription.Consumer, row *store.Consumer, tails subscription.Tails) (subscription.Event, error)

// input is what apply applies to one row: an event (a query-string
// consumer's, with the tails of extra too and the row as last seen, pre,
// when the caller has it), or a reserved-API row's edit.
type input struct {
	Event subscription.Event
	Extra []string
	Pre   *store.Consumer
	// Edit, when set, makes the input a reserved-API row's (Event,
	// Extra and Pre are then unused).
	Edit edit
}

// apply applies one input to the stored row id, of either kind: it reads
// the row (or uses in.Pre when given and current), reads the tails of its
// streams (and, for a query-string consumer, of its primary stream and of
// in.Extra), lets in.Edit change a reserved row's links, decides, and
// stores the result by compare-and-set, retrying on a conflict. A
// query-string consumer whose primary stream no longer exists is removed
// instead (Applied.Removed, RemovedPrimaryDeleted); a reserved row has no
// primary stream. Decision errors are returned as they are; a missing
// row, or a row of the other kind, is ErrConsumerGone. The effects are
// the caller's to run (runEffects).
func (e *Engine) apply(ctx context.Context, id string, in input) (applied, error) {
	unlock := e.lock(id)
	defer unlock()
	kind := store.ConsumerWake
	if in.Edit != nil {
		kind = store.ConsumerReserved
	}
	pre := in.Pre
	known := pre // the latest form of the consumer seen, for the member cache
	for range casAttempts {
		sc := pre
		pre = nil
		fresh := sc == nil
		if fresh {
			var err error
			sc, err = e.st.ConsumerGet(ctx, id)
			if err == nil && sc.Kind != kind {
				// A row of the other front door: its inputs never
				// reach this one's.
				err = store.ErrConsumerNotFound
			}
			if errors.Is(err, store.ErrConsumerNotFound) {
				e.members.observe(known, nil)
				return applied{}, fmt.Errorf("%w: %s", subscription.ErrConsumerGone, id)
			}
			if err != nil {
				return applied{}, err
			}
			e.members.observe(known, sc)
			known = sc
		}
		c := fromStored(sc)
		before := c
		var cfg *subscription.DSConfig
		paths, extra := append(c.Paths(), c.PrimaryStream), in.Extra
		if kind == store.ConsumerReserved {
			v, err := configOf(sc.Config)
			if err != nil {
				return applied{}, err
			}
			cfg = &v
			c.Reserved = subscription.ReservedTerms{Type: v.Type, Lease: v.Lease()}
			before = c.Clone() // the edit changes c's links in place
			paths, extra = c.Paths(), nil
		}
		tails, err := e.tails(ctx, paths, extra)
		if err != nil {
			return applied{}, err
		}
		dev := withTails(in.Event, tails)
		if in.Edit != nil {
			if dev, err = in.Edit(&c, sc, tails); err != nil {
				return applied{}, err
			}
		} else if _, ok := tails[c.PrimaryStream]; !ok {
			// The primary stream is gone (deleted, or expired): whatever
			// the event, the consumer goes now, not when the deletion
			// reaches the workers, so nothing is accepted from it once
			// the DELETE has answered (S7).
			dev = subscription.StreamDeleted{Path: c.PrimaryStream}
		}
		next, effects := c, []subscription.Effect(nil)
		if dev != nil {
			if next, effects, err = e.machine.Decide(c, dev, e.now()); err != nil {
				return applied{Consumer: c}, err
			}
		}
		if cfg != nil && len(next.Streams) > store.MaxLinks {
			return applied{}, store.ErrTooManyLinks
		}
		if rm, ok := removal(effects); ok {
			err := e.st.ConsumerDelete(ctx, &store.ConsumerDeleteParams{ID: id, ExpectVersion: sc.Version})
			if retry, err := e.casOutcome(err, sc, id); retry {
				continue
			} else if err != nil {
				return applied{}, err
			}
			e.members.observe(sc, nil)
			e.metrics.removed.WithLabelValues(string(rm.Reason)).Inc()
			return applied{Consumer: next, Effects: effects, Removed: true, Tails: tails, Config: cfg}, nil
		}
		if !fresh && c.State != subscription.StateIdle && sameConsumer(&before, &next) {
			// Nothing to write, so no compare-and-set would reveal that
			// pre is stale: decide again on the stored consumer. (A done
			// applied between pre's read and now may have read the tails
			// before the append this event reports; skipping here would
			// lose its wake.) An IDLE pre that changes nothing needs no
			// second look: it had no pending work at the tails read now,
			// and acked offsets only grow.
			continue
		}
		version := sc.Version
		if !sameConsumer(&before, &next) {
			stored := toStored(&next)
			if cfg != nil {
				// The configuration columns are the front door's, set
				// at creation: carried over as they are.
				stored.Kind, stored.Tenant, stored.Config, stored.ConfigHash, stored.Pattern, stored.CreatedAt = sc.Kind, sc.Tenant, sc.Config, sc.ConfigHash, sc.Pattern, sc.CreatedAt
			}
			var err error
			version, err = e.st.ConsumerUpdate(ctx, &store.ConsumerUpdateParams{Consumer: stored, ExpectVersion: sc.Version})
			if retry, err := e.casOutcome(err, sc, id); retry {
				continue
			} else if err != nil {
				return applied{}, err
			}
			stored.Version = version
			// The engine's workers find the row by the streams it
			// links now.
			e.members.observe(sc, &stored)
			if cfg != nil && !stored.DueAt.IsZero() {
				// A reserved row's machine arms no timer: its due time,
				// stored, is the sweep's to claim.
				e.timers.add(stored.DueAt)
			}
		}
		return applied{Consumer: next, Version: version, Effects: effects, Tails: tails, Config: cfg}, nil
	}
	return applied{}, fmt.Errorf("subscription: consumer %s kept changing under %d attempts", id, casAttempts)
}

// casOutcome reads the result of a compare-and-set on consumer id read as
// sc: retry when another writer changed it first, ErrConsumerGone (and the
// member cache forgets it) when it was removed, any other error as is.
func (e *Engine) casOutcome(err error, sc *store.Consumer, id string) (retry bool, _ error) {
	switch {
	case errors.Is(err, store.ErrConsumerConflict):
		return true, nil
	case errors.Is(err, store.ErrConsumerNotFound):
		e.members.observe(sc, nil)
		return false, fmt.Errorf("%w: %s", subscription.ErrConsumerGone, id)
	}
	return false, err
}
