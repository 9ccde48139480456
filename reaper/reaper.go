// Package reaper removes expired streams in the background. Expired streams
// are already invisible to clients (the store treats them as absent); the
// reaper frees their storage. Of several replicas on one database, one
// sweeps at a time: the one holding the store's named lease "reaper",
// which another takes over when its holder stops renewing it.
package reaper

import (
	"context"
	"log/slog"
	"time"

	"github.com/heraldstreams/herald/internal/service"
	"github.com/heraldstreams/herald/store"
)

// Config configures a Service.
type Config struct {
	Store store.Store
	// Interval between sweeps (default 1s) while sweeps find expired
	// streams. A sweep that finds none doubles the wait, up to
	// MaxInterval (default 1 min): a store where nothing expires is
	// swept once a minute, however many streams it holds (expired
	// streams are invisible already; the sweep only frees storage).
	Interval    time.Duration
	MaxInterval time.Duration
	// Batch bounds how many streams one sweep removes (default 1000).
	Batch int
	// Lease is how long the sweeper's lease runs without a renewal: a
	// replica takes the sweeps over this long after their sweeper died
	// (default 3 Intervals, at least 15 s).
	Lease  time.Duration
	Now    func() time.Time
	Logger *slog.Logger
	// Clock times the sweeps; the system clock when nil.
	Clock service.Clock
}

// Service sweeps expired streams.
type Service struct {
	cfg Config
}

// New returns a Service with defaults filled in.
func New(cfg Config) *Service {
	if cfg.Interval <= 0 {
		cfg.Interval = time.Second
	}
	if cfg.MaxInterval < cfg.Interval {
		cfg.MaxInterval = max(cfg.Interval, time.Minute)
	}
	if cfg.Batch <= 0 {
		cfg.Batch = 1000
	}
	if cfg.Lease <= 0 {
		cfg.Lease = max(3*cfg.Interval, 15*time.Second)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Service{cfg: cfg}
}

// Run sweeps until ctx ends: every Interval while sweeps remove streams
// (at once again after a full batch), backing off to MaxInterval while
// they find none.
func (s *Service) Run(ctx context.Context) {
	pace := &service.Backoff{Base: s.cfg.Interval, Max: s.cfg.MaxInterval}
	p := &service.Periodic{Clock: s.cfg.Clock, Next: pace.Next, Run: func(ctx context.Context) {
		n, _, err := s.Sweep(ctx)
		if err != nil && ctx.Err() == nil {
			s.cfg.Logger.Warn("removing expired streams failed", "err", err)
		}
		if err == nil && n >= s.cfg.Batch {
			pace.Again()
			return
		}
		pace.Ran(n > 0 || err != nil)
	}}
	p.Loop(ctx)
}

// LeaseName is the store lease the sweeper holds.
const LeaseName = "reaper"

// Sweep takes or renews the sweeper's lease and, when this replica holds
// it, removes one batch of expired streams: it returns how many, and
// whether it swept.
func (s *Service) Sweep(ctx context.Context) (int, bool, error) {
	held, err := s.cfg.Store.LeaseAcquire(ctx, &store.LeaseAcquireParams{Name: LeaseName, TTL: s.cfg.Lease, Now: s.cfg.Now()})
	if err != nil || !held {
		return 0, false, err
	}
	n, err := s.RunOnce(ctx)
	return n, true, err
}

// RunOnce removes one batch of expired streams and returns how many.
func (s *Service) RunOnce(ctx context.Context) (int, error) {
	n, err := s.cfg.Store.StreamDeleteExpired(ctx, &store.StreamDeleteExpiredParams{Now: s.cfg.Now(), Limit: s.cfg.Batch})
	if n > 0 {
		s.cfg.Logger.Debug("removed expired streams", "count", n)
	}
	return n, err
}
