package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/otel/trace"

	apidoc "github.com/heraldstreams/herald/api"
	"github.com/heraldstreams/herald/auth"
	"github.com/heraldstreams/herald/bus"
	"github.com/heraldstreams/herald/delivery/deliveryapi"
	"github.com/heraldstreams/herald/delivery/dispatch"
	"github.com/heraldstreams/herald/httpapi"
	"github.com/heraldstreams/herald/httpapi/apierr"
	"github.com/heraldstreams/herald/internal/idlemem"
	"github.com/heraldstreams/herald/internal/secretbox"
	"github.com/heraldstreams/herald/reaper"
	"github.com/heraldstreams/herald/replica"
	"github.com/heraldstreams/herald/stats"
	"github.com/heraldstreams/herald/store"
	"github.com/heraldstreams/herald/store/postgres"
	"github.com/heraldstreams/herald/store/sqlite"
	"github.com/heraldstreams/herald/subscription/wake"
	"github.com/heraldstreams/herald/ui"
)

// app is one Herald server's parts: its store, its listener, the HTTP API
// and the engines mounted on it. newApp builds it; serve runs it.
type app struct {
	log  *slog.Logger
	st   heraldStore
	ln   net.Listener
	api  *httpapi.Server
	jwtv *auth.JWTVerifier
	subs *wake.Engine
	// reserved is the reserved subscription API's front door.
	reserved *wake.Reserved
	deliv    *dispatch.Engine
	// pool holds the connections to brokers, closed after the engine.
	pool *bus.Pool
	// stopStats ends the stats sampler and waits for it.
	stopStats func()
	// stopAuth ends the access control's following of key changes and
	// waits for it.
	stopAuth func()
	// stopHeart ends the replica's heartbeat and waits for it.
	stopHeart func()
}

// newApp opens the store, listens on cfg.Addr and mounts every route;
// tp traces requests, wakes and deliveries (nil: tracing off). On error
// nothing is left open.
func newApp(ctx context.Context, cfg *serveConfig, log *slog.Logger, tp trace.TracerProvider) (*app, error) {
	st, err := openStore(ctx, kekSource{Keys: cfg.KEK, File: cfg.KEKFile, DataDir: cfg.DataDir}, func(box *secretbox.Box) (heraldStore, error) {
		storeLog := log.With("part", "store")
		if cfg.Store == "postgres" {
			st, err := postgres.Open(ctx, cfg.PostgresURL, postgres.Options{Logger: storeLog, Box: box})
			if err != nil {
				return nil, err
			}
			return st, nil
		}
		st, err := sqlite.Open(ctx, sqlite.Config{Dir: cfg.DataDir, Logger: storeLog, Box: box, StreamCache: cfg.StreamCache})
		if err != nil {
			return nil, err
		}
		return st, nil
	})
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return nil, errors.Join(fmt.Errorf("listen on %s: %w", cfg.Addr, err), st.Close())
	}
	if err := cfg.Access.checkListen(ln.Addr()); err != nil {
		return nil, errors.Join(err, ln.Close(), st.Close())
	}
	warnPublicURL(log, cfg.PublicURL, cfg.TLS.scheme(), ln.Addr())
	authn, jwtv, err := cfg.Access.newAuthenticator(ctx, st, ln.Addr(), log.With("part", "auth"))
	if err != nil {
		return nil, errors.Join(err, ln.Close(), st.Close())
	}
	fail := func(err error) (*app, error) {
		if jwtv != nil {
			jwtv.Close()
		}
		return nil, errors.Join(err, ln.Close(), st.Close())
	}
	var accessLog *slog.Logger
	if cfg.AccessLog {
		accessLog = log.With("part", "access")
	}
	api := httpapi.New(httpapi.Config{
		Store:                st,
		TenantStreamPrefix:   cfg.Access.TenantStreamPrefix,
		AccessLog:            accessLog,
		TracerProvider:       tp,
		Logger:               log.With("part", "http"),
		AuditLogger:          log.With("part", "audit"),
		LongPollTimeout:      cfg.LongPollTimeout,
		MaxBodyBytes:         cfg.MaxBodyBytes,
		MaxReadBytes:         cfg.MaxReadBytes,
		MaxCatchUpBytes:      cfg.MaxCatchUpBytes,
		SSEMaxDuration:       cfg.SSEMaxDuration,
		MaxBufferedBytes:     cfg.MaxBufferedBytes,
		BodyReadTimeout:      cfg.BodyReadTimeout,
		MinBodyRate:          cfg.MinBodyRate,
		MaxConnections:       cfg.MaxConnections,
		MaxClientConnections: cfg.MaxClientConnections,
		Auth:                 authn,
		CORSOrigins:          cfg.Access.corsOrigins(cfg.PublicURL),
		AllowedHosts:         cfg.Access.allowedHosts(ln.Addr(), cfg.PublicURL),
		StreamRoot:           cfg.streamRoot(),
	})
	am := newAppMetrics()
	metrics := am.reg
	if err := errors.Join(api.RegisterMetrics(metrics), st.RegisterMetrics(metrics)); err != nil {
		return fail(fmt.Errorf("metrics: %w", err))
	}
	brand, err := cfg.UIBrand.brand()
	if err != nil {
		return fail(err)
	}
	dashboard, err := ui.Handler(ui.Config{FrameAncestors: splitList(cfg.UIFrameAncestors), Brand: brand})
	if err != nil {
		return fail(err)
	}
	rec := newStatsRecorder(am.counters, st, log.With("part", "stats"))
	sender, err := newWebhookSender(cfg, tp)
	if err != nil {
		return fail(err)
	}
	// The engines run until app.stop stops them, not until ctx (a
	// signal's) ends: their work in flight finishes within the shutdown
	// deadline.
	engineCtx := context.WithoutCancel(ctx)
	// The replica beats once before its engines claim anything: a claim
	// whose holder has no heartbeat row is never found dead, and waits
	// out its lease if the replica dies before its heart's first beat.
	if err := st.ReplicaBeat(ctx, &store.ReplicaBeatParams{Now: time.Now()}); err != nil {
		log.Warn("replica heartbeat failed", "replica", st.ReplicaID(), "err", err)
	}
	subs, reserved, err := startSubscriptions(engineCtx, subscriptionsParams{
		Config: cfg, Store: st, Reserved: st, Sender: sender, TokenKeys: st, Metrics: metrics, Tracing: tp,
		Logger: log.With("part", "subscriptions"), Listener: ln.Addr(),
	})
	if err != nil {
		return fail(fmt.Errorf("webhook subscriptions: %w", err))
	}
	pool, err := newBusPool(sender)
	if err != nil {
		return fail(errors.Join(err, subs.Stop(context.Background())))
	}
	deliv, err := startDelivery(engineCtx, deliveryParams{Config: cfg, Store: st, Sender: sender, Destinations: pool, Metrics: metrics, Tracing: tp,
		Logger: log.With("part", "delivery")})
	if err != nil {
		pool.Close()
		return fail(errors.Join(err, subs.Stop(context.Background())))
	}
	api.Mount(httpapi.APIs{
		Subscriptions: subs,
		Reserved:      reserved,
		Keys: auth.NewKeysAPI(auth.KeysAPIConfig{Auth: authn, Store: st, Logger: log.With("part", "keys"), Fail: apierr.Failer(log.With("part", "keys")),
			PortalURL: publicURL(cfg.PublicURL, cfg.TLS.scheme(), ln.Addr()) + ui.Prefix}).Routes(),
		Delivery:      deliveryapi.NewAPI(deliv).Routes(),
		Metrics:       promhttp.HandlerFor(am.all, promhttp.HandlerOpts{}),
		PublicMetrics: cfg.Access.PublicMetrics,
		Stats:         rec,
		Dashboard:     dashboard,
		OpenAPI:       apidoc.Handler(),
	})
	stopStats := goUntilStopped(ctx, func(ctx context.Context) { rec.Run(ctx, stats.DefaultInterval) })
	stopAuth := func() {}
	if authn.Enabled() {
		// Keys created and revoked on any replica reach the cache of
		// verified keys and end the live reads of a revoked key.
		feed, stopFeed := st.Notifier().Invalidations()
		stopFollow := goUntilStopped(ctx, func(ctx context.Context) { authn.Follow(ctx, feed) })
		stopAuth = func() {
			stopFollow()
			stopFeed()
		}
	}
	// The heartbeat runs until the engines have stopped: a replica that
	// finishes its work in flight during a shutdown is alive, and its
	// claims are its own until it is gone.
	heart := replica.New(replica.Config{Store: st, Interval: cfg.ReplicaHeartbeat, DeadAfter: cfg.ReplicaDeadAfter,
		Logger: log.With("part", "replica"), Health: api.SetStoreHealth, Released: func() {
			deliv.ClaimNow()
			subs.SweepNow()
		}})
	stopHeart := goUntilStopped(ctx, heart.Run)
	log.Info("replica heartbeat", "replica", st.ReplicaID(), "every", cfg.ReplicaHeartbeat, "dead_after", cfg.ReplicaDeadAfter)
	return &app{log: log, st: st, ln: ln, api: api, jwtv: jwtv, subs: subs, reserved: reserved, deliv: deliv, pool: pool, stopStats: stopStats, stopAuth: stopAuth,
		stopHeart: stopHeart}, nil
}

// goUntilStopped runs run in a goroutine until the returned stop is
// called (not when ctx ends: the caller decides when a service stops),
// and stop waits for it to return.
func goUntilStopped(ctx context.Context, run func(context.Context)) (stop func()) {
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan struct{})
	go func() {
		defer close(done)
		run(runCtx)
	}()
	return func() {
		cancel()
		<-done
	}
}

// newStatsRecorder keeps the last hour's per-minute counts of appends,
// wakes, deliveries and failed delivery attempts for the dashboard
// (GET /_herald/v1/stats), read from the counters in metrics, and
// answers with the deliveries waiting across every endpoint, counted in
// st.
func newStatsRecorder(metrics prometheus.Gatherer, st store.DeliveryStore, log *slog.Logger) *stats.Recorder {
	backlog := func(ctx context.Context) (int, error) {
		by, err := st.DeliveryBacklog(ctx)
		total := 0
		for _, n := range by {
			total += n
		}
		return total, err
	}
	return stats.New(stats.Config{Gatherer: metrics, Logger: log, Backlog: backlog, Series: []stats.Series{
		// Published events are appends too, made through the delivery API.
		{Name: "appends", Metric: "herald_stream_appends_total", Also: []string{"herald_delivery_events_published_total"}},
		{Name: "wakes", Metric: "herald_subscription_wakes_total"},
		{Name: "deliveries", Metric: "herald_delivery_attempts_total", Label: "outcome", Values: []string{"delivered"}},
		{Name: "failures", Metric: "herald_delivery_attempts_total", Label: "outcome", Values: []string{"retrying", "exhausted"}},
	}})
}

// stop stops the engines and closes the store, once the HTTP server has
// stopped serving: callbacks in flight have finished, and the wakes and
// deliveries in flight finish and are recorded until ctx ends (the
// shutdown deadline), when they are cancelled (sent again after a
// restart). The engines stop together, so they share the deadline.
func (a *app) stop(ctx context.Context) error {
	a.stopStats()
	a.stopAuth()
	var wg sync.WaitGroup
	var subsErr, delivErr error
	wg.Go(func() { subsErr = a.subs.Stop(ctx) })
	wg.Go(func() { delivErr = a.deliv.Stop(ctx) })
	wg.Wait()
	a.pool.Close() // after the deliveries it publishes
	if subsErr != nil || delivErr != nil {
		a.log.Warn("the shutdown deadline cancelled wakes or deliveries in flight; they are sent again after a restart")
	}
	a.stopHeart()
	if a.jwtv != nil {
		a.jwtv.Close()
	}
	if err := a.st.Close(); err != nil {
		return fmt.Errorf("close store: %w", err)
	}
	return nil
}

// serve runs Herald until ctx ends (SIGINT or SIGTERM), then shuts down
// gracefully: it stops taking requests, ends live reads cleanly, lets
// in-flight appends finish, and flushes and closes the store.
func serve(ctx context.Context, cfg *serveConfig, log *slog.Logger, env func(string) (string, bool)) (err error) {
	tr, err := startTracing(ctx, env, log)
	if err != nil {
		return err
	}
	// One deadline bounds the whole shutdown: the HTTP drain, the
	// engines' work in flight, the store's close and the export of the
	// last spans. It is set when the shutdown begins.
	shutdown := &shutdownDeadline{timeout: cfg.ShutdownTimeout}
	defer shutdown.cancel()
	// Stopped last, so the spans of the shutdown are exported too.
	defer func() {
		err = errors.Join(err, tr.stop(shutdown.begin()))
	}()
	if tr.provider != nil {
		log.Info("tracing on: exporting spans with OTLP over HTTP")
	}
	var certs *certReloader
	if cfg.TLS.on() {
		if certs, err = newCertReloader(cfg.TLS.CertFile, cfg.TLS.KeyFile, log.With("part", "tls")); err != nil {
			return err
		}
	}
	a, err := newApp(ctx, cfg, log, tr.provider)
	if err != nil {
		return err
	}
	api, st, ln := a.api, a.st, a.ln
	// No ReadTimeout: it would cut long-polls and SSE responses. Bodies
	// get their own deadline from the handler (httpapi's body rules). A
	// connection that sends no complete request within the header timeout,
	// new or idle between requests, is closed: an idle connection holds a
	// slot of --max-connections.
	srv := &http.Server{
		Handler:           api,
		ReadHeaderTimeout: cfg.HeaderTimeout,
		IdleTimeout:       cfg.HeaderTimeout,
		MaxHeaderBytes:    cfg.MaxHeaderBytes,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	if certs != nil {
		srv.TLSConfig = certs.tlsConfig()
	}

	// Background services live until the server has stopped serving.
	svcCtx, stopServices := context.WithCancel(context.WithoutCancel(ctx))
	var services sync.WaitGroup
	services.Add(1)
	go func() {
		defer services.Done()
		reaper.New(reaper.Config{Store: st, Interval: cfg.reaperInterval(), Logger: log.With("part", "reaper")}).Run(svcCtx)
	}()
	if certs != nil {
		// SIGHUP reloads the certificate (as nginx and others do);
		// without TLS it keeps its default meaning.
		hup := make(chan os.Signal, 1)
		signal.Notify(hup, syscall.SIGHUP)
		defer signal.Stop(hup)
		poll := time.NewTicker(tlsPollInterval)
		defer poll.Stop()
		services.Add(1)
		go func() {
			defer services.Done()
			certs.run(svcCtx, poll.C, hup)
		}()
	}

	serveErr := make(chan error, 1)
	go func() {
		if certs != nil {
			serveErr <- srv.ServeTLS(api.LimitListener(ln), "", "")
			return
		}
		serveErr <- srv.Serve(api.LimitListener(ln))
	}()
	api.SetReady(true)
	releaseStartPages(log)
	services.Add(1)
	go func() {
		defer services.Done()
		idlemem.Run(svcCtx, idleMemInterval, func(err error) {
			log.Warn("could not release the executable's pages", "err", err)
		})
	}()
	log.Info("herald listening", "addr", ln.Addr().String(), "tls", certs != nil, "data_dir", cfg.DataDir, "version", buildVersion())

	var errs []error
	select {
	case err := <-serveErr:
		shutdown.begin()
		errs = append(errs, fmt.Errorf("serve: %w", err))
	case <-ctx.Done():
		log.Info("shutting down", "deadline", cfg.ShutdownTimeout)
		shutCtx := shutdown.begin()
		api.SetReady(false)
		api.Shutdown() // live readers answer now instead of at their timeout
		if err := srv.Shutdown(shutCtx); err != nil {
			errs = append(errs, fmt.Errorf("http shutdown: %w", err))
		}
		if err := <-serveErr; err != nil && !errors.Is(err, http.ErrServerClosed) {
			errs = append(errs, fmt.Errorf("serve: %w", err))
		}
	}
	stopServices()
	services.Wait()
	if err := a.stop(shutdown.begin()); err != nil {
		errs = append(errs, err)
	}
	if len(errs) == 0 {
		log.Info("stopped")
	}
	return errors.Join(errs...)
}

// idleMemInterval is how often the server checks whether it is idle with
// memory to give back (idlemem.Run): a quarter of a second, so that what
// a burst brought in leaves the RSS soon after it. A check costs about
// 15 µs of CPU.
const idleMemInterval = 250 * time.Millisecond

// releaseStartPages gives back the memory the start used and no longer
// needs (idlemem.GiveBack): the free heap, and the executable's pages
// that the start touched (every package's initialiser, the store's
// opening): 20 MB of an idle server's 35 MB were Herald's own code and
// read-only data, mapped from the page cache. What the server goes on
// using faults back.
func releaseStartPages(log *slog.Logger) {
	if err := idlemem.GiveBack(); err != nil {
		log.Warn("could not give back the start's memory", "err", err)
	}
}

// shutdownDeadline is the one deadline of a shutdown (--shutdown-timeout),
// set when the shutdown begins and shared by every step of it.
type shutdownDeadline struct {
	timeout time.Duration
	ctx     context.Context
	stop    context.CancelFunc
}

// begin starts the deadline (at the first call) and returns its context.
func (d *shutdownDeadline) begin() context.Context {
	if d.ctx == nil {
		d.ctx, d.stop = context.WithTimeout(context.Background(), d.timeout)
	}
	return d.ctx
}

func (d *shutdownDeadline) cancel() {
	if d.stop != nil {
		d.stop()
	}
}

func newLogger(cfg *serveConfig, out io.Writer) *slog.Logger {
	opts := &slog.HandlerOptions{Level: cfg.LogLevel}
	if cfg.LogFormat == "json" {
		return slog.New(slog.NewJSONHandler(out, opts))
	}
	return slog.New(slog.NewTextHandler(out, opts))
}
