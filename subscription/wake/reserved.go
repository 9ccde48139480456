package wake

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/heraldstreams/herald/glob"
	"github.com/heraldstreams/herald/internal/service"
	"github.com/heraldstreams/herald/store"
	"github.com/heraldstreams/herald/subscription"
)

// ReservedStore is the part of the storage contract the reserved API's
// engine uses.
type ReservedStore interface {
	store.DSSubscriptionStore
	store.SigningKeyStore
	// The consumer rows a subscription is kept in.
	ConsumerGet(ctx context.Context, id string) (*store.Consumer, error)
	ConsumerUpdate(ctx context.Context, params *store.ConsumerUpdateParams) (int64, error)
	ConsumerDelete(ctx context.Context, params *store.ConsumerDeleteParams) error
	ConsumerClaimDue(ctx context.Context, params *store.ConsumerClaimDueParams) (*store.ConsumerClaimDueResult, error)
	ConsumerListByStream(ctx context.Context, params *store.ConsumerListByStreamParams) ([]store.Consumer, error)
	StreamGet(ctx context.Context, params *store.StreamGetParams) (*store.Stream, error)
	StreamAppend(ctx context.Context, params *store.StreamAppendParams) (*store.StreamAppendResult, error)
	StreamList(ctx context.Context, params *store.StreamListParams) ([]store.Stream, error)
	Notifier() store.Notifier
}

// ReservedConfig opens the reserved API's front door of an Engine
// (EngineConfig.Reserved): it shares the engine's sender, callback token
// keys, public URL, clock, loops and timers.
type ReservedConfig struct {
	// Store keeps the subscriptions' consumer rows and the signing
	// keys; nil: the engine serves no reserved API.
	Store ReservedStore
	// Root is the stream root.
	Root subscription.Root
	// Logger receives the front door's errors; the engine's when nil.
	Logger *slog.Logger
}

// Reserved is the engine's front door for the subscriptions of the
// Durable Streams protocol's reserved API (docs/reserved-subscriptions.md):
// it links streams to subscriptions, issues wakes by webhook or to a wake
// stream, and applies callbacks, claims, acks and releases. A
// subscription is a consumer row of kind store.ConsumerReserved (its
// links the consumer's memberships), so it shares the other front door's
// durable model and the engine's one loop: the engine's workers bring it
// the changes of its streams, the engine's sweep the timers it claims
// (ConsumerClaimDue, one replica at a time, ended for a dead replica as
// every consumer's), and every change is a compare-and-set of the row
// (ConsumerUpdate) decided by the one subscription.Machine, so replicas and
// restarts agree.
type Reserved struct {
	st     ReservedStore
	sender WebhookSender
	keys   *subscription.Keyring
	root   subscription.Root
	base   string
	now    func() time.Time
	rand   io.Reader
	log    *slog.Logger

	// e is the engine whose one loop (Engine.apply) decides and stores
	// every input of a subscription, and whose runner (runEffects) runs
	// the effects; members and life are its member cache and lifecycle.
	e       *Engine
	members *memberCache
	life    *service.Lifecycle

	// subsFeed and keysFeed are the store's invalidations of the
	// reserved-API subscriptions and of the signing keys: a subscription
	// created or deleted, or a key rotated, on any replica is read again
	// here (watch), as the query-string subscriptions are.
	subsFeed, keysFeed *store.InvalidationFeed

	// patterns are the subscriptions with a pattern, by id: who links a
	// new stream (refreshPatterns, reloadPattern).
	patternsMu sync.RWMutex
	patterns   map[string]dsPattern
	// known are every subscription this process has seen, by id, with
	// its creation time (a subscription deleted and made again is new);
	// count is how many: with none, a stream change costs nothing.
	known map[string]time.Time
	count atomic.Int64

	signMu  sync.RWMutex
	signing []subscription.SigningKey // the active key first
}

// dsPattern is a subscription's compiled pattern, creation time and
// wake stream (absolute, "" for a webhook), which the pattern never
// links: its own wake events would wake it again and again.
type dsPattern struct {
	p       *glob.Pattern
	created time.Time
	wake    string
}

// links reports whether the pattern links path.
func (d *dsPattern) links(root subscription.Root, path string) bool {
	_, under := root.Rel(path)
	return under && path != d.wake && !strings.HasPrefix(path, root.Reserved()) && d.p.Match(path)
}

// newReserved returns the front door of engine e for cfg.
func newReserved(e *Engine, cfg ReservedConfig) *Reserved {
	r := &Reserved{
		st: cfg.Store, sender: e.sender, keys: e.keys,
		root: cfg.Root, base: e.base, now: e.now, rand: e.random(), log: cfg.Logger,
		e: e, members: e.members, life: e.life,
		patterns: map[string]dsPattern{},
		known:    map[string]time.Time{},
	}
	if r.root == "" {
		r.root = "/"
	}
	if r.log == nil {
		r.log = e.log
	}
	return r
}

// start loads (or makes) the signing key and the patterns (linking the
// streams created while no process listened), and follows the store's
// invalidations of both on the engine's lifecycle; Engine.Start calls
// it. No timer lists the subscriptions: like the query-string ones, a
// subscription made elsewhere is read again when its invalidation
// arrives, and all of them when the feed was lost.
func (r *Reserved) start(ctx context.Context) error {
	// The feeds are taken before the reads, so that a change committed
	// meanwhile is applied after them.
	subs, stopSubs := r.st.Notifier().Invalidations()
	keys, stopKeys := r.st.Notifier().Invalidations()
	err := r.initSigningKeys(ctx)
	if err == nil {
		err = r.refreshPatterns(ctx)
	}
	if err != nil {
		stopSubs()
		stopKeys()
		return err
	}
	r.subsFeed, r.keysFeed = subs, keys
	r.watch(subs, stopSubs, &store.CacheLoader{Kind: store.CacheReservedSubscription, Load: r.reloadPattern, LoadAll: r.refreshPatterns})
	r.watch(keys, stopKeys, &store.CacheLoader{Kind: store.CacheSigningKey, Load: func(ctx context.Context, _ string) error { return r.refreshKeys(ctx) }, LoadAll: r.refreshKeys})
	return nil
}

// watch applies feed to l until the engine stops.
func (r *Reserved) watch(feed *store.InvalidationFeed, stop func(), l *store.CacheLoader) {
	l.Retry, l.Log = invalidationRetry, r.log
	if !r.life.Go(func() {
		defer stop()
		feed.Apply(r.life.Context(), l)
	}) {
		stop()
	}
}

// fresh makes sure the patterns hold every subscription committed before
// the stream change being processed (Engine.freshSubscriptions' rule):
// when an invalidation is not applied yet, they are all read again.
func (r *Reserved) fresh(ctx context.Context) error {
	if r.subsFeed == nil || !r.subsFeed.Pending() {
		return nil
	}
	return r.refreshPatterns(ctx)
}

// initSigningKeys loads the signing keys, storing a new one when the
// store has none.
func (r *Reserved) initSigningKeys(ctx context.Context) error {
	k, err := subscription.NewSigningKey(r.rand, r.now())
	if err != nil {
		return err
	}
	keys, err := r.st.SigningKeyInit(ctx, store.SigningKey{Kid: k.Kid, Seed: k.Private.Seed(), CreatedAt: k.CreatedAt})
	if err != nil {
		return fmt.Errorf("subscription: loading the webhook signing keys: %w", err)
	}
	return r.setSigningKeys(keys)
}

func (r *Reserved) setSigningKeys(stored []store.SigningKey) error {
	keys := make([]subscription.SigningKey, 0, len(stored))
	for _, s := range stored {
		k, err := subscription.SigningKeyFromSeed(s.Seed, s.CreatedAt, s.RetiredAt)
		if err != nil {
			return err
		}
		keys = append(keys, k)
	}
	if len(keys) == 0 || !keys[0].RetiredAt.IsZero() {
		return errors.New("subscription: the store holds no active webhook signing key")
	}
	r.signMu.Lock()
	r.signing = keys
	r.signMu.Unlock()
	return nil
}

// RotateSigningKey makes a new active signing key; the old one stays
// published in the JWKS for subscription.SigningKeyPublished, so
// webhooks it signed still verify. Other replicas pick the new key up
// when its invalidation reaches them.
func (r *Reserved) RotateSigningKey(ctx context.Context) (string, error) {
	k, err := subscription.NewSigningKey(r.rand, r.now())
	if err != nil {
		return "", err
	}
	keys, err := r.st.SigningKeyRotate(ctx, store.SigningKey{Kid: k.Kid, Seed: k.Private.Seed(), CreatedAt: k.CreatedAt})
	if err != nil {
		return "", err
	}
	return k.Kid, r.setSigningKeys(keys)
}

// activeKey is the key that signs now.
func (r *Reserved) activeKey() subscription.SigningKey {
	r.signMu.RLock()
	defer r.signMu.RUnlock()
	return r.signing[0]
}

// JWKS is the published key set at {root}/__ds/jwks.json.
func (r *Reserved) JWKS() []byte {
	r.signMu.RLock()
	defer r.signMu.RUnlock()
	return subscription.MarshalJWKS(subscription.PublishedKeys(r.signing, r.now()))
}

// refreshKeys reads the signing keys again.
func (r *Reserved) refreshKeys(ctx context.Context) error {
	keys, err := r.st.SigningKeyList(ctx)
	if err != nil {
		return err
	}
	return r.setSigningKeys(keys)
}

// refreshPatterns reads every subscription again (at start, and when the
// invalidation feed was lost). To each subscription that is new here it
// links the streams its pattern matches (those created while this
// process did not know of it), and it settles it: its work may have come
// while no process here knew of it.
func (r *Reserved) refreshPatterns(ctx context.Context) error {
	subs, err := r.st.DSSubscriptionList(ctx)
	if err != nil {
		return err
	}
	next := make(map[string]dsPattern, len(subs))
	known := make(map[string]time.Time, len(subs))
	var fresh []string
	r.patternsMu.RLock()
	for _, s := range subs {
		id := dsSubscriptionID(s.ID)
		known[id] = s.CreatedAt
		if was, ok := r.known[id]; !ok || !was.Equal(s.CreatedAt) {
			fresh = append(fresh, id)
		}
		if old, ok := r.patterns[id]; ok && old.created.Equal(s.CreatedAt) {
			next[id] = old
		} else if p, ok := r.patternOf(&s); ok {
			next[id] = p
		}
	}
	r.patternsMu.RUnlock()
	r.patternsMu.Lock()
	r.patterns, r.known = next, known
	r.count.Store(int64(len(known)))
	r.patternsMu.Unlock()
	for _, id := range fresh {
		r.linkFresh(ctx, id)
	}
	return nil
}

// reloadPattern reads one subscription again (its invalidation came): a
// new one is remembered and linked to the streams its pattern matches, a
// deleted one forgotten.
func (r *Reserved) reloadPattern(ctx context.Context, consumerID string) error {
	id := dsSubscriptionID(consumerID)
	row, err := r.st.ConsumerGet(ctx, consumerID)
	gone := errors.Is(err, store.ErrConsumerNotFound) || err == nil && row.Kind != store.ConsumerReserved
	if err != nil && !gone {
		return err
	}
	r.patternsMu.Lock()
	was, known := r.known[id]
	switch {
	case gone:
		delete(r.patterns, id)
		delete(r.known, id)
	case !known || !was.Equal(row.CreatedAt):
		r.known[id] = row.CreatedAt
		if p, ok := r.patternOf(row); ok {
			r.patterns[id] = p
		} else {
			delete(r.patterns, id)
		}
	}
	r.count.Store(int64(len(r.known)))
	r.patternsMu.Unlock()
	if !gone && (!known || !was.Equal(row.CreatedAt)) {
		r.linkFresh(ctx, id)
	}
	return nil
}

// patternOf compiles a stored subscription's pattern; false for none (or
// a stored one that is invalid, which is logged).
func (r *Reserved) patternOf(s *store.Consumer) (dsPattern, bool) {
	if s.Pattern == "" {
		return dsPattern{}, false
	}
	id := dsSubscriptionID(s.ID)
	p, err := glob.Compile(s.Pattern)
	if err != nil {
		r.log.Warn("a reserved-API subscription has an invalid pattern", "subscription", id, "err", err)
		return dsPattern{}, false
	}
	cfg, err := configOf(s.Config)
	if err != nil {
		r.log.Warn("a reserved-API subscription has an invalid configuration", "subscription", id, "err", err)
		return dsPattern{}, false
	}
	return dsPattern{p: p, created: s.CreatedAt, wake: r.wakePath(&cfg)}, true
}

// linkFresh links a subscription new to this process to the streams its
// pattern matches and settles it.
func (r *Reserved) linkFresh(ctx context.Context, id string) {
	err := r.linkMatching(ctx, id)
	if err == nil {
		err = r.settle(ctx, id)
	}
	if err != nil && !errors.Is(err, store.ErrSubscriptionNotFound) && ctx.Err() == nil {
		r.log.Warn("linking streams to a reserved-API subscription", "subscription", id, "err", err)
	}
}

// wakePath is a configuration's absolute wake stream path, "" for none.
func (r *Reserved) wakePath(cfg *subscription.DSConfig) string {
	if cfg.WakeStream == "" {
		return ""
	}
	return r.root.Abs(cfg.WakeStream)
}

// dsPrefix begins the consumer id of a reserved-API subscription (and
// the subject of its tokens): a query-string consumer's id holds a ':'
// and no '/', so neither front door can name the other's rows.
const dsPrefix = "__ds/"

// dsConsumerID is the consumer id of subscription id.
func dsConsumerID(id string) string { return dsPrefix + id }

// dsSubscriptionID is the subscription id of a consumer id.
func dsSubscriptionID(consumerID string) string { return strings.TrimPrefix(consumerID, dsPrefix) }

// configOf decodes a stored configuration.
func configOf(raw string) (subscription.DSConfig, error) {
	var c subscription.DSConfig
	if err := json.Unmarshal([]byte(raw), &c); err != nil {
		return c, fmt.Errorf("subscription: a stored reserved-API configuration is malformed: %w", err)
	}
	return c, nil
}
