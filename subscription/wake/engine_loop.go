package wake

import (
	"container/heap"
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/heraldstreams/herald/store"
	"github.com/heraldstreams/herald/subscription"
)

// What happened to a stream, as queued for the workers.
const (
	// flagChanged: the tail changed (or the stream was created); the
	// consumers of the stream see TailsChanged.
	flagChanged uint8 = 1 << iota
	// flagSpawn: matching subscriptions without a consumer for the
	// stream get one (an append or a creation; not a reconciliation, which
	// must not bring back a consumer that unsubscribed from everything).
	flagSpawn
	// flagDeleted: the stream was deleted.
	flagDeleted
)

// queuedPath is what is queued for one path.
type queuedPath struct {
	flags uint8
	// trace is the span context of the request whose change queued the
	// path first (invalid when none was traced): the wakes it causes
	// join that request's trace.
	trace trace.SpanContext
}

// mergeQueued merges what is queued again for a path: the union of the
// flags, the span context of the first traced change.
func mergeQueued(old, pushed queuedPath) queuedPath {
	old.flags |= pushed.flags
	if !old.trace.IsValid() {
		old.trace = pushed.trace
	}
	return old
}

// deadlineResolution is the granularity of the in-memory timer set:
// deadlines are rounded up to it, so a burst of deadlines costs one
// entry per 10 ms and a sweep never fires before a deadline.
const deadlineResolution = 10 * time.Millisecond

// deadlines is the set of consumer deadlines this process knows of, so the
// sweep runs when the earliest is due rather than on a fixed period.
type deadlines struct {
	mu     sync.Mutex
	set    map[int64]struct{} // guarded by mu
	h      int64Heap          // guarded by mu
	signal chan struct{}
}

func newDeadlines() *deadlines {
	return &deadlines{set: map[int64]struct{}{}, signal: make(chan struct{}, 1)}
}

// add remembers a deadline and wakes the sweep if it is the earliest.
func (d *deadlines) add(t time.Time) {
	if t.IsZero() {
		return
	}
	n := t.UnixNano()
	b := (n + int64(deadlineResolution) - 1) / int64(deadlineResolution) * int64(deadlineResolution)
	d.mu.Lock()
	_, known := d.set[b]
	earliest := false
	if !known {
		d.set[b] = struct{}{}
		heap.Push(&d.h, b)
		earliest = d.h[0] == b
	}
	d.mu.Unlock()
	if earliest {
		d.wake()
	}
}

// wake makes the sweep run now.
func (d *deadlines) wake() {
	select {
	case d.signal <- struct{}{}:
	default:
	}
}

// next returns the earliest deadline remembered.
func (d *deadlines) next() (time.Time, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.h) == 0 {
		return time.Time{}, false
	}
	return time.Unix(0, d.h[0]), true
}

// popDue forgets the deadlines at or before now (the sweep about to run
// fires them).
func (d *deadlines) popDue(now time.Time) {
	n := now.UnixNano()
	d.mu.Lock()
	defer d.mu.Unlock()
	for len(d.h) > 0 && d.h[0] <= n {
		delete(d.set, heap.Pop(&d.h).(int64))
	}
}

type int64Heap []int64

func (h int64Heap) Len() int           { return len(h) }
func (h int64Heap) Less(i, j int) bool { return h[i] < h[j] }
func (h int64Heap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *int64Heap) Push(x any)        { *h = append(*h, x.(int64)) }
func (h *int64Heap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// processStream applies one change of a stream to its consumers: a
// deletion removes the consumers it spawned and drops it from the others;
// a change spawns the consumers of matching subscriptions that have none
// (when flags allow it) and gives every consumer of the stream its new
// tail. The workers call it for every queued change.
func (e *Engine) processStream(ctx context.Context, path string, flags uint8) error {
	var errs []error
	if flags&flagDeleted != 0 {
		errs = append(errs, e.streamDeleted(ctx, path))
	}
	if flags&flagChanged != 0 {
		errs = append(errs, e.streamChanged(ctx, path, flags&flagSpawn != 0, nil))
	}
	return errors.Join(errs...)
}

// streamChanged gives the consumers of a stream its new tail. spawn is
// true for a live change (an append or a creation): matching
// subscriptions without a consumer get one, and the member cache keeps
// the stream's consumers (a reconciliation does not fill it, so idle
// streams cost no memory). settled, in a reconciliation, holds the
// reserved-API subscriptions it settled already: a settle reads every
// stream the subscription links, so one per pass is enough.
func (e *Engine) streamChanged(ctx context.Context, path string, spawn bool, settled *sync.Map) error {
	consumers, gen, cached := e.members.get(path)
	if !cached {
		var err error
		consumers, err = e.st.ConsumerListByStream(ctx, &store.ConsumerListByStreamParams{Path: path})
		if err != nil {
			return err
		}
		if spawn {
			e.members.fill(path, gen, consumers)
		}
	}
	consumers, reserved := byKind(consumers)
	if spawn {
		inserted, err := e.spawn(ctx, path, consumers)
		if err != nil {
			return err
		}
		if inserted {
			consumers, err = e.st.ConsumerListByStream(ctx, &store.ConsumerListByStreamParams{Path: path})
			if err != nil {
				return err
			}
			for i := range consumers {
				e.members.observe(nil, &consumers[i])
			}
			consumers, reserved = byKind(consumers)
		}
	}
	err := e.applyEach(ctx, consumers, subscription.TailsChanged{}, true)
	if settled != nil {
		reserved = slices.DeleteFunc(reserved, func(id string) bool {
			_, done := settled.LoadOrStore(id, struct{}{})
			return done
		})
	}
	if e.ds != nil {
		err = errors.Join(err, e.ds.streamChanged(ctx, path, reserved, spawn))
	}
	return err
}

// byKind parts a stream's consumers by front door: the query-string
// subscriptions' consumers, and the ids of the reserved API's
// subscriptions.
func byKind(consumers []store.Consumer) (wake []store.Consumer, reserved []string) {
	wake = consumers[:0:0]
	for _, c := range consumers {
		if c.Kind == store.ConsumerReserved {
			reserved = append(reserved, dsSubscriptionID(c.ID))
			continue
		}
		wake = append(wake, c)
	}
	return wake, reserved
}

// applyEach applies ev to each consumer and runs the effects; a consumer
// that is gone by then is skipped. withPre passes the consumer as read, so
// apply need not read it again when nothing changed it since.
func (e *Engine) applyEach(ctx context.Context, consumers []store.Consumer, ev subscription.Event, withPre bool) error {
	var errs []error
	for i := range consumers {
		var pre *store.Consumer
		if withPre {
			pre = &consumers[i]
		}
		a, err := e.apply(ctx, consumers[i].ID, input{Event: ev, Pre: pre})
		if err != nil {
			if !errors.Is(err, subscription.ErrConsumerGone) {
				errs = append(errs, err)
			}
			continue
		}
		e.runEffects(ctx, a)
	}
	return errors.Join(errs...)
}

// spawn creates the consumers of matching subscriptions that the stream
// does not have yet. They start at OffsetStart: the stream was created or
// appended to after the subscription, so all its events are new to them.
func (e *Engine) spawn(ctx context.Context, path string, existing []store.Consumer) (bool, error) {
	if err := e.freshSubscriptions(ctx); err != nil {
		return false, err
	}
	subs := e.matching(path)
	if len(subs) == 0 {
		return false, nil
	}
	have := make(map[string]bool, len(existing))
	for _, c := range existing {
		have[c.ID] = true
	}
	var fresh []store.Consumer
	for _, sub := range subs {
		if have[subscription.ConsumerID(sub, path)] {
			continue
		}
		inc, err := subscription.NewIncarnation(e.random())
		if err != nil {
			return false, err
		}
		c, err := subscription.NewConsumer(subscription.NewConsumerParams{SubscriptionID: sub, PrimaryStream: path, Incarnation: inc})
		if err != nil {
			continue // a path no consumer can have
		}
		fresh = append(fresh, toStored(&c))
	}
	if len(fresh) == 0 {
		return false, nil
	}
	// Only a live stream spawns: a change that was a deletion by the time
	// it is processed must not leave orphans.
	if _, err := e.st.StreamGet(ctx, &store.StreamGetParams{Path: path, Now: e.now()}); err != nil {
		if errors.Is(err, store.ErrNotFound) || errors.Is(err, store.ErrStreamGone) {
			return false, nil
		}
		return false, err
	}
	ids, err := e.st.ConsumerInsert(ctx, &store.ConsumerInsertParams{Consumers: fresh})
	if err != nil {
		return false, err
	}
	e.metrics.spawned.Add(float64(len(ids)))
	return len(ids) > 0, nil
}

func (e *Engine) streamDeleted(ctx context.Context, path string) error {
	var errs []error
	for _, list := range []func(context.Context, *store.ConsumerListByStreamParams) ([]store.Consumer, error){
		e.st.ConsumerListByPrimary, e.st.ConsumerListByStream,
	} {
		consumers, err := list(ctx, &store.ConsumerListByStreamParams{Path: path})
		if err != nil {
			errs = append(errs, err)
			continue
		}
		// A reserved-API subscription keeps the link of a deleted
		// stream: a stream made again at the path is linked still.
		consumers, _ = byKind(consumers)
		errs = append(errs, e.applyEach(ctx, consumers, subscription.StreamDeleted{Path: path}, false))
	}
	return errors.Join(errs...)
}

// TimerLease is how long a due timer claimed by one replica is its own:
// a replica that dies between the claim and the update that sets the
// next deadline leaves the timer to the others when the lease ends.
const TimerLease = 30 * time.Second

// Sweep fires every deadline due now: it claims the consumers due now
// from the store (each timer is fired by the one replica that claimed
// it), applies a Tick to them, and remembers when the next timer falls
// due so it fires on time. The sweep loop calls it; after a restart it
// resumes the timers that were armed before (a liveness that expired
// while Herald was down, a due retry).
func (e *Engine) Sweep(ctx context.Context) error {
	for {
		claim, now := e.claims.begin(e.now)
		res, err := e.st.ConsumerClaimDue(ctx, &store.ConsumerClaimDueParams{Now: now, Limit: sweepPage, Lease: TimerLease})
		if err != nil {
			e.claims.end(claim, nil, err)
			return err
		}
		e.claims.end(claim, res.Consumers, nil)
		if !res.NextDueAt.IsZero() {
			e.timers.add(res.NextDueAt)
		}
		err = e.tickAll(ctx, res.Consumers)
		e.claims.fired(res.Consumers, err)
		if err != nil || len(res.Consumers) < sweepPage {
			return err
		}
	}
}

// tickAll applies a Tick to each consumer, Workers at a time.
func (e *Engine) tickAll(ctx context.Context, batch []store.Consumer) error {
	sem := make(chan struct{}, e.workers)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var errs []error
	for i := range batch {
		sem <- struct{}{}
		wg.Add(1)
		go func(c *store.Consumer) {
			defer wg.Done()
			defer func() { <-sem }()
			if c.Kind == store.ConsumerReserved {
				if e.ds == nil {
					return // its timer goes back to the store when the claim's lease ends
				}
				if err := e.ds.tick(ctx, dsSubscriptionID(c.ID)); err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
				}
				return
			}
			a, err := e.apply(ctx, c.ID, input{Event: subscription.Tick{}, Pre: c})
			if err != nil {
				if !errors.Is(err, subscription.ErrConsumerGone) {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
				}
				return
			}
			e.runEffects(ctx, a)
		}(&batch[i])
	}
	wg.Wait()
	return errors.Join(errs...)
}

// reconcileWorkers bounds the reconciliation's concurrency: it runs in
// the background at start and must not crowd out live work.
const reconcileWorkers = 4

// reconcilePage is how many stream paths the reconciliation reads at once.
const reconcilePage = 512

// reconcile gives the consumers of every stream some consumer is
// subscribed to (its primary stream or one it subscribed to by callback)
// their current tails, once at start, so a consumer whose tail change was
// lost (a crash between an append and its wake) still wakes. It does not
// spawn consumers: a matching stream without one may be one whose
// consumer unsubscribed from everything. The paths are read a page at a
// time, so a store with many consumers is never listed at once. It runs
// again when stream changes may have been missed (the tail-change feed
// was full, or the invalidation feed was lost).
func (e *Engine) reconcile(ctx context.Context) {
	sem := make(chan struct{}, reconcileWorkers)
	var wg sync.WaitGroup
	defer wg.Wait()
	var settled sync.Map
	after := ""
	for {
		mark := e.members.addedMark()
		paths, err := e.st.ConsumerPathList(ctx, &store.ConsumerPathListParams{After: after, Limit: reconcilePage})
		if err != nil {
			if ctx.Err() == nil {
				e.log.Warn("reconciling consumers", "err", err)
			}
			return
		}
		if after == "" && len(paths) == 0 {
			e.members.noneSince(mark) // no stream has a consumer
		}
		for _, path := range paths {
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer func() { <-sem }()
				if err := e.streamChanged(ctx, path, false, &settled); err != nil && ctx.Err() == nil {
					e.log.Warn("reconciling a stream", "stream", path, "err", err)
				}
			}()
		}
		if len(paths) < reconcilePage {
			return
		}
		after = paths[len(paths)-1]
	}
}
