package dispatch

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace"

	"github.com/heraldstreams/herald/auth"
	"github.com/heraldstreams/herald/delivery"
	"github.com/heraldstreams/herald/glob"
	"github.com/heraldstreams/herald/internal/service"
	"github.com/heraldstreams/herald/internal/telemetry"
	"github.com/heraldstreams/herald/store"
	"github.com/heraldstreams/herald/webhook"
)

// EngineStore is the part of the storage contract the engine uses.
type EngineStore interface {
	store.DeliveryStore
	store.EventTypeStore
	StreamGet(ctx context.Context, params *store.StreamGetParams) (*store.Stream, error)
	StreamRead(ctx context.Context, params *store.StreamReadParams) (*store.StreamReadResult, error)
	StreamList(ctx context.Context, params *store.StreamListParams) ([]store.Stream, error)
	store.StreamChangeStore
	Notifier() store.Notifier
}

// Sender sends webhook POSTs. *webhook.Sender implements it; tests pass
// one that serves requests in process.
type Sender interface {
	Send(ctx context.Context, req *webhook.Request) (*webhook.Response, error)
	ValidateURL(ctx context.Context, raw string) error
}

// Defaults of EngineConfig.
const (
	DefaultLease               = 2 * time.Minute
	DefaultGlobalMaxInFlight   = 512
	DefaultEndpointMaxInFlight = 32
	DefaultSweepInterval       = 5 * time.Second
	DefaultRetention           = 30 * 24 * time.Hour
	DefaultPruneInterval       = time.Minute
	DefaultMatchWorkers        = 4
	// EndpointShareDivisor sets an endpoint's share of the global pool:
	// whatever its max_in_flight, one endpoint holds at most
	// GlobalMaxInFlight / EndpointShareDivisor slots (at least one), so an
	// endpoint that never answers leaves the rest of the pool to the
	// others.
	EndpointShareDivisor = 4
	// DefaultStream is where POST /v1/events appends when no stream is
	// given.
	DefaultStream = "/events"
	// matchPage bounds the bytes read per enqueue transaction.
	matchPage = 64 << 10
	// listenBuffer is the tail-change feed's buffer (a lossy hint: when
	// it may have dropped changes, the streams are reconciled).
	listenBuffer = 1 << 14
	// casAttempts bounds the compare-and-set retries of one stream.
	casAttempts = 16
	// pruneBatch is how many deliveries one prune transaction removes.
	pruneBatch = 1000
)

// EngineConfig configures an Engine. Zero values take the defaults.
type EngineConfig struct {
	// Store keeps endpoints and deliveries and holds the streams. Required.
	Store EngineStore
	// Sender posts deliveries. Required.
	Sender Sender
	// Destinations publishes the deliveries of broker endpoints ("nats",
	// "kafka"); nil: such endpoints cannot be made, and their stored
	// deliveries fail.
	Destinations Destinations
	// TenantBrokers lets a credential of a tenant make and change broker
	// endpoints (the API's rule): off, a broker's addresses and
	// credentials are the installation's business only.
	TenantBrokers bool
	// Now is the clock; time.Now when nil.
	Now func() time.Time
	// Rand is the source of ids and secrets; crypto/rand.Reader when nil.
	Rand io.Reader
	// Logger; slog.Default() when nil.
	Logger *slog.Logger
	// Registerer, when set, receives the engine's metrics.
	Registerer prometheus.Registerer
	// TracerProvider traces matching and attempts: the match of a traced
	// append or publish is its child, each attempt sent from that match a
	// child of the match, and each POST carries traceparent. Nil: tracing
	// off.
	TracerProvider trace.TracerProvider
	// RetrySchedule is the schedule of endpoints that set none;
	// DefaultSchedule when nil.
	RetrySchedule delivery.Schedule
	// BreakerThreshold is the consecutive failures that disable an
	// endpoint; DefaultBreakerThreshold when 0.
	BreakerThreshold int
	// RotationOverlap is how long a rotated secret keeps signing;
	// DefaultRotationOverlap when 0.
	RotationOverlap time.Duration
	// Lease is how long a claimed delivery belongs to its sender: if the
	// sender dies, another claims it after the lease. It must exceed the
	// send timeout.
	Lease time.Duration
	// GlobalMaxInFlight bounds the deliveries in flight across endpoints.
	// One endpoint holds at most its share of it (see
	// EndpointShareDivisor).
	GlobalMaxInFlight int
	// EndpointMaxInFlight is the max_in_flight of endpoints that set none
	// (capped by the share as any other).
	EndpointMaxInFlight int
	// SweepInterval is how often every runner claims even without a
	// wake (deliveries that another replica queued, or whose lease ended
	// with its sender), and replay jobs whose engine is gone are resumed.
	// No stream is listed then: streams are matched when they change, and
	// reconciled at start and when changes may have been missed.
	SweepInterval time.Duration
	// Retention is how long finished deliveries and their attempts are
	// kept; PruneInterval how often they are pruned while there are some
	// to prune (after a prune that found none the wait doubles, up to an
	// hour).
	Retention     time.Duration
	PruneInterval time.Duration
	// MatchWorkers is how many streams are matched at once.
	MatchWorkers int
	// MaxEventBytes caps events published through the API;
	// DefaultMaxEventBytes when 0.
	MaxEventBytes int
	// DefaultStream is where events published without a stream go;
	// DefaultStream when "".
	DefaultStream string
	// TenantStreamPrefix is the template of tenants' stream namespaces
	// (auth.TenantNamespace); auth.DefaultTenantStreamPrefix when "". An
	// event on a stream in a tenant's namespace is that tenant's,
	// whatever its message says.
	TenantStreamPrefix string
	// Profiles are the wire profiles endpoints may choose, with the
	// default; the shipped ones, standard-webhooks by default, when nil.
	Profiles *delivery.ProfileSet
	// FailurePolicy is the failure policy of endpoints that set none;
	// FailurePolicyStandard when "".
	FailurePolicy string
	// Timeout is the attempt timeout (the sender's), which an endpoint's
	// timeout_ms may shorten; webhook.DefaultTimeout when 0.
	Timeout time.Duration
	// RequireVerification puts every new endpoint under ownership
	// verification, whatever its "verify" says.
	RequireVerification bool
	// EnforceEventTypes enforces the event type catalogue on published
	// events and endpoints' event_types (see CreateEventType).
	EnforceEventTypes bool
	// LogLevel is the level of the line logged for each attempt's
	// outcome (slog.LevelInfo, the zero value, by default); a dead letter
	// is logged at warn, or at LogLevel when that is higher.
	LogLevel slog.Level
	// MetricsTenantLabel adds the endpoint's tenant as a label to the
	// metrics of attempts and outcomes: one series per tenant, so it is
	// off by default (an installation of many tenants makes many series).
	MetricsTenantLabel bool
	// ReplayBatch is how many deliveries one step of a replay job queues
	// at most (each step stores the job's progress); DefaultReplayBatch
	// when 0.
	ReplayBatch int
}

// Engine delivers events: it matches stream messages to endpoints and
// stores deliveries (matcher), sends them signed with retries and a
// breaker (one runner per endpoint), and prunes old ones. Appends never
// wait for it: it learns of them from the store's tail-change feed, and
// reconciles the streams from the store at start and whenever that feed
// may have dropped changes.
type Engine struct {
	cfg     EngineConfig
	st      EngineStore
	sender  Sender
	now     func() time.Time
	log     *slog.Logger
	tracer  trace.Tracer
	metrics *engineMetrics
	breaker delivery.Breaker
	types   typeCache

	mu        sync.RWMutex
	endpoints map[string]*liveEndpoint // guarded by mu
	runners   map[string]*runner       // guarded by mu
	// loadMu makes the loads of endpoints from the store (one, or all)
	// run one at a time, so a full load that read the store before an
	// endpoint was made cannot drop it after a load of that endpoint
	// installed it.
	loadMu sync.Mutex

	replayMu sync.Mutex
	replays  map[string]chan struct{} // replay jobs running here, closed when their run ends; guarded by replayMu

	queue  *service.Queue[trace.SpanContext]
	global chan struct{} // global in-flight slots
	freeMu sync.Mutex
	freed  chan struct{} // closed and replaced when a slot frees; guarded by freeMu

	randMu sync.Mutex
	rand   io.Reader // guarded by randMu
	// run names this engine's run in the id spans it creates: only the
	// run that created a span extends it. runKey makes their nonces.
	run    string
	runKey [32]byte

	// life owns the engine's goroutines: its context ends at Stop (no
	// new claim or match), its work context when Stop's context ends
	// (in-flight sends are cancelled).
	life *service.Lifecycle
	// reconcileKick asks for a reconciliation of the streams.
	reconcileKick service.Kick
	failedMu      sync.Mutex
	failed        map[string]struct{} // streams whose match failed, matched again at the next sweep; guarded by failedMu
	// checking is what a reconciliation waits to see matched.
	checking checkSet
	// leases is what the engine knows of the delivery leases it holds.
	leases *leaseBook
	// replaySearch paces the sweep's search for replay jobs.
	replaySearch replayClaims
	// prunePace spaces the prunes of finished deliveries.
	prunePace *service.Backoff
}

// liveEndpoint is an endpoint as the engine runs it.
type liveEndpoint struct {
	ep       store.Endpoint
	filters  *delivery.Filters
	streams  []delivery.StreamMatcher // nil: every stream
	schedule delivery.Schedule
	profile  *delivery.Profile
	policy   string        // failure policy
	timeout  time.Duration // of one attempt
	// dest is a broker endpoint's destination; nil for a webhook.
	dest *delivery.Destination
}

// NewEngine returns an Engine; Start runs it.
func NewEngine(cfg EngineConfig) (*Engine, error) {
	if cfg.Store == nil || cfg.Sender == nil {
		return nil, errors.New("delivery: an engine needs a store and a sender")
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Rand == nil {
		cfg.Rand = rand.Reader
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.RetrySchedule == nil {
		cfg.RetrySchedule = delivery.DefaultSchedule()
	}
	if err := cfg.RetrySchedule.Validate(); err != nil {
		return nil, err
	}
	if cfg.RotationOverlap <= 0 {
		cfg.RotationOverlap = delivery.DefaultRotationOverlap
	}
	if cfg.Lease <= 0 {
		cfg.Lease = DefaultLease
	}
	if cfg.GlobalMaxInFlight <= 0 {
		cfg.GlobalMaxInFlight = DefaultGlobalMaxInFlight
	}
	if cfg.EndpointMaxInFlight <= 0 {
		cfg.EndpointMaxInFlight = DefaultEndpointMaxInFlight
	}
	if cfg.SweepInterval <= 0 {
		cfg.SweepInterval = DefaultSweepInterval
	}
	if cfg.Retention <= 0 {
		cfg.Retention = DefaultRetention
	}
	if cfg.PruneInterval <= 0 {
		cfg.PruneInterval = DefaultPruneInterval
	}
	if cfg.MatchWorkers <= 0 {
		cfg.MatchWorkers = DefaultMatchWorkers
	}
	if cfg.MaxEventBytes <= 0 {
		cfg.MaxEventBytes = delivery.DefaultMaxEventBytes
	}
	if cfg.DefaultStream == "" {
		cfg.DefaultStream = DefaultStream
	}
	if cfg.TenantStreamPrefix == "" {
		cfg.TenantStreamPrefix = auth.DefaultTenantStreamPrefix
	}
	if cfg.Profiles == nil {
		ps, err := delivery.NewProfileSet(nil, "")
		if err != nil {
			return nil, err
		}
		cfg.Profiles = ps
	}
	if cfg.FailurePolicy == "" {
		cfg.FailurePolicy = delivery.FailurePolicyStandard
	}
	if !delivery.ValidFailurePolicy(cfg.FailurePolicy) {
		return nil, fmt.Errorf("delivery: failure policy %q: use %q or %q", cfg.FailurePolicy, delivery.FailurePolicyStandard, delivery.FailurePolicyRetryAll)
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = webhook.DefaultTimeout
	}
	if cfg.ReplayBatch <= 0 {
		cfg.ReplayBatch = DefaultReplayBatch
	}
	e := &Engine{
		prunePace: &service.Backoff{Base: cfg.PruneInterval, Max: maxPruneWait},
		cfg:       cfg,
		st:        cfg.Store,
		sender:    cfg.Sender,
		now:       cfg.Now,
		log:       cfg.Logger,
		tracer:    telemetry.Tracer(cfg.TracerProvider),
		breaker:   delivery.Breaker{Threshold: cfg.BreakerThreshold},
		endpoints: make(map[string]*liveEndpoint),
		runners:   make(map[string]*runner),
		replays:   make(map[string]chan struct{}),
		queue:     service.NewQueue(firstTrace),
		life:      service.NewLifecycle(),

		reconcileKick: service.NewKick(),
		failed:        make(map[string]struct{}),
		checking:      newCheckSet(),
		leases:        newLeaseBook(),
		global:        make(chan struct{}, cfg.GlobalMaxInFlight),
		freed:         make(chan struct{}),
		rand:          cfg.Rand,
	}
	run, err := e.newID("")
	if err != nil {
		return nil, err
	}
	e.run = run
	if _, err := io.ReadFull(cfg.Rand, e.runKey[:]); err != nil {
		return nil, fmt.Errorf("delivery: random key: %w", err)
	}
	m, err := newEngineMetrics(cfg.Registerer, cfg.Store, cfg.MetricsTenantLabel)
	if err != nil {
		return nil, fmt.Errorf("delivery: metrics: %w", err)
	}
	e.metrics = m
	return e, nil
}

// newID returns prefix + 24 random hex digits.
func (e *Engine) newID(prefix string) (string, error) {
	var b [12]byte
	e.randMu.Lock()
	_, err := io.ReadFull(e.rand, b[:])
	e.randMu.Unlock()
	if err != nil {
		return "", fmt.Errorf("delivery: random id: %w", err)
	}
	return prefix + hex.EncodeToString(b[:]), nil
}

func (e *Engine) newSecret() (string, error) {
	e.randMu.Lock()
	defer e.randMu.Unlock()
	return delivery.GenerateSecret(e.rand)
}

// compileStream compiles a stream glob pattern.
func compileStream(pattern string) (delivery.StreamMatcher, error) {
	return glob.Compile(pattern)
}

func (e *Engine) compile(ep *store.Endpoint) (*liveEndpoint, error) {
	f, err := delivery.CompileFilters(&delivery.FiltersParams{EventTypes: ep.EventTypes, Streams: ep.Streams, Filter: ep.Filter, CompileStream: compileStream})
	if err != nil {
		return nil, err
	}
	profile, err := e.profileOf(ep)
	if err != nil {
		return nil, err
	}
	dest, err := destinationOf(ep)
	if err != nil {
		return nil, err
	}
	le := &liveEndpoint{ep: *ep, filters: f, schedule: ep.RetrySchedule, profile: profile, policy: ep.FailurePolicy, timeout: e.cfg.Timeout, dest: dest}
	if le.schedule == nil {
		le.schedule = e.cfg.RetrySchedule
	}
	if le.policy == "" {
		le.policy = e.cfg.FailurePolicy
	}
	if ep.Timeout > 0 {
		le.timeout = min(ep.Timeout, e.cfg.Timeout)
	}
	for _, p := range ep.Streams {
		if p == delivery.DefaultStreamPattern {
			le.streams = nil
			break
		}
		m, err := compileStream(p)
		if err != nil {
			return nil, err
		}
		le.streams = append(le.streams, m)
	}
	return le, nil
}

// profileOf returns the wire profile of an endpoint.
func (e *Engine) profileOf(ep *store.Endpoint) (*delivery.Profile, error) {
	p, ok := e.cfg.Profiles.Lookup(ep.Profile)
	if !ok {
		return nil, fmt.Errorf("delivery: endpoint %s: no profile %q is configured", ep.ID, ep.Profile)
	}
	return p, nil
}

// matchesStream reports whether the endpoint sources from path.
func (le *liveEndpoint) matchesStream(path string) bool {
	if le.streams == nil {
		return true
	}
	for _, m := range le.streams {
		if m.Match(path) {
			return true
		}
	}
	return false
}

// sending reports whether the endpoint is active, verified when it must
// be, and its breaker closed.
func (le *liveEndpoint) sending() bool {
	return le.ep.Active && le.ep.Health.DisabledAt.IsZero() && !le.ep.Verification.Pending()
}

// maxInFlight is how many deliveries of the endpoint may be in flight:
// its max_in_flight (def when it sets none), capped by its share of the
// global pool.
func (e *Engine) maxInFlight(le *liveEndpoint) int {
	n := e.cfg.EndpointMaxInFlight
	if le.ep.MaxInFlight > 0 {
		n = le.ep.MaxInFlight
	}
	return min(n, EndpointShare(e.cfg.GlobalMaxInFlight))
}

// EndpointShare is the most slots of a global pool of size global that
// one endpoint may hold: a quarter of it, at least one.
func EndpointShare(global int) int {
	return max(1, global/EndpointShareDivisor)
}

// acquireGlobal takes up to n global in-flight slots without waiting.
func (e *Engine) acquireGlobal(n int) int {
	got := 0
	for got < n {
		select {
		case e.global <- struct{}{}:
			got++
		default:
			return got
		}
	}
	return got
}

// releaseGlobal frees n slots and wakes runners starved of them.
func (e *Engine) releaseGlobal(n int) {
	if n <= 0 {
		return
	}
	for range n {
		<-e.global
	}
	e.freeMu.Lock()
	close(e.freed)
	e.freed = make(chan struct{})
	e.freeMu.Unlock()
}

// slotFreed returns a channel closed at the next release.
func (e *Engine) slotFreed() <-chan struct{} {
	e.freeMu.Lock()
	defer e.freeMu.Unlock()
	return e.freed
}
