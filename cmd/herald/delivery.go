package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace"

	"github.com/heraldstreams/herald/delivery"
	"github.com/heraldstreams/herald/delivery/dispatch"
	"github.com/heraldstreams/herald/httpapi"
	"github.com/heraldstreams/herald/subscription"
	"github.com/heraldstreams/herald/webhook"
)

// deliveryConfig is the configuration of event delivery (docs/delivery.md).
type deliveryConfig struct {
	RetrySchedule       string
	BreakerThreshold    int
	RotationOverlap     time.Duration
	Lease               time.Duration
	Timeout             time.Duration
	MaxInFlight         int
	EndpointMaxInFlight int
	Retention           time.Duration
	DefaultStream       string
	MaxEventBytes       int
	ReplayBatch         int
	Profile             string
	ProfilesFile        string
	FailurePolicy       string
	VerifyEndpoints     bool
	EnforceEventTypes   bool
	LogLevel            slog.Level
	MetricsTenantLabel  bool
}

func (c *deliveryConfig) addFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.RetrySchedule, "delivery-retry-schedule", strings.Join(delivery.DefaultSchedule().Strings(), ","),
		"event delivery: default retry schedule, comma-separated delays before each attempt (its length is the number of attempts)")
	fs.IntVar(&c.BreakerThreshold, "delivery-breaker-threshold", delivery.DefaultBreakerThreshold, "event delivery: consecutive failed attempts that disable an endpoint")
	fs.DurationVar(&c.RotationOverlap, "delivery-rotation-overlap", delivery.DefaultRotationOverlap, "event delivery: how long a rotated secret keeps signing")
	fs.DurationVar(&c.Lease, "delivery-lease", dispatch.DefaultLease, "event delivery: how long a claimed delivery belongs to its sender before another may claim it (longer than --delivery-timeout)")
	fs.DurationVar(&c.Timeout, "delivery-timeout", webhook.DefaultTimeout, "event delivery: timeout of one attempt")
	fs.IntVar(&c.MaxInFlight, "delivery-max-in-flight", dispatch.DefaultGlobalMaxInFlight, "event delivery: deliveries in flight across all endpoints; one endpoint holds at most a quarter of them")
	fs.IntVar(&c.EndpointMaxInFlight, "delivery-endpoint-max-in-flight", dispatch.DefaultEndpointMaxInFlight, "event delivery: deliveries in flight per endpoint that sets no max_in_flight (at most a quarter of --delivery-max-in-flight)")
	fs.DurationVar(&c.Retention, "delivery-retention", dispatch.DefaultRetention, "event delivery: how long finished deliveries, their attempts, finished replay jobs and seen event ids are kept")
	fs.StringVar(&c.DefaultStream, "delivery-default-stream", dispatch.DefaultStream, "event delivery: stream of events published without one")
	fs.IntVar(&c.MaxEventBytes, "delivery-max-event-bytes", delivery.DefaultMaxEventBytes, "event delivery: largest event accepted by POST /_herald/v1/events")
	fs.IntVar(&c.ReplayBatch, "delivery-replay-batch", dispatch.DefaultReplayBatch,
		"event delivery: deliveries one step of a replay job queues at most (each step stores the job's progress)")
	fs.StringVar(&c.Profile, "delivery-profile", delivery.ProfileStandardWebhooks,
		"event delivery: wire profile of endpoints that choose none ("+strings.Join(delivery.ShippedProfiles(), ", ")+", or one of --delivery-profiles-file)")
	fs.StringVar(&c.ProfilesFile, "delivery-profiles-file", "", "event delivery: JSON file of further wire profiles, {\"profiles\": [...]}")
	fs.StringVar(&c.FailurePolicy, "delivery-failure-policy", delivery.FailurePolicyStandard,
		"event delivery: failure policy of endpoints that set none: standard (a 4xx other than 408, 409, 425 and 429 is final) or retry_all")
	fs.BoolVar(&c.VerifyEndpoints, "delivery-verify-endpoints", false, "event delivery: every new endpoint must prove it owns its URL (a challenge) before it receives events")
	fs.BoolVar(&c.EnforceEventTypes, "delivery-enforce-event-types", false,
		"event delivery: enforce the event type catalogue: POST /_herald/v1/events takes only catalogued types whose data passes the type's schema, and endpoints' event_types must name catalogued types")
	c.LogLevel = slog.LevelInfo
	fs.Var(logLevelFlag{&c.LogLevel}, "delivery-log-level",
		"event delivery: level of the line logged for every attempt's outcome (endpoint, tenant, event, delivery, attempt, outcome, status, latency): debug, info (the default), warn or error; a dead letter is logged at warn at least. Lines under --log-level are not written")
	fs.BoolVar(&c.MetricsTenantLabel, "delivery-metrics-tenant-label", false,
		"event delivery: add the endpoint's tenant as a label to the attempt and outcome metrics (one series per tenant: off by default, as many tenants make many series)")
}

func (c *deliveryConfig) problems() []string {
	var out []string
	if _, err := c.schedule(); err != nil {
		out = append(out, "--delivery-retry-schedule: "+err.Error())
	}
	if c.BreakerThreshold < 1 {
		out = append(out, "--delivery-breaker-threshold must be at least 1")
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"rotation-overlap", c.RotationOverlap}, {"lease", c.Lease}, {"timeout", c.Timeout}, {"retention", c.Retention}} {
		if d.v <= 0 {
			out = append(out, "--delivery-"+d.name+" must be positive")
		}
	}
	if c.Lease <= c.Timeout {
		out = append(out, "--delivery-lease must be longer than --delivery-timeout")
	}
	if c.MaxInFlight < 1 || c.EndpointMaxInFlight < 1 || c.MaxEventBytes < 1 || c.ReplayBatch < 1 {
		out = append(out, "--delivery-max-in-flight, --delivery-endpoint-max-in-flight, --delivery-max-event-bytes and --delivery-replay-batch must be positive")
	}
	if !strings.HasPrefix(c.DefaultStream, "/") || strings.HasPrefix(c.DefaultStream, httpapi.HeraldPrefix) {
		out = append(out, "--delivery-default-stream must be a stream path")
	}
	if !delivery.ValidFailurePolicy(c.FailurePolicy) {
		out = append(out, fmt.Sprintf("--delivery-failure-policy %q: use %s or %s", c.FailurePolicy, delivery.FailurePolicyStandard, delivery.FailurePolicyRetryAll))
	}
	if _, err := c.profiles(); err != nil {
		out = append(out, err.Error())
	}
	return out
}

// profiles returns the shipped profiles and those of --delivery-profiles-file,
// with --delivery-profile as the default.
func (c *deliveryConfig) profiles() (*delivery.ProfileSet, error) {
	var extra []delivery.Profile
	if c.ProfilesFile != "" {
		data, err := os.ReadFile(c.ProfilesFile)
		if err != nil {
			return nil, fmt.Errorf("--delivery-profiles-file: %w", err)
		}
		if extra, err = delivery.ParseProfiles(data); err != nil {
			return nil, fmt.Errorf("--delivery-profiles-file %s: %w", c.ProfilesFile, err)
		}
	}
	ps, err := delivery.NewProfileSet(extra, c.Profile)
	if err != nil {
		return nil, fmt.Errorf("--delivery-profile: %w", err)
	}
	return ps, nil
}

func (c *deliveryConfig) schedule() (delivery.Schedule, error) {
	return delivery.ParseSchedule(strings.Split(c.RetrySchedule, ","))
}

// deliveryParams are the inputs of startDelivery.
type deliveryParams struct {
	Config *serveConfig
	Store  dispatch.EngineStore
	// Sender is the process's one webhook sender (newWebhookSender).
	Sender *webhook.Sender
	// Destinations publishes to brokers (newBusPool).
	Destinations dispatch.Destinations
	Metrics      prometheus.Registerer
	// Tracing traces matches, attempts and their POSTs; nil: off.
	Tracing trace.TracerProvider
	Logger  *slog.Logger
}

// startDelivery builds the event delivery engine and starts it; the route
// table serves its API under /_herald/v1/. The caller stops it after the HTTP server
// and before the store.
func startDelivery(ctx context.Context, p deliveryParams) (*dispatch.Engine, error) {
	c := &p.Config.Delivery
	schedule, err := c.schedule()
	if err != nil {
		return nil, err
	}
	profiles, err := c.profiles()
	if err != nil {
		return nil, err
	}
	eng, err := dispatch.NewEngine(dispatch.EngineConfig{
		Store:               p.Store,
		Sender:              p.Sender,
		Destinations:        p.Destinations,
		TenantBrokers:       p.Config.Brokers.TenantBrokers,
		Logger:              p.Logger,
		Registerer:          p.Metrics,
		TracerProvider:      p.Tracing,
		RetrySchedule:       schedule,
		BreakerThreshold:    c.BreakerThreshold,
		RotationOverlap:     c.RotationOverlap,
		Lease:               c.Lease,
		GlobalMaxInFlight:   c.MaxInFlight,
		EndpointMaxInFlight: c.EndpointMaxInFlight,
		Retention:           c.Retention,
		DefaultStream:       c.DefaultStream,
		TenantStreamPrefix:  p.Config.Access.TenantStreamPrefix,
		MaxEventBytes:       c.MaxEventBytes,
		ReplayBatch:         c.ReplayBatch,
		Profiles:            profiles,
		FailurePolicy:       c.FailurePolicy,
		Timeout:             c.Timeout,
		RequireVerification: c.VerifyEndpoints,
		EnforceEventTypes:   c.EnforceEventTypes,
		LogLevel:            c.LogLevel,
		MetricsTenantLabel:  c.MetricsTenantLabel,
	})
	if err != nil {
		return nil, fmt.Errorf("event delivery: %w", err)
	}
	if err := eng.Start(ctx); err != nil {
		return nil, fmt.Errorf("event delivery: %w", err)
	}
	if err := ensureBuiltins(ctx, eng, &p.Config.Brokers); err != nil {
		return nil, errors.Join(fmt.Errorf("event delivery: %w", err), eng.Stop(context.Background()))
	}
	return eng, nil
}

// newWebhookSender returns the process's one webhook sender, which wakes
// and deliveries share, so its bounds (in flight, per host) hold for the
// process. Its bounds add the wakes' to the deliveries': the delivery
// engine bounds each endpoint itself, so the per-host bound must not
// throttle many endpoints on one host below --delivery-max-in-flight.
// Each request carries its own timeout (a wake's, an endpoint's); the
// sender's is the longest.
func newWebhookSender(cfg *serveConfig, tp trace.TracerProvider) (*webhook.Sender, error) {
	allow, err := webhook.ParseCIDRList(cfg.WebhookAllowCIDRs)
	if err != nil {
		return nil, err
	}
	return webhook.New(webhook.Config{
		AllowCIDRs:     allow,
		Timeout:        max(cfg.Delivery.Timeout, subscription.WebhookRequestTimeout),
		MaxConcurrent:  wakeMaxConcurrent + cfg.Delivery.MaxInFlight,
		MaxPerHost:     max(wakeMaxPerHost, cfg.Delivery.MaxInFlight),
		TracerProvider: tp,
	}), nil
}
