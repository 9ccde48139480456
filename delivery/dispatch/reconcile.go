package dispatch

import (
	"context"
	"sync"

	"go.opentelemetry.io/otel/trace"

	"github.com/heraldstreams/herald/store"
)

// reconcilePage is how many streams one page of a reconciliation reads
// (and queues, and waits to see matched): bounded, so that a
// reconciliation never holds every stream at once.
const reconcilePage = 50_000

// reconciledMark is the name of the store mark below which every stream
// change has been matched (store.StreamChangeStore).
const reconciledMark = "delivery.reconciled"

// reconcile queues the streams some endpoint sources from that changed
// since the last reconciliation that finished (the store's mark: only
// those can hold an append the engine did not match, after a crash), and
// hold messages of their own; the matcher skips those whose cursors are
// at their tail. It reads them a page at a time under the literal
// prefixes of the endpoints' patterns, and waits for each page's matches
// before the next. Once every match succeeded it records the mark taken
// before it began, so that the next reads only what changed since: after
// a restart, the work follows the changes made, not the streams stored.
// It runs at start and when changes may have been missed, never on a
// timer: with no endpoint it reads no stream.
//
// With no endpoint it takes no mark either: there is nothing to match,
// and with the embedded store a mark moves the change number that the
// next append to each stream then writes into the index of changes, a
// page of that index written for every stream appended to after each
// start. The mark recorded stays where it was, so the first
// reconciliation with an endpoint reads every stream changed since
// (more than needed, never less).
func (e *Engine) reconcile(ctx context.Context) {
	if len(e.sourcePrefixes()) == 0 {
		return
	}
	mark, err := e.st.StreamChangeMark(ctx)
	if err != nil {
		e.reconcileFailed(ctx, err)
		return
	}
	from, err := e.st.CheckedMark(ctx, reconciledMark)
	if err != nil {
		e.reconcileFailed(ctx, err)
		return
	}
	e.checking.reset()
	for _, prefix := range e.sourcePrefixes() {
		after := ""
		for {
			streams, err := e.st.StreamList(ctx, &store.StreamListParams{Prefix: prefix, After: after,
				Limit: reconcilePage, ChangedFrom: from, Now: e.now()})
			if err != nil {
				e.reconcileFailed(ctx, err)
				return
			}
			for _, s := range streams {
				if s.Tail > s.ForkPosition && len(e.endpointsFor(s.Path)) > 0 {
					e.checking.add(s.Path)
					e.queue.Push(s.Path, trace.SpanContext{})
				}
			}
			if !e.checking.wait(ctx) {
				return // stopped, or a match failed: the mark stays
			}
			if len(streams) < reconcilePage {
				break
			}
			after = streams[len(streams)-1].Path
		}
	}
	if err := e.st.CheckedMarkAdvance(ctx, reconciledMark, mark); err != nil {
		e.reconcileFailed(ctx, err)
	}
}

// reconcileFailed logs a reconciliation that failed (not one stopped).
func (e *Engine) reconcileFailed(ctx context.Context, err error) {
	if ctx.Err() == nil {
		e.log.Warn("reconciling streams failed; it runs again when changes are missed", "err", err)
	}
}

// checkSet is the streams a reconciliation queued and waits to see
// matched. A match counts only if it began after the stream was added:
// one that was running already may have read the stream before the
// change the reconciliation found (the queue runs the stream again after
// it).
type checkSet struct {
	mu     sync.Mutex
	paths  map[string]bool // true once a match began after the add; guarded by mu
	failed bool            // a match of one of them failed; guarded by mu
	empty  chan struct{}   // closed when paths empties; guarded by mu
}

func newCheckSet() checkSet {
	return checkSet{paths: make(map[string]bool), empty: make(chan struct{})}
}

// reset starts a reconciliation: nothing to wait for, no failure.
func (c *checkSet) reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	clear(c.paths)
	c.failed = false
}

// add records that path was queued, to be matched.
func (c *checkSet) add(path string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.paths) == 0 {
		c.empty = make(chan struct{})
	}
	c.paths[path] = false
}

// begin is called as a match of path begins: it reports whether the
// match counts for the reconciliation.
func (c *checkSet) begin(path string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.paths[path]; !ok {
		return false
	}
	c.paths[path] = true
	return true
}

// end records the end of a match begin counted: path is matched (ok),
// or the reconciliation failed.
func (c *checkSet) end(path string, counted, ok bool) {
	if !counted {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if !ok {
		c.failed = true
	}
	if _, waiting := c.paths[path]; !waiting {
		return
	}
	delete(c.paths, path)
	if len(c.paths) == 0 {
		close(c.empty)
	}
}

// wait waits until every path added was matched, and reports whether
// all were matched without failure; false when ctx ends first.
func (c *checkSet) wait(ctx context.Context) bool {
	c.mu.Lock()
	if len(c.paths) == 0 {
		failed := c.failed
		c.mu.Unlock()
		return !failed
	}
	empty := c.empty
	c.mu.Unlock()
	select {
	case <-empty:
	case <-ctx.Done():
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return !c.failed
}
