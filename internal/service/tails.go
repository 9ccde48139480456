package service

import (
	"context"

	"github.com/heraldstreams/herald/store"
)

// TailListener is one subscription to the store's tail-change feed.
// The feed is lossy: when its buffer is full the store drops the oldest
// change. The listener does nothing but hand changes on (to a Queue), so
// it keeps up; and it says when changes may have been dropped, so its
// owner can reconcile from the store instead of missing them.
type TailListener struct {
	feed *store.TailFeed
	stop func()
}

// ListenTails subscribes to n's tail changes now (take it before reading
// the state the changes update, so none falls between), with a buffer
// of buffer changes.
func ListenTails(n store.Notifier, buffer int) *TailListener {
	feed, stop := n.Listen(buffer)
	return &TailListener{feed: feed, stop: stop}
}

// Run calls handle with each change until ctx ends, then unsubscribes.
// lost is called, before the changes taken with it, when changes may
// have been dropped (the feed's buffer overflowed).
func (t *TailListener) Run(ctx context.Context, handle func(store.TailChange), lost func()) {
	defer t.stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.feed.Ready():
			// One wake-up takes every change published meanwhile: a
			// burst of appends costs this goroutine one wake-up, not one
			// a change.
			changes, dropped := t.feed.Take()
			if dropped {
				lost()
			}
			for _, c := range changes {
				handle(c)
			}
		}
	}
}

// Go runs the listener (Run) in a goroutine of l, until l stops; when l
// has stopped already, it unsubscribes.
func (t *TailListener) Go(l *Lifecycle, handle func(store.TailChange), lost func()) {
	if !l.Go(func() { t.Run(l.Context(), handle, lost) }) {
		t.Close()
	}
}

// Close unsubscribes a listener that is not run.
func (t *TailListener) Close() { t.stop() }
