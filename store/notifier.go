package store

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"go.opentelemetry.io/otel/trace"
)

// Notifier tells readers and engines that a stream's tail changed. The
// in-process Hub implements it for one process; a backend shared by several
// replicas (Postgres) fans changes out between them (LISTEN/NOTIFY) and
// delivers them through a Hub on each replica.
type Notifier interface {
	// Wait returns a channel that is closed at the next change of the
	// stream with the given ID. Take it before reading the state you wait
	// to see change, so no change falls between the read and the wait.
	Wait(streamID int64) <-chan struct{}
	// Listen returns a feed of every change from now on, in commit order
	// per stream, and a function that stops it. A listener that falls more
	// than buffer changes behind loses the oldest, and the feed says so:
	// engines treat changes as hints and keep their truth in the store.
	Listen(buffer int) (*TailFeed, func())
	// Invalidations returns a feed of changes of what engines cache
	// (subscriptions, endpoints, API keys), made by this process or, on a shared
	// backend, by any replica, and a function that stops it. Unlike
	// Listen it loses nothing: changes not yet taken are coalesced, and
	// when the backend may have missed some (a lost connection) the feed
	// says that everything is invalid.
	Invalidations() (*InvalidationFeed, func())
}

// CacheKind is what an Invalidation is about.
type CacheKind uint8

// Kinds of Invalidation.
const (
	// CacheSubscription: a webhook subscription was created or deleted.
	CacheSubscription CacheKind = iota + 1
	// CacheEndpoint: a delivery endpoint was created, changed, deleted,
	// or its breaker opened.
	CacheEndpoint
	// CacheKey: an API key was created or deleted (revoked). Every
	// replica's verified-key cache and the live reads of a revoked key
	// follow it.
	CacheKey
	// CacheReservedSubscription: a reserved-API subscription was created
	// or deleted. The engine's reserved front door follows it to link new
	// streams by the subscription's pattern on every replica.
	CacheReservedSubscription
	// CacheSigningKey: the reserved API's webhook signing keys were
	// rotated; every replica signs with the new key from then on.
	CacheSigningKey
)

// Invalidation names one changed item of a cache. An empty ID means every
// item of that kind.
type Invalidation struct {
	Kind CacheKind
	ID   string
}

// CacheLoader keeps one kind of cache current from an InvalidationFeed
// (see InvalidationFeed.Apply).
type CacheLoader struct {
	Kind CacheKind
	// Load reads one item again (and forgets it when it is gone).
	Load func(ctx context.Context, id string) error
	// LoadAll reads every item again.
	LoadAll func(ctx context.Context) error
	// Taken, when set, is called when invalidations are taken, before
	// they are applied; all reports that the feed said everything is
	// invalid (stream changes may have been missed too).
	Taken func(ctx context.Context, all bool)
	// Retry is how long to wait before reading every item again after
	// applying failed.
	Retry time.Duration
	Log   *slog.Logger
}

// Apply applies the feed to l's cache until ctx ends: the items of l's
// kind are read again one by one, or all at once when the feed says
// everything is invalid. When applying fails, every item is read again
// after l.Retry, until that succeeds.
func (f *InvalidationFeed) Apply(ctx context.Context, l *CacheLoader) {
	retry := time.NewTimer(l.Retry)
	retry.Stop()
	defer retry.Stop()
	failed := false
	for {
		select {
		case <-ctx.Done():
			return
		case <-f.Ready():
		case <-retry.C:
		}
		items, all := f.take(true)
		if l.Taken != nil {
			l.Taken(ctx, all)
		}
		err := l.apply(ctx, items, all || failed)
		if failed = err != nil; failed {
			if ctx.Err() != nil {
				return
			}
			l.Log.Warn("applying cache invalidations failed; everything is read again shortly", "err", err)
			retry.Reset(l.Retry)
			continue
		}
		f.done()
	}
}

func (l *CacheLoader) apply(ctx context.Context, items []Invalidation, all bool) error {
	var ids []string
	for _, inv := range items {
		if inv.Kind != l.Kind {
			continue
		}
		if inv.ID == "" {
			all = true
		}
		ids = append(ids, inv.ID)
	}
	if all {
		return l.LoadAll(ctx)
	}
	for _, id := range ids {
		if err := l.Load(ctx, id); err != nil {
			return err
		}
	}
	return nil
}

// maxPendingInvalidations bounds what one feed holds between takes; past
// it the feed forgets the items and says that everything is invalid.
const maxPendingInvalidations = 1024

// InvalidationFeed is one engine's view of the invalidations: Ready is
// signalled when some are pending, Take returns them.
type InvalidationFeed struct {
	ready   chan struct{}
	mu      sync.Mutex
	pending map[Invalidation]struct{} // guarded by mu
	all     bool                      // guarded by mu
	busy    bool                      // guarded by mu: taken by Apply, not yet applied
}

func newInvalidationFeed() *InvalidationFeed {
	return &InvalidationFeed{ready: make(chan struct{}, 1), pending: make(map[Invalidation]struct{})}
}

// Ready receives a value when invalidations are pending.
func (f *InvalidationFeed) Ready() <-chan struct{} { return f.ready }

// Take returns the pending invalidations and forgets them; all reports
// that every cached item is invalid (items is then empty).
func (f *InvalidationFeed) Take() (items []Invalidation, all bool) {
	return f.take(false)
}

// take is Take; applying marks the feed busy until done, so Pending stays
// true until what was taken is applied.
func (f *InvalidationFeed) take(applying bool) (items []Invalidation, all bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	all = f.all
	if !all {
		for inv := range f.pending {
			items = append(items, inv)
		}
	}
	f.all = false
	clear(f.pending)
	f.busy = f.busy || applying
	return items, all
}

// done ends what take(true) began.
func (f *InvalidationFeed) done() {
	f.mu.Lock()
	f.busy = false
	f.mu.Unlock()
}

// Pending reports whether invalidations wait to be taken, or (under
// Apply) to be applied: a cache kept by Apply is current when it reports
// false.
func (f *InvalidationFeed) Pending() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.all || len(f.pending) > 0 || f.busy
}

// add records invalidations (none: everything) and signals the feed.
func (f *InvalidationFeed) add(items []Invalidation) {
	f.mu.Lock()
	if len(items) == 0 || f.all || len(f.pending)+len(items) > maxPendingInvalidations {
		f.all = true
		clear(f.pending)
	} else {
		for _, inv := range items {
			f.pending[inv] = struct{}{}
		}
	}
	f.mu.Unlock()
	select {
	case f.ready <- struct{}{}:
	default:
	}
}

// TailChange is one change of a stream's tail or lifecycle.
type TailChange struct {
	StreamID int64
	Path     string
	Tail     int64
	Closed   bool
	Created  bool
	Deleted  bool
	// Trace is the span context of the request that made the change
	// (invalid when tracing is off), so the work it causes, a wake or a
	// match, joins the request's trace.
	Trace trace.SpanContext
}

// Hub is the in-process Notifier. The zero value is not usable; use NewHub.
type Hub struct {
	mu        sync.Mutex
	waiters   map[int64]chan struct{}
	listeners map[*TailFeed]struct{}
	feeds     map[*InvalidationFeed]struct{}
}

var _ Notifier = (*Hub)(nil)

// NewHub returns an empty Hub.
func NewHub() *Hub {
	return &Hub{
		waiters:   make(map[int64]chan struct{}),
		listeners: make(map[*TailFeed]struct{}),
		feeds:     make(map[*InvalidationFeed]struct{}),
	}
}

// Wait implements Notifier. All waiters of one stream share one channel, so
// a change wakes a thousand long-polls with one close.
func (h *Hub) Wait(streamID int64) <-chan struct{} {
	h.mu.Lock()
	defer h.mu.Unlock()
	ch, ok := h.waiters[streamID]
	if !ok {
		ch = make(chan struct{})
		h.waiters[streamID] = ch
	}
	return ch
}

// Listen implements Notifier.
func (h *Hub) Listen(buffer int) (*TailFeed, func()) {
	f := NewTailFeed(buffer)
	h.mu.Lock()
	h.listeners[f] = struct{}{}
	h.mu.Unlock()
	var once sync.Once
	return f, func() {
		once.Do(func() {
			h.mu.Lock()
			delete(h.listeners, f)
			h.mu.Unlock()
		})
	}
}

// Publish wakes the waiters of each changed stream and feeds the listeners.
// Backends call it after the change is durable.
func (h *Hub) Publish(changes ...TailChange) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, c := range changes {
		if ch, ok := h.waiters[c.StreamID]; ok {
			close(ch)
			delete(h.waiters, c.StreamID)
		}
	}
	for f := range h.listeners {
		f.Publish(changes...)
	}
}

// Invalidations implements Notifier.
func (h *Hub) Invalidations() (*InvalidationFeed, func()) {
	f := newInvalidationFeed()
	h.mu.Lock()
	h.feeds[f] = struct{}{}
	h.mu.Unlock()
	var once sync.Once
	return f, func() {
		once.Do(func() {
			h.mu.Lock()
			delete(h.feeds, f)
			h.mu.Unlock()
		})
	}
}

// Invalidate feeds invalidations to every feed. Backends call it after the
// change is durable.
func (h *Hub) Invalidate(items ...Invalidation) {
	if len(items) == 0 {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for f := range h.feeds {
		f.add(items)
	}
}

// Reset tells everyone that changes may have been missed (a shared
// backend's change feed was lost and is back): every waiter wakes to read
// again, and every invalidation feed says that everything is invalid.
func (h *Hub) Reset() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for id, ch := range h.waiters {
		close(ch)
		delete(h.waiters, id)
	}
	for f := range h.feeds {
		f.add(nil)
	}
}
