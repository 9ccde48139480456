package dispatch

import (
	"sync"
	"time"
)

// exclusiveReplayClaim is how often the sweep looks for replay jobs to
// resume when no other replica shares the store: the jobs of the
// process before this one are resumed by the first sweep, and later
// only one of this engine's own that lost its lease can come up, so the
// search is a safety net. On a shared store every sweep searches: a
// replica that died leaves jobs the others take over. The search is a
// write transaction; on the embedded store, made every sweep, it was
// the most an idle server did.
const exclusiveReplayClaim = time.Minute

// replayClaims paces the sweep's search for replay jobs.
type replayClaims struct {
	mu   sync.Mutex
	last time.Time // of the last search; zero before the first
}

// due reports whether the sweep searches now, and if so notes it.
func (r *replayClaims) due(now time.Time, exclusive bool) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if exclusive && !r.last.IsZero() && now.Sub(r.last) < exclusiveReplayClaim {
		return false
	}
	r.last = now
	return true
}

// exclusiveStore reports whether no other replica shares the engine's
// store (store.Store's Peers).
func (e *Engine) exclusiveStore() bool {
	p, ok := e.st.(interface{ Peers() bool })
	return ok && !p.Peers()
}

// maxPruneWait is the longest wait between two prunes that found
// nothing to prune: a prune is a write transaction, and an idle server's
// finished deliveries grow old only by the hour.
const maxPruneWait = time.Hour
