// Package reaper removes expired streams in the background. Expired streams
// are already invisible to clients (the store treats them as absent); the
// reaper frees their storage.
package reaper

import (
	"context"
	"log/slog"
	"time"

	"github.com/heraldstreams/herald/store"
)

// Config configures a Service.
type Config struct {
	Store store.Store
	// Interval between sweeps (default 1s).
	Interval time.Duration
	// Batch bounds how many streams one sweep removes (default 1000).
	Batch  int
	Now    func() time.Time
	Logger *slog.Logger
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
	if cfg.Batch <= 0 {
		cfg.Batch = 1000
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Service{cfg: cfg}
}

// Run sweeps every Interval until ctx ends.
func (s *Service) Run(ctx context.Context) {
	t := time.NewTicker(s.cfg.Interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if _, err := s.RunOnce(ctx); err != nil && ctx.Err() == nil {
				s.cfg.Logger.Warn("removing expired streams failed", "err", err)
			}
		}
	}
}

// RunOnce removes one batch of expired streams and returns how many.
func (s *Service) RunOnce(ctx context.Context) (int, error) {
	n, err := s.cfg.Store.StreamDeleteExpired(ctx, &store.StreamDeleteExpiredParams{Now: s.cfg.Now(), Limit: s.cfg.Batch})
	if n > 0 {
		s.cfg.Logger.Debug("removed expired streams", "count", n)
	}
	return n, err
}
