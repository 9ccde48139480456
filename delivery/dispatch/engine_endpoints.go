package dispatch

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/heraldstreams/herald/store"
)

// The endpoint cache: every endpoint of the store, compiled, with its
// runner. The invalidation feed keeps it current; it is read in full at
// start and when the feed was lost.

// loadEndpoints replaces the endpoint cache with the store's endpoints,
// starting and stopping runners to match.
func (e *Engine) loadEndpoints(ctx context.Context) error {
	e.loadMu.Lock()
	defer e.loadMu.Unlock()
	eps, err := e.st.EndpointList(ctx, &store.EndpointListParams{})
	if err != nil {
		return fmt.Errorf("delivery: load endpoints: %w", err)
	}
	seen := make(map[string]bool, len(eps))
	for i := range eps {
		seen[eps[i].ID] = true
		e.install(&eps[i])
	}
	e.mu.Lock()
	var gone []string
	for id := range e.endpoints {
		if !seen[id] {
			gone = append(gone, id)
		}
	}
	e.mu.Unlock()
	for _, id := range gone {
		e.uninstall(id)
	}
	return nil
}

// install caches an endpoint read from the store (unless the cache holds
// a newer read) and makes sure its runner runs.
func (e *Engine) install(ep *store.Endpoint) {
	le, err := e.compile(ep)
	if err != nil {
		e.log.Error("stored endpoint does not compile; it is not served", "endpoint", ep.ID, "err", err)
		return
	}
	e.mu.Lock()
	if cur, ok := e.endpoints[ep.ID]; ok && (cur.ep.Version > ep.Version || cur.ep.HealthVersion > ep.HealthVersion) {
		le = nil // keep the newer
	}
	if le != nil {
		e.endpoints[ep.ID] = le
	}
	r, ok := e.runners[ep.ID]
	if !ok {
		r = newRunner(e, ep.ID)
		e.runners[ep.ID] = r
	}
	e.mu.Unlock()
	if !ok && !e.life.Go(r.loop) {
		return
	}
	r.wake()
}

// uninstall forgets an endpoint and stops its runner.
func (e *Engine) uninstall(id string) {
	e.mu.Lock()
	delete(e.endpoints, id)
	r := e.runners[id]
	delete(e.runners, id)
	e.mu.Unlock()
	if r != nil {
		r.cancel()
	}
	if e.cfg.Destinations != nil {
		e.cfg.Destinations.Forget(id)
	}
}

func (e *Engine) endpoint(id string) *liveEndpoint {
	e.mu.RLock()
	defer e.mu.RUnlock()
	return e.endpoints[id]
}

// setHealth updates the cached breaker state after the runner stored it.
func (e *Engine) setHealth(id string, h store.EndpointHealth, version int64) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if le, ok := e.endpoints[id]; ok && le.ep.HealthVersion < version {
		c := *le
		c.ep.Health, c.ep.HealthVersion = h, version
		e.endpoints[id] = &c
	}
}

// EndpointChanged reloads one endpoint from the store (after the API
// created, changed or deleted it) and wakes its runner.
func (e *Engine) EndpointChanged(ctx context.Context, id string) error {
	e.loadMu.Lock()
	defer e.loadMu.Unlock()
	ep, err := e.st.EndpointGet(ctx, id)
	if errors.Is(err, store.ErrEndpointNotFound) {
		e.uninstall(id)
		return nil
	}
	if err != nil {
		return err
	}
	e.install(ep)
	return nil
}

func (e *Engine) kick(ids map[string]bool) {
	e.mu.RLock()
	defer e.mu.RUnlock()
	for id := range ids {
		if r := e.runners[id]; r != nil {
			r.wake()
		}
	}
}

// invalidationRetry is how long the engine waits before reading every
// endpoint again after it failed to apply the invalidation feed.
const invalidationRetry = time.Second

// watchInvalidations applies the store's invalidation feed to the
// endpoint cache until the engine stops: an endpoint changed elsewhere
// (another replica, or the breaker of another runner) is read again, and
// when the feed says that everything is invalid (it was lost and is
// back, so stream changes may have been missed too) every endpoint is
// read again, every runner woken, and the streams reconciled.
func (e *Engine) watchInvalidations(feed *store.InvalidationFeed, stop func()) {
	defer stop()
	feed.Apply(e.life.Context(), &store.CacheLoader{
		Kind: store.CacheEndpoint,
		Load: e.EndpointChanged,
		LoadAll: func(ctx context.Context) error {
			if err := e.loadEndpoints(ctx); err != nil {
				return err
			}
			e.wakeRunners()
			e.reconcileKick.Signal()
			return nil
		},
		Retry: invalidationRetry,
		Log:   e.log,
	})
}

// endpointsFor returns the endpoints that source from path.
func (e *Engine) endpointsFor(path string) []*liveEndpoint {
	e.mu.RLock()
	defer e.mu.RUnlock()
	var out []*liveEndpoint
	for _, le := range e.endpoints {
		if le.matchesStream(path) {
			out = append(out, le)
		}
	}
	return out
}
