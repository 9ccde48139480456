package wake

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace"

	"github.com/heraldstreams/herald/internal/service"
	"github.com/heraldstreams/herald/internal/telemetry"
	"github.com/heraldstreams/herald/protocol"
	"github.com/heraldstreams/herald/store"
	"github.com/heraldstreams/herald/subscription"
	"github.com/heraldstreams/herald/webhook"
)

// EngineStore is the part of the storage contract the engine uses: the
// subscription store, stream tails, and the tail-change feed.
type EngineStore interface {
	store.SubscriptionStore
	// StreamGet returns a stream's metadata (its tail) without touching
	// its TTL.
	StreamGet(ctx context.Context, params *store.StreamGetParams) (*store.Stream, error)
	// Notifier reports tail changes, creations and deletions.
	Notifier() store.Notifier
}

// WebhookSender sends wake notifications. *webhook.Sender implements it;
// tests pass one that serves requests in process.
type WebhookSender interface {
	// Send POSTs one request and returns the response, a non-2xx included.
	Send(ctx context.Context, req *webhook.Request) (*webhook.Response, error)
	// ValidateURL refuses a webhook URL Herald must not call (SSRF), with
	// an error that matches webhook.ErrURLRefused.
	ValidateURL(ctx context.Context, raw string) error
}

// Errors of the engine's subscription API.
var (
	// ErrSubscriptionNotFound: no subscription with that id (under that
	// pattern, for a delete).
	ErrSubscriptionNotFound = errors.New("subscription: subscription not found")
	// ErrSubscriptionExists: the id is taken by a subscription with
	// another pattern, webhook or description.
	ErrSubscriptionExists = errors.New("subscription: subscription exists with another configuration")
	// ErrConsumerNotFound: no consumer with that id (GetConsumer).
	ErrConsumerNotFound = errors.New("subscription: consumer not found")
)

// Defaults of EngineConfig.
const (
	DefaultEngineWorkers = 64
	DefaultSweepInterval = time.Second
	// DefaultExclusiveSweepInterval is the SweepInterval of an engine
	// with an ExclusiveStore: every deadline is armed by this process or
	// found by the sweep at start, so the periodic sweep is only a
	// safety net.
	DefaultExclusiveSweepInterval = time.Minute
	// DefaultRefreshInterval is how often the subscriptions are read
	// again in full, a safety net under the invalidation feed.
	DefaultRefreshInterval = time.Minute
	DefaultMaxInFlight     = 8192
	// listenBuffer is the tail-change feed's buffer. The feed is lossy by
	// design; the listener only moves changes into the coalescing queue,
	// so it falls behind only when starved.
	listenBuffer = 1 << 16
	// sweepPage is how many due consumers one store query returns.
	sweepPage = 512
	// casAttempts bounds the compare-and-set retries of one event.
	casAttempts = 16
	// lockStripes is the number of per-consumer lock stripes.
	lockStripes = 1024
)

// EngineConfig configures an Engine.
type EngineConfig struct {
	// Store keeps subscriptions and consumers. Required.
	Store EngineStore
	// Sender posts wake notifications. Required.
	Sender WebhookSender
	// Keyring signs and verifies callback tokens. Required.
	Keyring *subscription.Keyring
	// CallbackBaseURL is Herald's public base URL, without a trailing
	// slash: wakes carry CallbackBaseURL + "/callback/" + consumer id.
	// Required.
	CallbackBaseURL string
	// Now is the clock; time.Now when nil.
	Now func() time.Time
	// Rand is the source of wake ids, jitter and webhook secrets;
	// crypto/rand.Reader when nil.
	Rand io.Reader
	// Logger receives engine errors; slog.Default() when nil.
	Logger *slog.Logger
	// Registerer, when set, receives the engine's metrics.
	Registerer prometheus.Registerer
	// TracerProvider traces wakes: a wake caused by an append or a
	// callback is a child of that request's span, and its POST carries
	// traceparent. Nil: tracing off.
	TracerProvider trace.TracerProvider
	// Workers is how many stream changes are processed at once.
	Workers int
	// SweepInterval is how often the store is asked for due consumers
	// even when no deadline is known to this process (deadlines armed by
	// another replica, or before a restart). Deadlines this process sets
	// fire on time regardless. DefaultSweepInterval when 0, or
	// DefaultExclusiveSweepInterval with an ExclusiveStore.
	SweepInterval time.Duration
	// RefreshInterval is how often every subscription is read again from
	// a shared store. The store's invalidation feed keeps the cache
	// current (a subscription created or deleted by another replica is
	// seen as soon as its notification arrives, and everything is read
	// again when the feed was lost); this is only a safety net, which an
	// ExclusiveStore does without.
	RefreshInterval time.Duration
	// MaxInFlight bounds the webhook requests in flight.
	MaxInFlight int
	// ExclusiveStore says that this engine makes every change to the
	// store's consumers (the embedded store, which one process owns). The
	// engine then remembers which consumers listen to each stream that
	// gets events instead of asking the store at every append. Leave it
	// false when replicas share the store.
	ExclusiveStore bool
	// Reserved opens the engine's second front door, the reserved
	// subscription API (Engine.Reserved), when its Store is set.
	Reserved ReservedConfig
	// StreamOwner names the tenant whose namespace holds a stream path
	// (ok false: no tenant's). A consumer of a tenant's subscription may
	// subscribe only to streams of that tenant; nil: to none beyond
	// those it has.
	StreamOwner func(path string) (tenant string, ok bool)
}

// Engine runs webhook subscriptions (docs/subscriptions.md): it spawns
// consumers for streams that match subscriptions, feeds the state machine
// with stream tails, webhook results, callbacks and timers, persists every
// transition by compare-and-set, and runs the effects (signed wake POSTs,
// timers, removal). Appends never wait for it: it learns of them from the
// store's tail-change feed and catches what the feed drops through the timer
// sweep and a reconciliation at start.
//
// It is the one wake engine of both subscription models: the consumers
// of the reserved API's front door (Reserved) are rows of the same
// table, found by the same workers for a stream's changes, timed by the
// same sweep and claim, and reconciled with the others; each row goes to
// the front door of its kind.
type Engine struct {
	st      EngineStore
	sender  WebhookSender
	keys    *subscription.Keyring
	machine subscription.Machine
	base    string
	now     func() time.Time
	rand    io.Reader
	log     *slog.Logger
	tracer  trace.Tracer
	metrics *engineMetrics
	workers int
	sweep   time.Duration
	refresh time.Duration
	// exclusive: EngineConfig.ExclusiveStore.
	exclusive bool
	// streamOwner is EngineConfig.StreamOwner.
	streamOwner func(path string) (string, bool)

	locks stripedLocks

	subsMu sync.RWMutex
	// subsLoadMu makes the loads of subscriptions from the store (one,
	// or all) run one at a time.
	subsLoadMu sync.Mutex
	subs       map[string]*cachedSub // guarded by subsMu
	// invalidations is the store's feed of subscription changes
	// (engine_subs.go).
	invalidations *store.InvalidationFeed
	// creating holds the subscriptions being created (engine_subs.go).
	creating map[*creation]struct{} // guarded by subsMu

	queue    *service.Queue[queuedPath]
	timers   *deadlines
	members  *memberCache
	inflight chan struct{}

	// life owns the engine's goroutines: its context ends at Stop (no
	// new stream change or timer is processed), its work context when
	// Stop's context ends (wakes in flight are cancelled).
	life *service.Lifecycle
	// reconcileKick asks for a reconciliation of the consumers' streams.
	reconcileKick service.Kick
	// ds is the reserved API's front door; nil without one.
	ds *Reserved
	// claims is what the engine knows of the timers it claimed.
	claims timerBook
}

// NewEngine returns an Engine for cfg. Start runs it.
func NewEngine(cfg EngineConfig) (*Engine, error) {
	if cfg.Store == nil || cfg.Sender == nil || cfg.Keyring == nil || cfg.CallbackBaseURL == "" {
		return nil, errors.New("subscription: an engine needs a store, a sender, a keyring and a callback base URL")
	}
	e := &Engine{
		st:          cfg.Store,
		sender:      cfg.Sender,
		keys:        cfg.Keyring,
		machine:     subscription.Machine{Rand: cfg.Rand},
		base:        cfg.CallbackBaseURL,
		now:         cfg.Now,
		rand:        cfg.Rand,
		log:         cfg.Logger,
		tracer:      telemetry.Tracer(cfg.TracerProvider),
		workers:     cfg.Workers,
		sweep:       cfg.SweepInterval,
		refresh:     cfg.RefreshInterval,
		exclusive:   cfg.ExclusiveStore,
		streamOwner: cfg.StreamOwner,
		subs:        map[string]*cachedSub{},
		creating:    map[*creation]struct{}{},
		queue:       service.NewQueue(mergeQueued),
		life:        service.NewLifecycle(),

		reconcileKick: service.NewKick(),
		timers:        newDeadlines(),
		members:       newMemberCache(cfg.ExclusiveStore),
	}
	if e.now == nil {
		e.now = time.Now
	}
	if e.log == nil {
		e.log = slog.Default()
	}
	if e.workers <= 0 {
		e.workers = DefaultEngineWorkers
	}
	if e.sweep <= 0 {
		e.sweep = DefaultSweepInterval
		if cfg.ExclusiveStore {
			e.sweep = DefaultExclusiveSweepInterval
		}
	}
	if e.refresh <= 0 {
		e.refresh = DefaultRefreshInterval
	}
	if cfg.MaxInFlight <= 0 {
		cfg.MaxInFlight = DefaultMaxInFlight
	}
	e.inflight = make(chan struct{}, cfg.MaxInFlight)
	m, err := newEngineMetrics(cfg.Registerer, e.st)
	if err != nil {
		return nil, err
	}
	e.metrics = m
	if cfg.Reserved.Store != nil {
		e.ds = newReserved(e, cfg.Reserved)
	}
	return e, nil
}

// Reserved returns the engine's front door for the reserved
// subscription API; nil when EngineConfig.Reserved has no store.
func (e *Engine) Reserved() *Reserved { return e.ds }

// random is the engine's source of randomness.
func (e *Engine) random() io.Reader {
	if e.rand == nil {
		return rand.Reader
	}
	return e.rand
}

// lock takes the lock of a consumer: events of one consumer are applied
// one at a time in this process (callbacks are serial per consumer), and
// compare-and-set orders them across replicas.
func (e *Engine) lock(id string) func() { return e.locks.lock(id) }

// stripedLocks serialize the changes of one row (a consumer, a reserved
// API subscription) in this process; ids share lockStripes mutexes.
type stripedLocks [lockStripes]sync.Mutex

// lock takes id's stripe and returns its unlock.
func (l *stripedLocks) lock(id string) func() {
	h := fnv.New32a()
	h.Write([]byte(id))
	mu := &l[h.Sum32()%lockStripes]
	mu.Lock()
	return mu.Unlock
}

// runEffects runs what a decision asked for, after it was stored, for a
// row of either kind. ctx names the span of what caused the decision (an
// append, a callback, a webhook's answer), which a wake it sends
// continues. A query-string consumer's wake is signed with its
// subscription's HMAC secret, a reserved row's with the active Ed25519
// key; a pull-wake row's wake is an event of its wake stream.
func (e *Engine) runEffects(ctx context.Context, a applied) {
	for _, eff := range a.Effects {
		switch eff := eff.(type) {
		case subscription.SendWake:
			parent := trace.SpanContextFromContext(ctx)
			if a.Config != nil {
				e.goSend(func() { e.ds.deliver(parent, a) })
				continue
			}
			e.startSend(parent, a, eff)
		case subscription.AppendWake:
			e.life.Go(func() { e.ds.appendWake(a) })
		case subscription.ArmTimer:
			e.timers.add(eff.At)
		case subscription.Remove:
			e.logRemoved(a.Consumer, eff.Reason)
		}
	}
}

// logRemoved logs the removal of a consumer (garbage collection): a
// consumer whose webhook kept failing is a warning, as its wake retries
// were exhausted.
func (e *Engine) logRemoved(c subscription.Consumer, reason subscription.RemoveReason) {
	if reason == subscription.RemovedWebhookFailing {
		e.log.Warn("wake retries exhausted: consumer removed", "consumer", c.ID, "subscription", c.SubscriptionID,
			"reason", reason, "failing_since", c.FailingSince, "epoch", c.Epoch, "wake_id", c.WakeID)
		return
	}
	e.log.Info("consumer removed", "consumer", c.ID, "subscription", c.SubscriptionID, "reason", reason)
}

// tails reads the current tail of every path, as offsets. A stream that
// does not exist is left out (its tail counts as OffsetStart).
func (e *Engine) tails(ctx context.Context, paths, extra []string) (subscription.Tails, error) {
	t := make(subscription.Tails, len(paths)+len(extra))
	now := e.now()
	for _, list := range [][]string{paths, extra} {
		for _, p := range list {
			if _, done := t[p]; done {
				continue
			}
			s, err := e.st.StreamGet(ctx, &store.StreamGetParams{Path: p, Now: now})
			switch {
			case errors.Is(err, store.ErrNotFound), errors.Is(err, store.ErrStreamGone):
				t[p] = ""
			case err != nil:
				return nil, fmt.Errorf("subscription: reading the tail of %s: %w", p, err)
			default:
				t[p] = protocol.FormatOffset(s.Tail)
			}
		}
	}
	for p, v := range t {
		if v == "" {
			delete(t, p)
		}
	}
	return t, nil
}

// withTails returns ev carrying tails.
func withTails(ev subscription.Event, t subscription.Tails) subscription.Event {
	switch ev := ev.(type) {
	case subscription.TailsChanged:
		ev.Tails = t
		return ev
	case subscription.Tick:
		ev.Tails = t
		return ev
	case subscription.WebhookResult:
		ev.Tails = t
		return ev
	case subscription.Callback:
		ev.Tails = t
		return ev
	}
	return ev
}

func removal(effects []subscription.Effect) (subscription.Remove, bool) {
	for _, eff := range effects {
		if r, ok := eff.(subscription.Remove); ok {
			return r, true
		}
	}
	return subscription.Remove{}, false
}

// fromStored converts a stored consumer to the machine's.
func fromStored(sc *store.Consumer) subscription.Consumer {
	c := subscription.Consumer{
		ID:               sc.ID,
		SubscriptionID:   sc.SubscriptionID,
		Incarnation:      sc.Incarnation,
		PrimaryStream:    sc.PrimaryStream,
		State:            subscription.State(sc.State),
		Epoch:            sc.Epoch,
		WakeID:           sc.WakeID,
		Attempts:         sc.Attempts,
		WakingDeadline:   sc.WakingDeadline,
		NextRetryAt:      sc.NextRetryAt,
		LivenessDeadline: sc.LivenessDeadline,
		FailingSince:     sc.FailingSince,
		StalledWakes:     sc.StalledWakes,
		StalledSince:     sc.StalledSince,
		Holder:           sc.Holder,
		WakeWritten:      sc.WakeWritten,
		Streams:          make([]subscription.StreamCursor, 0, len(sc.Streams)),
	}
	for _, s := range sc.Streams {
		c.Streams = append(c.Streams, subscription.StreamCursor{Path: s.Path, Acked: s.Acked, Notified: s.Notified, Glob: s.Glob, Explicit: s.Explicit})
	}
	return c
}

// toStored converts a machine consumer to the stored form; DueAt is its
// next deadline (Consumer.Due, by its kind), which the timer sweep looks
// for.
func toStored(c *subscription.Consumer) store.Consumer {
	sc := store.Consumer{
		ID:               c.ID,
		SubscriptionID:   c.SubscriptionID,
		Incarnation:      c.Incarnation,
		PrimaryStream:    c.PrimaryStream,
		State:            string(c.State),
		Epoch:            c.Epoch,
		WakeID:           c.WakeID,
		Attempts:         c.Attempts,
		WakingDeadline:   c.WakingDeadline,
		NextRetryAt:      c.NextRetryAt,
		LivenessDeadline: c.LivenessDeadline,
		FailingSince:     c.FailingSince,
		StalledWakes:     c.StalledWakes,
		StalledSince:     c.StalledSince,
		Holder:           c.Holder,
		WakeWritten:      c.WakeWritten,
		DueAt:            c.Due(),
		Streams:          make([]store.ConsumerStream, 0, len(c.Streams)),
	}
	for _, s := range c.Streams {
		sc.Streams = append(sc.Streams, store.ConsumerStream{Path: s.Path, Acked: s.Acked, Notified: s.Notified, Glob: s.Glob, Explicit: s.Explicit})
	}
	return sc
}

// sameConsumer reports whether a decision changed nothing, so that no
// write is needed (events for a WAKING or LIVE consumer usually change
// nothing: wake batching).
func sameConsumer(a, b *subscription.Consumer) bool {
	if a.Incarnation != b.Incarnation || a.State != b.State || a.Epoch != b.Epoch || a.WakeID != b.WakeID || a.Attempts != b.Attempts ||
		!a.WakingDeadline.Equal(b.WakingDeadline) || !a.NextRetryAt.Equal(b.NextRetryAt) ||
		!a.LivenessDeadline.Equal(b.LivenessDeadline) || !a.FailingSince.Equal(b.FailingSince) ||
		a.StalledWakes != b.StalledWakes || !a.StalledSince.Equal(b.StalledSince) ||
		a.Holder != b.Holder || a.WakeWritten != b.WakeWritten || len(a.Streams) != len(b.Streams) {
		return false
	}
	for i := range a.Streams {
		if a.Streams[i] != b.Streams[i] {
			return false
		}
	}
	return true
}
