package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"strings"
	"time"

	"github.com/heraldstreams/herald/auth"
	"github.com/heraldstreams/herald/httpapi"
	"github.com/heraldstreams/herald/internal/secretbox"
	"github.com/heraldstreams/herald/replica"
	"github.com/heraldstreams/herald/store/sqlite"
	"github.com/heraldstreams/herald/subscription"
	"github.com/heraldstreams/herald/ui"
	"github.com/heraldstreams/herald/webhook"
)

// defaultMaxHeaderBytes is the default of --max-header-bytes: room for
// every protocol header and a long bearer token, far below net/http's
// 1 MiB default.
const defaultMaxHeaderBytes = 64 << 10

// defaultHeaderTimeout is the default of --header-timeout: ample for any
// client that means to send a request, short enough that connections
// that send nothing do not pile up.
const defaultHeaderTimeout = 10 * time.Second

// serveConfig is everything `herald serve` is configured with.
type serveConfig struct {
	Addr    string
	DataDir string
	// Store is the storage backend, "sqlite" (in DataDir) or "postgres"
	// (at PostgresURL, shared by replicas).
	Store       string
	PostgresURL string
	// StreamCache bounds how many streams' metadata the embedded store
	// keeps in memory (sqlite.Config.StreamCache).
	StreamCache     int
	LongPollTimeout time.Duration
	MaxBodyBytes    int64
	MaxReadBytes    int
	MaxCatchUpBytes int
	SSEMaxDuration  time.Duration
	ShutdownTimeout time.Duration
	// ReplicaHeartbeat and ReplicaDeadAfter time the replicas' heartbeats
	// (package replica).
	ReplicaHeartbeat time.Duration
	ReplicaDeadAfter time.Duration
	// Limits on what clients can make Herald hold.
	MaxBufferedBytes int64
	BodyReadTimeout  time.Duration
	MinBodyRate      int64
	MaxConnections   int
	// MaxClientConnections: 0 for httpapi's default.
	MaxClientConnections int
	HeaderTimeout        time.Duration
	MaxHeaderBytes       int
	LogLevel             slog.Level
	LogFormat            string
	AccessLog            bool
	// KEKFile is the key-encryption key file ("": herald.kek in the data
	// directory); KEK is HERALD_KEK, keys given directly, which win.
	KEKFile string
	KEK     string
	// Webhook subscriptions (docs/subscriptions.md).
	WebhookAllowCIDRs string
	TokenKeys         string
	PublicURL         string
	// StreamRoot is where streams live (--stream-root).
	StreamRoot string
	// Event delivery (docs/delivery.md).
	Delivery deliveryConfig
	// Broker destinations: the built-in ones, and tenants' own.
	Brokers brokersConfig
	// Access control.
	Access accessConfig
	// TLS is HTTPS: its certificate and key files.
	TLS tlsConfig
	// UIFrameAncestors are the origins that may embed the dashboard.
	UIFrameAncestors string
	// UIBrand is the dashboard's title, logo and accent colour.
	UIBrand uiBrandConfig
}

// serveFlags defines every flag of `herald serve` on a new FlagSet, bound
// to cfg. docs/configuration.md is made from it (see
// TestConfigurationReference), so the reference cannot drift.
func serveFlags(cfg *serveConfig) *flag.FlagSet {
	fs := flag.NewFlagSet("herald serve", flag.ContinueOnError)
	fs.StringVar(&cfg.Addr, "addr", "127.0.0.1:4437", "address to listen on (beyond loopback, access control must be on, or --insecure-no-auth given)")
	fs.StringVar(&cfg.DataDir, "data-dir", "./data", "directory of the embedded store (created if missing)")
	fs.StringVar(&cfg.Store, "store", "sqlite", "storage backend: sqlite (the embedded store in --data-dir) or postgres (--postgres-url, which several replicas can share)")
	fs.StringVar(&cfg.PostgresURL, "postgres-url", "", "PostgreSQL connection URL of --store postgres, e.g. postgres://user@host:5432/herald (a password is better given as HERALD_POSTGRES_URL or in ~/.pgpass)")
	fs.IntVar(&cfg.StreamCache, "stream-cache", sqlite.DefaultStreamCache, "most streams whose metadata the embedded store keeps in memory (about 230 bytes of heap each); the others are read from the database when used. A server that touches fewer streams at once holds fewer")
	fs.DurationVar(&cfg.LongPollTimeout, "long-poll-timeout", 30*time.Second, "how long a long-poll read waits for data before it answers 204")
	fs.Int64Var(&cfg.MaxBodyBytes, "max-body-bytes", 16<<20, "largest create or append body accepted (larger: 413)")
	fs.IntVar(&cfg.MaxReadBytes, "max-read-bytes", 4<<20, "most data returned by one read held in memory: an SSE event, a long-poll response, a catch-up read of PostgreSQL")
	fs.IntVar(&cfg.MaxCatchUpBytes, "max-catch-up-bytes", httpapi.DefaultMaxCatchUpBytes, "most data returned by one catch-up read of the embedded store, which writes it from its segment files as it reads it (with sendfile(2), or through a small buffer), never holding it in memory")
	fs.DurationVar(&cfg.SSEMaxDuration, "sse-max-duration", 60*time.Second, "how long an SSE response stays open before the client is asked to reconnect")
	fs.DurationVar(&cfg.ShutdownTimeout, "shutdown-timeout", 30*time.Second, "how long a graceful shutdown may take in total: draining in-flight requests, finishing the wakes and deliveries in flight (those still running then are cancelled and sent again after a restart), and closing the store")
	fs.DurationVar(&cfg.ReplicaHeartbeat, "replica-heartbeat", replica.DefaultInterval, "how often this replica records in the store that it is alive (and checks that the database answers: /_herald/readyz is 503 while it does not)")
	fs.DurationVar(&cfg.ReplicaDeadAfter, "replica-dead-after", replica.DefaultDeadAfter, "how long after its last heartbeat a replica counts as dead: another then ends its delivery leases, timers and named leases and takes its work over (several --replica-heartbeat, and more than the clocks of the replicas' hosts differ)")
	fs.Int64Var(&cfg.MaxBufferedBytes, "max-buffered-bytes", httpapi.DefaultMaxBufferedBytes, "most bytes of request bodies held in memory at once, all requests together (beyond: 503 SERVER_BUSY); at least --max-body-bytes")
	fs.DurationVar(&cfg.BodyReadTimeout, "body-read-timeout", httpapi.DefaultBodyReadTimeout, "how long a request body may take beyond the time its size needs at --min-body-rate (beyond: 408 BODY_TIMEOUT)")
	fs.Int64Var(&cfg.MinBodyRate, "min-body-rate", httpapi.DefaultMinBodyRate, "slowest average rate, in bytes a second, a request body may arrive at")
	fs.IntVar(&cfg.MaxConnections, "max-connections", httpapi.DefaultMaxConnections, "most client connections open at once; connections beyond are closed at once")
	fs.IntVar(&cfg.MaxClientConnections, "max-connections-per-client", 0, "most connections open at once from one client address (an IPv4 address, an IPv6 /64); beyond, closed at once (0: a quarter of --max-connections; behind a proxy every client has the proxy's address: set it to --max-connections)")
	fs.DurationVar(&cfg.HeaderTimeout, "header-timeout", defaultHeaderTimeout, "how long a new connection may take to send its request line and headers, and an idle one to start its next request; beyond, it is closed")
	fs.IntVar(&cfg.MaxHeaderBytes, "max-header-bytes", defaultMaxHeaderBytes, "largest request line and header section accepted (beyond: 431)")
	cfg.LogLevel = slog.LevelInfo
	fs.Var(logLevelFlag{&cfg.LogLevel}, "log-level", "log level: debug, info (the default), warn or error")
	fs.StringVar(&cfg.LogFormat, "log-format", "text", "log format: text or json")
	fs.BoolVar(&cfg.AccessLog, "access-log", true, "log every request at info (method, route, path, query with credential-like values redacted, status, bytes, duration, request id) and answer X-Request-Id")
	fs.StringVar(&cfg.KEKFile, "kek-file", "", "key-encryption key file: encrypts the secrets in the database; created with a new key if missing (default: "+secretbox.DefaultFileName+" in the data directory). Keep it out of database backups. HERALD_KEK=<id>:<base64 key> gives the key directly instead")
	fs.StringVar(&cfg.WebhookAllowCIDRs, "webhook-allow-cidrs", "", "comma-separated address ranges webhooks may reach although private or loopback, over http:// too (development: 127.0.0.0/8,::1/128)")
	fs.StringVar(&cfg.TokenKeys, "token-keys", "", "callback token keys, <id>:<base64 secret> separated by commas, the first signing (default: a key made at first start and kept in the database, encrypted)")
	fs.StringVar(&cfg.PublicURL, "public-url", "", "base URL consumers and browsers reach Herald at, for the callback URL in wakes and the dashboard URL of portal tokens (default: http:// and the listen address, with localhost for an unspecified one such as 0.0.0.0; set it whenever Herald listens beyond loopback)")
	fs.StringVar(&cfg.StreamRoot, "stream-root", "/", "the URL path under which streams live; paths outside it are not streams. The Durable Streams reserved subscription API is at <stream-root>/__ds/, and the stream paths in its bodies are relative to the root (e.g. /v1/stream)")
	cfg.Delivery.addFlags(fs)
	cfg.Brokers.addFlags(fs)
	cfg.Access.addFlags(fs)
	cfg.TLS.addFlags(fs)
	fs.StringVar(&cfg.UIFrameAncestors, "ui-frame-ancestors", "", "comma-separated origins whose pages may embed the dashboard at /_herald/ui/ in a frame, e.g. the platform that shows tenants their portal (default: none may)")
	cfg.UIBrand.addFlags(fs)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: herald serve [flags]\n\nRuns Herald. Each flag may also be set as HERALD_<FLAG_NAME> (e.g. HERALD_DATA_DIR).\n\nFlags:\n")
		fs.PrintDefaults()
	}
	return fs
}

// parseServeFlags reads the configuration of herald serve from the
// environment and args. --help prints the flags on stdout and returns
// flag.ErrHelp; a mistake is a usage error (printed on stderr when the
// command line has it). A configuration that parses but is not valid is
// returned with its error, so the error can be logged in its log format.
func parseServeFlags(args []string, stdout, stderr io.Writer, env func(string) (string, bool)) (*serveConfig, error) {
	cfg := &serveConfig{}
	fs := serveFlags(cfg)
	if err := applyEnv(fs, env); err != nil {
		return nil, err
	}
	if err := parseFlags(fs, args, stdout, stderr); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("%w: unexpected arguments %q", errUsage, fs.Args())
	}
	// The key-encryption key is an environment variable only: a flag's
	// value is visible to every user in the process list.
	cfg.KEK, _ = env(kekEnv)
	if err := cfg.Access.readSecrets(env); err != nil {
		return nil, err
	}
	return cfg, cfg.validate()
}

func (c *serveConfig) validate() error {
	var problems []string
	if c.DataDir == "" {
		problems = append(problems, "--data-dir must not be empty")
	}
	switch {
	case c.Store != "sqlite" && c.Store != "postgres":
		problems = append(problems, fmt.Sprintf("--store must be sqlite or postgres, not %q", c.Store))
	case c.Store == "postgres" && c.PostgresURL == "":
		problems = append(problems, "--store postgres needs --postgres-url (or HERALD_POSTGRES_URL)")
	case c.Store == "sqlite" && c.PostgresURL != "":
		problems = append(problems, "--postgres-url is set but --store is sqlite: add --store postgres")
	}
	if c.LongPollTimeout <= 0 {
		problems = append(problems, "--long-poll-timeout must be positive")
	}
	if c.MaxBodyBytes <= 0 {
		problems = append(problems, "--max-body-bytes must be positive")
	}
	if c.MaxReadBytes <= 0 {
		problems = append(problems, "--max-read-bytes must be positive")
	}
	if c.MaxCatchUpBytes <= 0 {
		problems = append(problems, "--max-catch-up-bytes must be positive")
	}
	if c.SSEMaxDuration <= 0 {
		problems = append(problems, "--sse-max-duration must be positive")
	}
	if c.ShutdownTimeout <= 0 {
		problems = append(problems, "--shutdown-timeout must be positive")
	}
	if c.ReplicaHeartbeat <= 0 {
		problems = append(problems, "--replica-heartbeat must be positive")
	}
	if c.ReplicaDeadAfter < 2*c.ReplicaHeartbeat {
		problems = append(problems, "--replica-dead-after must be at least twice --replica-heartbeat, or a live replica late with one beat counts as dead")
	}
	if c.MaxBufferedBytes < c.MaxBodyBytes {
		problems = append(problems, "--max-buffered-bytes must be at least --max-body-bytes, or the largest body could never be read")
	}
	if c.BodyReadTimeout <= 0 {
		problems = append(problems, "--body-read-timeout must be positive")
	}
	if c.MinBodyRate <= 0 {
		problems = append(problems, "--min-body-rate must be positive")
	}
	if c.StreamCache <= 0 {
		problems = append(problems, "--stream-cache must be positive")
	}
	if c.MaxConnections <= 0 {
		problems = append(problems, "--max-connections must be positive")
	}
	if c.MaxClientConnections < 0 {
		problems = append(problems, "--max-connections-per-client must not be negative")
	}
	if c.HeaderTimeout <= 0 {
		problems = append(problems, "--header-timeout must be positive")
	}
	if c.MaxHeaderBytes <= 0 {
		problems = append(problems, "--max-header-bytes must be positive")
	}
	if _, err := subscription.NormalizeRoot(c.StreamRoot); err != nil {
		problems = append(problems, "--stream-root: "+err.Error())
	}
	if _, err := webhook.ParseCIDRList(c.WebhookAllowCIDRs); err != nil {
		problems = append(problems, "--webhook-allow-cidrs: "+err.Error())
	}
	if strings.TrimSpace(c.KEK) != "" {
		if _, err := secretbox.ParseKeys(c.KEK); err != nil {
			problems = append(problems, kekEnv+": "+err.Error())
		}
	}
	if c.TokenKeys != "" {
		if _, err := subscription.ParseKeys(c.TokenKeys); err != nil {
			problems = append(problems, "--token-keys: "+err.Error())
		}
	}
	if c.PublicURL != "" {
		if u, err := url.Parse(c.PublicURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			problems = append(problems, "--public-url must be an absolute http:// or https:// URL")
		}
	}
	if c.LogFormat != "text" && c.LogFormat != "json" {
		problems = append(problems, "--log-format must be text or json")
	}
	problems = append(problems, c.Delivery.problems()...)
	problems = append(problems, c.Brokers.problems()...)
	problems = append(problems, c.Access.problems()...)
	if tenant, ok := auth.StreamOwner(c.Access.TenantStreamPrefix, c.Delivery.DefaultStream); ok {
		problems = append(problems, "--delivery-default-stream "+c.Delivery.DefaultStream+" lies in the stream namespace of tenant "+tenant+" (--tenant-stream-prefix): the installation's default events stream must be the platform's")
	}
	problems = append(problems, c.TLS.problems()...)
	for _, a := range splitList(c.UIFrameAncestors) {
		if err := ui.CheckFrameAncestor(a); err != nil {
			problems = append(problems, "--ui-frame-ancestors: "+strings.TrimPrefix(err.Error(), "ui: "))
		}
	}
	problems = append(problems, c.UIBrand.problems()...)
	if len(problems) > 0 {
		return fmt.Errorf("%w: %s", errUsage, strings.Join(problems, "; "))
	}
	return nil
}

// logLevelFlag is --log-level. flag.TextVar would pass on slog's own error,
// which names the Go package; this one names the choices.
type logLevelFlag struct{ level *slog.Level }

func (f logLevelFlag) String() string {
	if f.level == nil {
		return "info" // the zero Value flag's help inspects
	}
	return strings.ToLower(f.level.String())
}

func (f logLevelFlag) Set(v string) error {
	if err := f.level.UnmarshalText([]byte(v)); err != nil {
		return errors.New("must be debug, info, warn or error")
	}
	return nil
}

// Background work of a store that replicas share (--store postgres) is
// slower than the embedded store's, so that an idle replica costs the
// database almost nothing (docs/performance.md, Several replicas):
// everything that must be prompt is announced by the change feed.
const (
	// sharedConsumerSweep is how often a replica asks the database for
	// consumer deadlines it does not know of: those armed by a replica
	// that stopped before they were due (a running replica fires its own
	// on time).
	sharedConsumerSweep = 5 * time.Second
	// sharedReaperInterval is how often a replica removes expired
	// streams (they are invisible from their deadline on; this frees
	// their rows).
	sharedReaperInterval = 10 * time.Second
)

// sharedStore reports whether several replicas may share the store.
func (c *serveConfig) sharedStore() bool { return c.Store == "postgres" }

// consumerSweepInterval is the subscription engine's SweepInterval (0:
// the engine's default).
func (c *serveConfig) consumerSweepInterval() time.Duration {
	if c.sharedStore() {
		return sharedConsumerSweep
	}
	return 0
}

// reaperInterval is the reaper's Interval (0: its default).
func (c *serveConfig) reaperInterval() time.Duration {
	if c.sharedStore() {
		return sharedReaperInterval
	}
	return 0
}

// streamRoot is --stream-root in canonical form (checked by validate).
func (c *serveConfig) streamRoot() subscription.Root {
	r, err := subscription.NormalizeRoot(c.StreamRoot)
	if err != nil {
		return "/"
	}
	return r
}
