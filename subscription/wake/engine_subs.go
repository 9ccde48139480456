package wake

import (
	"context"
	"errors"
	"maps"
	"sync"
	"time"

	"github.com/heraldstreams/herald/glob"
	"github.com/heraldstreams/herald/store"
)

// cachedSub is a subscription with its compiled pattern.
type cachedSub struct {
	sub     store.Subscription
	pattern *glob.Pattern
}

// refreshSubscriptions reloads the subscriptions from the store.
func (e *Engine) refreshSubscriptions(ctx context.Context) error {
	// Loads run one at a time, so a full reload that read the store
	// before a subscription was made cannot replace the cache after a
	// reload of that one subscription put it there.
	e.subsLoadMu.Lock()
	defer e.subsLoadMu.Unlock()
	list, err := e.st.SubscriptionList(ctx, &store.SubscriptionListParams{})
	if err != nil {
		return err
	}
	e.subsMu.RLock()
	old := maps.Clone(e.subs) // the map is changed in place by cacheSubscription
	e.subsMu.RUnlock()
	next := make(map[string]*cachedSub, len(list))
	for _, s := range list {
		if c, ok := old[s.ID]; ok && c.sub == s {
			next[s.ID] = c
			continue
		}
		p, err := glob.Compile(s.Pattern)
		if err != nil {
			e.log.Warn("stored subscription has an invalid pattern", "subscription", s.ID, "err", err)
			continue
		}
		next[s.ID] = &cachedSub{sub: s, pattern: p}
	}
	e.subsMu.Lock()
	e.subs = next
	e.subsMu.Unlock()
	return nil
}

// invalidationRetry is how long the engine waits before reading every
// subscription again after it failed to apply the invalidation feed.
const invalidationRetry = time.Second

// watchInvalidations applies the store's invalidation feed to the
// subscription cache until the engine stops: a subscription created or
// deleted elsewhere (another replica) is read again, and when the feed
// says that everything is invalid (it was lost and is back, so stream
// changes may have been missed too) every subscription is read again,
// the consumers of every stream are reconciled and the due timers swept.
func (e *Engine) watchInvalidations(stop func()) {
	defer stop()
	e.invalidations.Apply(e.life.Context(), &store.CacheLoader{
		Kind:    store.CacheSubscription,
		Load:    e.reloadSubscription,
		LoadAll: e.refreshSubscriptions,
		Taken: func(_ context.Context, all bool) {
			if all {
				e.reconcileKick.Signal()
				e.timers.wake()
			}
		},
		Retry: invalidationRetry,
		Log:   e.log,
	})
}

// reloadSubscription reads one subscription again: it is cached, or
// forgotten when the store no longer has it.
func (e *Engine) reloadSubscription(ctx context.Context, id string) error {
	e.subsLoadMu.Lock()
	defer e.subsLoadMu.Unlock()
	s, err := e.st.SubscriptionGet(ctx, id)
	if errors.Is(err, store.ErrSubscriptionNotFound) {
		e.uncacheSubscription(id)
		return nil
	}
	if err != nil {
		return err
	}
	p, err := glob.Compile(s.Pattern)
	if err != nil {
		e.log.Warn("stored subscription has an invalid pattern", "subscription", s.ID, "err", err)
		e.uncacheSubscription(id)
		return nil
	}
	e.cacheSubscription(*s, p)
	return nil
}

// freshSubscriptions makes sure that the cache holds every subscription
// committed before the stream change being processed: when the engine
// has not applied every invalidation it was sent (they reach the feed in
// commit order, before the changes committed after them), it reads them
// all from the store. A decision to spawn a consumer calls it first.
func (e *Engine) freshSubscriptions(ctx context.Context) error {
	if e.invalidations == nil || !e.invalidations.Pending() {
		return nil // not started, or up to date
	}
	return e.refreshSubscriptions(ctx)
}

func (e *Engine) cacheSubscription(s store.Subscription, p *glob.Pattern) {
	e.subsMu.Lock()
	e.subs[s.ID] = &cachedSub{sub: s, pattern: p}
	e.subsMu.Unlock()
}

func (e *Engine) uncacheSubscription(id string) {
	e.subsMu.Lock()
	delete(e.subs, id)
	e.subsMu.Unlock()
}

func (e *Engine) subscriptionsSnapshot() []*cachedSub {
	e.subsMu.RLock()
	defer e.subsMu.RUnlock()
	out := make([]*cachedSub, 0, len(e.subs))
	for _, s := range e.subs {
		out = append(out, s)
	}
	return out
}

// matching returns the ids of the subscriptions whose pattern matches
// path. While subscriptions are being created, it records path for each
// of them: the caller decides without them.
func (e *Engine) matching(path string) []string {
	e.subsMu.RLock()
	defer e.subsMu.RUnlock()
	for c := range e.creating {
		c.record(path)
	}
	var out []string
	for id, s := range e.subs {
		if s.pattern.Match(path) {
			out = append(out, id)
		}
	}
	return out
}

// subscription returns a subscription, from the cache when it is there.
func (e *Engine) subscription(ctx context.Context, id string) (store.Subscription, error) {
	e.subsMu.RLock()
	c, ok := e.subs[id]
	e.subsMu.RUnlock()
	if ok {
		return c.sub, nil
	}
	s, err := e.st.SubscriptionGet(ctx, id)
	if err != nil {
		return store.Subscription{}, err
	}
	if p, err := glob.Compile(s.Pattern); err == nil {
		e.cacheSubscription(*s, p)
	}
	return *s, nil
}

// creation is a subscription being created: the streams whose spawning
// was decided without it while the store was writing it.
type creation struct {
	mu    sync.Mutex
	paths map[string]struct{} // guarded by mu
}

func (c *creation) record(path string) {
	c.mu.Lock()
	c.paths[path] = struct{}{}
	c.mu.Unlock()
}

// beginCreation starts recording the streams that matching sees until
// endCreation: a subscription committed by the store but not yet cached
// would miss their spawns.
func (e *Engine) beginCreation() *creation {
	c := &creation{paths: map[string]struct{}{}}
	e.subsMu.Lock()
	e.creating[c] = struct{}{}
	e.subsMu.Unlock()
	return c
}

// endCreation stops recording for c and, when the store created the
// subscription, caches it in the same step (so that every matching call
// either sees it or was recorded) and queues the recorded streams again,
// now to be matched with it.
func (e *Engine) endCreation(c *creation, created bool, res *store.SubscriptionCreateResult, pat *glob.Pattern) {
	e.subsMu.Lock()
	delete(e.creating, c)
	if created {
		e.subs[res.Subscription.ID] = &cachedSub{sub: res.Subscription, pattern: pat}
	}
	e.subsMu.Unlock()
	if !created {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for path := range c.paths {
		if pat.Match(path) {
			e.queue.Push(path, queuedPath{flags: flagChanged | flagSpawn})
		}
	}
}
