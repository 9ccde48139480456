// Package replica keeps this replica's heartbeat in the store and takes
// over the work of replicas that stopped beating (docs/operations.md,
// Replicas): every Interval it beats, and once its own beats have gone
// through for a while it asks the store to end the claims of every
// replica whose last beat is older than DeadAfter (store.ReplicaStore).
// The engines then claim that work at once: a replica killed with -9
// has its deliveries and timers taken over within DeadAfter plus an
// Interval, not when each claim's lease ends.
//
// The beat also says whether the database is reachable: readiness
// follows it, not ready while beats fail and ready again at the first
// that goes through.
package replica

import (
	"context"
	"log/slog"
	"time"

	"github.com/heraldstreams/herald/internal/service"
	"github.com/heraldstreams/herald/store"
)

// Defaults of Config.
const (
	DefaultInterval  = 2 * time.Second
	DefaultDeadAfter = 10 * time.Second
)

// Config configures a Heart.
type Config struct {
	Store store.ReplicaStore
	// Interval between beats (DefaultInterval when 0).
	Interval time.Duration
	// DeadAfter is how old another replica's last beat may be before
	// its claims are ended (DefaultDeadAfter when 0). It must exceed
	// Interval by a margin: a live replica late with one beat (a pause,
	// a slow commit) is declared dead otherwise.
	DeadAfter time.Duration
	// Clock times the beats and stamps them; the system clock when nil.
	// The replicas' clocks must agree to well within DeadAfter.
	Clock  service.Clock
	Logger *slog.Logger
	// Released, when set, is called after claims of dead replicas were
	// ended, so that the engines claim the work now.
	Released func()
	// Health, when set, is called after every beat: nil when the
	// database took it, else why not.
	Health func(err error)
}

// Heart beats for one replica.
type Heart struct {
	cfg Config
	// since is when the beats last began to go through (zero: the last
	// one failed, or none was made yet).
	since time.Time
}

// New returns a Heart with defaults filled in.
func New(cfg Config) *Heart {
	if cfg.Interval <= 0 {
		cfg.Interval = DefaultInterval
	}
	if cfg.DeadAfter <= 0 {
		cfg.DeadAfter = DefaultDeadAfter
	}
	if cfg.Clock == nil {
		cfg.Clock = service.RealClock{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Heart{cfg: cfg}
}

// settle is how long this replica's beats must go through before it
// reaps: long enough for every live replica to beat again after an
// outage of the database (two Intervals, or half of DeadAfter when that
// is more), so that only the ones that stopped beating before it, or
// never came back, are found dead.
func (h *Heart) settle() time.Duration { return max(2*h.cfg.Interval, h.cfg.DeadAfter/2) }

// Run beats until ctx ends, the first time at once.
func (h *Heart) Run(ctx context.Context) {
	p := &service.Periodic{Interval: h.cfg.Interval, Clock: h.cfg.Clock, Immediately: true, Run: func(ctx context.Context) {
		if err := h.Beat(ctx); err != nil && ctx.Err() == nil {
			h.cfg.Logger.Warn("replica heartbeat failed", "replica", h.cfg.Store.ReplicaID(), "err", err)
		}
	}}
	p.Loop(ctx)
}

// Beat makes one beat (Run calls it; it is not for concurrent use) and,
// once its beats have gone through for a while (settle), ends the claims
// of the replicas that stopped beating.
//
// Waiting for its own beats to settle first is what keeps a replica from
// reaping live ones after an outage of the database: while it was away
// nobody could beat, so every beat is old when it comes back, and the
// others beat again within an Interval of it.
func (h *Heart) Beat(ctx context.Context) error {
	now := h.cfg.Clock.Now()
	err := h.cfg.Store.ReplicaBeat(ctx, &store.ReplicaBeatParams{Now: now})
	if h.cfg.Health != nil {
		h.cfg.Health(err)
	}
	if err != nil {
		h.since = time.Time{}
		return err
	}
	if h.since.IsZero() {
		h.since = now
	}
	if now.Sub(h.since) < h.settle() {
		return nil
	}
	res, err := h.cfg.Store.ReplicaReap(ctx, &store.ReplicaReapParams{Now: now, DeadAfter: h.cfg.DeadAfter})
	if err != nil {
		return err
	}
	if len(res.Replicas) == 0 {
		return nil
	}
	h.cfg.Logger.Warn("replicas stopped beating; their claims are taken over", "replicas", res.Replicas, "claims", res.Released,
		"dead_after", h.cfg.DeadAfter)
	if res.Released > 0 && h.cfg.Released != nil {
		h.cfg.Released()
	}
	return nil
}
