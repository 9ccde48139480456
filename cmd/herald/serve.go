package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/heraldstreams/herald/auth"
	"github.com/heraldstreams/herald/httpapi"
	"github.com/heraldstreams/herald/internal/secretbox"
	"github.com/heraldstreams/herald/reaper"
	"github.com/heraldstreams/herald/store/postgres"
	"github.com/heraldstreams/herald/store/sqlite"
)

// serve runs Herald until ctx ends (SIGINT or SIGTERM), then shuts down
// gracefully: it stops taking requests, ends live reads cleanly, lets
// in-flight appends finish, and flushes and closes the store.
func serve(ctx context.Context, cfg *serveConfig, logOut io.Writer) error {
	log := newLogger(cfg, logOut)
	st, err := openStore(ctx, kekSource{Keys: cfg.KEK, File: cfg.KEKFile, DataDir: cfg.DataDir}, func(box *secretbox.Box) (heraldStore, error) {
		storeLog := log.With("part", "store")
		if cfg.Store == "postgres" {
			st, err := postgres.Open(ctx, cfg.PostgresURL, postgres.Options{Logger: storeLog, Box: box})
			if err != nil {
				return nil, err
			}
			return st, nil
		}
		st, err := sqlite.Open(ctx, sqlite.Config{Dir: cfg.DataDir, Logger: storeLog, Box: box})
		if err != nil {
			return nil, err
		}
		return st, nil
	})
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return errors.Join(fmt.Errorf("listen on %s: %w", cfg.Addr, err), st.Close())
	}
	if err := cfg.Access.checkListen(ln.Addr()); err != nil {
		return errors.Join(err, ln.Close(), st.Close())
	}
	authn, jwtv, err := cfg.Access.newAuthenticator(ctx, st, ln.Addr(), log.With("part", "auth"))
	if err != nil {
		return errors.Join(err, ln.Close(), st.Close())
	}
	if jwtv != nil {
		defer jwtv.Close()
	}
	api := httpapi.New(httpapi.Config{
		Store:            st,
		Logger:           log.With("part", "http"),
		AuditLogger:      log.With("part", "audit"),
		LongPollTimeout:  cfg.LongPollTimeout,
		MaxBodyBytes:     cfg.MaxBodyBytes,
		MaxReadBytes:     cfg.MaxReadBytes,
		SSEMaxDuration:   cfg.SSEMaxDuration,
		MaxBufferedBytes: cfg.MaxBufferedBytes,
		BodyReadTimeout:  cfg.BodyReadTimeout,
		MinBodyRate:      cfg.MinBodyRate,
		MaxConnections:   cfg.MaxConnections,
		Auth:             authn,
		AllowedOrigins:   splitList(cfg.Access.AllowedOrigins),
		AllowedHosts:     cfg.Access.allowedHosts(ln.Addr(), cfg.PublicURL),
	})
	metrics := prometheus.NewRegistry()
	metrics.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	if err := api.RegisterMetrics(metrics); err != nil {
		return errors.Join(fmt.Errorf("metrics: %w", err), ln.Close(), st.Close())
	}
	metricsRule := auth.Rule{Scope: auth.ScopeAdmin}
	if cfg.Access.PublicMetrics {
		metricsRule = auth.Rule{Public: true}
	}
	api.Handle("GET "+httpapi.HeraldPrefix+"metrics", metricsRule, promhttp.HandlerFor(metrics, promhttp.HandlerOpts{}))
	auth.NewKeysAPI(auth.KeysAPIConfig{Auth: authn, Store: st, Logger: log.With("part", "keys")}).Mount(api)
	subs, err := startSubscriptions(ctx, subscriptionsParams{
		Config: cfg, Store: st, TokenKeys: st, API: api, Metrics: metrics,
		Logger: log.With("part", "subscriptions"), Listener: ln.Addr(),
	})
	if err != nil {
		return errors.Join(fmt.Errorf("webhook subscriptions: %w", err), ln.Close(), st.Close())
	}
	deliv, err := startDelivery(ctx, deliveryParams{Config: cfg, Store: st, API: api, Metrics: metrics, Logger: log.With("part", "delivery")})
	if err != nil {
		subs.Stop()
		return errors.Join(err, ln.Close(), st.Close())
	}
	// No ReadTimeout: it would cut long-polls and SSE responses. Bodies
	// get their own deadline from the handler (httpapi's body rules).
	srv := &http.Server{
		Handler:           api,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       120 * time.Second,
		MaxHeaderBytes:    cfg.MaxHeaderBytes,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}

	// Background services live until the server has stopped serving.
	svcCtx, stopServices := context.WithCancel(context.WithoutCancel(ctx))
	var services sync.WaitGroup
	services.Add(1)
	go func() {
		defer services.Done()
		reaper.New(reaper.Config{Store: st, Logger: log.With("part", "reaper")}).Run(svcCtx)
	}()

	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Serve(api.LimitListener(ln)) }()
	api.SetReady(true)
	log.Info("herald listening", "addr", ln.Addr().String(), "data_dir", cfg.DataDir, "version", buildVersion())

	var errs []error
	select {
	case err := <-serveErr:
		errs = append(errs, fmt.Errorf("serve: %w", err))
	case <-ctx.Done():
		log.Info("shutting down")
		api.SetReady(false)
		api.Shutdown() // live readers answer now instead of at their timeout
		shutCtx, cancel := context.WithTimeout(context.Background(), cfg.ShutdownTimeout)
		if err := srv.Shutdown(shutCtx); err != nil {
			errs = append(errs, fmt.Errorf("http shutdown: %w", err))
		}
		cancel()
		if err := <-serveErr; err != nil && !errors.Is(err, http.ErrServerClosed) {
			errs = append(errs, fmt.Errorf("serve: %w", err))
		}
	}
	stopServices()
	services.Wait()
	subs.Stop() // after the HTTP server (callbacks in flight finish), before the store
	stopCtx, cancelStop := context.WithTimeout(context.Background(), cfg.ShutdownTimeout)
	deliv.Stop(stopCtx) // in-flight deliveries finish and are recorded
	cancelStop()
	if err := st.Close(); err != nil {
		errs = append(errs, fmt.Errorf("close store: %w", err))
	}
	if len(errs) == 0 {
		log.Info("stopped")
	}
	return errors.Join(errs...)
}

func newLogger(cfg *serveConfig, out io.Writer) *slog.Logger {
	opts := &slog.HandlerOptions{Level: cfg.LogLevel}
	if cfg.LogFormat == "json" {
		return slog.New(slog.NewJSONHandler(out, opts))
	}
	return slog.New(slog.NewTextHandler(out, opts))
}
