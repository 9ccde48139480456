package wake

import (
	"context"
	"time"

	"github.com/heraldstreams/herald/internal/service"
	"github.com/heraldstreams/herald/internal/telemetry"
	"github.com/heraldstreams/herald/store"
)

// Start loads the subscriptions and starts the engine's goroutines: the
// tail-change listener, the invalidation watcher, the workers, the timer
// sweep, and a reconciliation of every stream some consumer is subscribed
// to (a wake whose tail change was not processed before a crash is found
// there). It returns after the subscriptions are loaded: an error then,
// or a second Start, is returned. The engine runs until Stop, or until
// ctx ends: give it a context that lives as long as the engine should.
func (e *Engine) Start(ctx context.Context) error {
	return e.life.Start(ctx, func() error {
		// The feeds are taken before the subscriptions are read, so that
		// a change committed meanwhile is applied after the read.
		feed, stopFeed := e.st.Notifier().Invalidations()
		tails := service.ListenTails(e.st.Notifier(), listenBuffer)
		err := e.refreshSubscriptions(ctx)
		if err == nil && e.ds != nil {
			err = e.ds.start(ctx)
		}
		if err != nil {
			stopFeed()
			tails.Close()
			return err
		}
		e.invalidations = feed
		if !e.life.Go(func() { e.watchInvalidations(stopFeed) }) {
			stopFeed()
		}
		tails.Go(e.life, e.tailChanged, e.reconcileKick.Signal)
		// The workers start with the work and end when none is left.
		e.queue.Serve(e.life.Context(), e.workers, e.life.Go, e.work)
		loops := []*service.Periodic{
			// The due timers: when the earliest known deadline is due, and
			// at least every SweepInterval (deadlines armed elsewhere).
			&service.Periodic{Interval: e.sweep, Kick: e.timers.signal, Immediately: true, Next: e.untilDeadline, Run: e.sweepDue},
			&service.Periodic{Kick: e.reconcileKick, Immediately: true, Run: e.reconcile},
		}
		if !e.exclusive {
			// A safety net under the invalidation feed of a shared store,
			// which crosses the network. The embedded store's is this
			// process's own: what it loses it says it lost, and
			// watchInvalidations then reads every subscription again.
			loops = append(loops, &service.Periodic{Interval: e.refresh, Run: func(ctx context.Context) {
				if err := e.refreshSubscriptions(ctx); err != nil && ctx.Err() == nil {
					e.log.Warn("refreshing subscriptions", "err", err)
				}
			}})
		}
		e.life.GoLoops(loops...)
		return nil
	})
}

// Stop stops processing stream changes, callbacks and timers, and lets
// the wakes in flight finish and record their outcome while ctx lasts;
// when ctx ends first they are cancelled (their consumers stay WAKING in
// the store, and their waking deadlines retry them) and ctx's error is
// returned. It returns when every goroutine of the engine has ended.
func (e *Engine) Stop(ctx context.Context) error {
	err := e.life.Stop(ctx)
	e.queue.Close()
	return err
}

// tailChanged queues a stream change for the workers.
func (e *Engine) tailChanged(ch store.TailChange) {
	f := flagChanged | flagSpawn
	if ch.Deleted {
		f = flagDeleted
	}
	e.queue.Push(ch.Path, queuedPath{flags: f, trace: ch.Trace})
}

// work processes one queued stream change.
func (e *Engine) work(path string, q queuedPath) {
	run := e.life.Context()
	if err := e.processStream(telemetry.Follow(run, q.trace), path, q.flags); err != nil && run.Err() == nil {
		e.log.Warn("processing a stream change", "stream", path, "err", err)
	}
}

// sweepDue fires the deadlines due now (Sweep), first ending the timer
// claims of claims whose answer was lost (releaseOrphans).
func (e *Engine) sweepDue(ctx context.Context) {
	e.releaseOrphans(ctx)
	e.timers.popDue(e.now())
	if err := e.Sweep(ctx); err != nil && ctx.Err() == nil {
		e.log.Warn("sweeping due consumers", "err", err)
	}
}

// untilDeadline is how long until the earliest deadline known here.
func (e *Engine) untilDeadline() (time.Duration, bool) {
	t, ok := e.timers.next()
	if !ok {
		return 0, false
	}
	return max(t.Sub(e.now()), 0), true
}
