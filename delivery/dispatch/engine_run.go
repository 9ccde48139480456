package dispatch

import (
	"context"
	"sort"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/heraldstreams/herald/delivery"
	"github.com/heraldstreams/herald/glob"
	"github.com/heraldstreams/herald/internal/service"
	"github.com/heraldstreams/herald/internal/telemetry"
	"github.com/heraldstreams/herald/store"
)

// Start loads the endpoints and starts the matcher, the runners, the
// pruner, the replay jobs whose engine is gone, and a reconciliation of
// the streams the endpoints source from (what a crash left unmatched).
// It returns once the endpoints are loaded: an error then, or a second
// Start, is returned. The engine runs until Stop, or until ctx ends:
// give it a context that lives as long as the engine should.
func (e *Engine) Start(ctx context.Context) error {
	return e.life.Start(ctx, func() error {
		// The invalidation feed and the tail changes are taken before
		// the endpoints are read, so that a change committed meanwhile
		// is applied after the read.
		invalidations, stopInvalidations := e.st.Notifier().Invalidations()
		tails := service.ListenTails(e.st.Notifier(), listenBuffer)
		if err := e.loadEndpoints(ctx); err != nil {
			stopInvalidations()
			tails.Close()
			return err
		}
		if !e.life.Go(func() { e.watchInvalidations(invalidations, stopInvalidations) }) {
			stopInvalidations()
		}
		tails.Go(e.life, e.tailChanged, e.reconcileKick.Signal)
		e.life.GoLoops(
			// Runners wake on their own deadlines and results; this ends
			// the leases of writes whose answer was lost, wakes them for
			// what other replicas queued or left (an expired lease),
			// matches again the streams whose match failed, and resumes
			// the replay jobs whose engine is gone.
			&service.Periodic{Interval: e.cfg.SweepInterval, Immediately: true, Run: func(ctx context.Context) {
				e.releaseOrphans(ctx)
				e.wakeRunners()
				e.retryFailed()
				if e.replaySearch.due(e.now(), e.exclusiveStore()) {
					e.claimReplays(ctx)
				}
			}},
			&service.Periodic{Next: e.prunePace.Next, Run: func(ctx context.Context) {
				n, err := e.PruneOnce(ctx)
				if err != nil && ctx.Err() == nil {
					e.log.Warn("pruning deliveries failed", "err", err)
				}
				e.prunePace.Ran(n > 0 || err != nil)
			}},
			&service.Periodic{Kick: e.reconcileKick, Immediately: true, Run: e.reconcile},
		)
		// The matchers start with the work and end when none is left.
		e.queue.Serve(e.life.Context(), e.cfg.MatchWorkers, e.life.Go, e.match)
		return nil
	})
}

// Stop stops matching and claiming and lets in-flight deliveries finish
// and record their outcome while ctx lasts; when ctx ends first, they are
// cancelled (and sent again after their lease) and ctx's error is
// returned. It returns when every goroutine of the engine has ended.
func (e *Engine) Stop(ctx context.Context) error {
	err := e.life.Stop(ctx)
	e.queue.Close()
	return err
}

// tailChanged queues a stream that changed, if some endpoint sources
// from it.
func (e *Engine) tailChanged(c store.TailChange) {
	if !c.Deleted && len(e.endpointsFor(c.Path)) > 0 {
		e.queue.Push(c.Path, c.Trace)
	}
}

// firstTrace keeps the span context of a stream's first traced change
// since its last match, so the match joins that request's trace.
func firstTrace(old, pushed trace.SpanContext) trace.SpanContext {
	if old.IsValid() {
		return old
	}
	return pushed
}

// match matches one queued stream.
func (e *Engine) match(path string, parent trace.SpanContext) {
	counted := e.checking.begin(path)
	e.checking.end(path, counted, e.matchTraced(parent, path))
}

// matchTraced matches a stream; when a traced request caused it, as a
// span that is that request's child (a reconciliation's matches are not
// traced: they would be a root span per stream).
func (e *Engine) matchTraced(parent trace.SpanContext, path string) bool {
	ctx := e.life.Context()
	var span trace.Span
	if parent.IsValid() {
		ctx, span = e.tracer.Start(telemetry.Follow(ctx, parent), "delivery.match",
			trace.WithAttributes(attribute.String("herald.stream", path)))
		defer span.End()
	}
	if err := e.MatchStream(ctx, path); err != nil && ctx.Err() == nil {
		e.log.Warn("matching a stream failed; the sweep matches it again", "stream", path, "err", err)
		e.failedMu.Lock()
		e.failed[path] = struct{}{}
		e.failedMu.Unlock()
		if span != nil {
			span.SetStatus(codes.Error, err.Error())
		}
		return false
	}
	return true
}

// retryFailed queues again the streams whose match failed.
func (e *Engine) retryFailed() {
	e.failedMu.Lock()
	failed := e.failed
	e.failed = make(map[string]struct{})
	e.failedMu.Unlock()
	for path := range failed {
		e.queue.Push(path, trace.SpanContext{})
	}
}

// wakeRunners makes every runner claim again.
func (e *Engine) wakeRunners() {
	e.mu.RLock()
	defer e.mu.RUnlock()
	for _, r := range e.runners {
		r.wake()
	}
}

// sourcePrefixes returns the literal prefixes of every endpoint's stream
// patterns, none of them under another.
func (e *Engine) sourcePrefixes() []string {
	e.mu.RLock()
	var all []string
	for _, le := range e.endpoints {
		if le.streams == nil {
			all = append(all, "/")
			continue
		}
		for _, p := range le.ep.Streams {
			if p == delivery.DefaultStreamPattern {
				all = append(all, "/")
			} else if g, err := glob.Compile(p); err == nil {
				all = append(all, g.Prefix())
			}
		}
	}
	e.mu.RUnlock()
	sort.Strings(all)
	var out []string
	for _, p := range all {
		if len(out) == 0 || !strings.HasPrefix(p, out[len(out)-1]) {
			out = append(out, p)
		}
	}
	return out
}

// PruneOnce removes the finished deliveries (and their attempts) that
// finished more than Retention ago, and returns how many.
func (e *Engine) PruneOnce(ctx context.Context) (int, error) {
	before := e.now().Add(-e.cfg.Retention)
	total := 0
	for {
		n, err := e.st.DeliveryPrune(ctx, &store.DeliveryPruneParams{Before: before, Limit: pruneBatch})
		total += n
		if err != nil || n < pruneBatch {
			return total, err
		}
	}
}
