package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace"

	"github.com/heraldstreams/herald/auth"
	"github.com/heraldstreams/herald/store"
	"github.com/heraldstreams/herald/subscription"
	"github.com/heraldstreams/herald/subscription/wake"
	"github.com/heraldstreams/herald/webhook"
)

// legacyTokenKeyFile is the callback token key file an older Herald kept
// in the data directory, in plaintext. Its keys move into the store
// (encrypted) at the first start that finds it, and the file is removed.
const legacyTokenKeyFile = "token-keys"

// Outbound limits of wakes in the process's webhook sender: one
// consumer's webhook host often serves many consumers (a serverless
// platform), so the per-host bound is well above the sender's default.
const (
	wakeMaxConcurrent = 512
	wakeMaxPerHost    = 128
)

// subscriptionsParams are the inputs of startSubscriptions.
type subscriptionsParams struct {
	Config *serveConfig
	Store  wake.EngineStore
	// Reserved keeps the reserved subscription API's signing keys and
	// its subscriptions' rows (consumers of the same engine).
	Reserved wake.ReservedStore
	// Sender is the process's one webhook sender (newWebhookSender).
	Sender *webhook.Sender
	// TokenKeys keeps the token keys Herald makes (none configured).
	TokenKeys store.TokenKeyStore
	Metrics   prometheus.Registerer
	// Tracing traces wakes and their POSTs; nil: off.
	Tracing  trace.TracerProvider
	Logger   *slog.Logger
	Listener net.Addr
}

// startSubscriptions builds the wake engine with its two front doors and
// starts it: the query-string subscriptions with their consumers and
// callbacks, and the Durable Streams protocol's reserved subscription API
// under the stream root (Engine.Reserved), which share the engine's
// loops, timers, sender and callback token keys. The route table serves
// both. The caller stops the engine (Stop) after the HTTP server and
// before the store.
func startSubscriptions(ctx context.Context, p subscriptionsParams) (*wake.Engine, *wake.Reserved, error) {
	cfg := p.Config
	var keys []subscription.Key
	var err error
	if cfg.TokenKeys != "" {
		keys, err = subscription.ParseKeys(cfg.TokenKeys)
	} else {
		keys, err = storedTokenKeys(ctx, p.TokenKeys, cfg.DataDir, p.Logger)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("callback token keys: %w", err)
	}
	keyring, err := subscription.NewKeyring(keys, nil)
	if err != nil {
		return nil, nil, err
	}
	eng, err := wake.NewEngine(wake.EngineConfig{
		Store:           p.Store,
		Sender:          p.Sender,
		Keyring:         keyring,
		CallbackBaseURL: publicURL(cfg.PublicURL, cfg.TLS.scheme(), p.Listener),
		Logger:          p.Logger,
		Registerer:      p.Metrics,
		TracerProvider:  p.Tracing,
		SweepInterval:   cfg.consumerSweepInterval(),
		// The embedded store belongs to this process alone (it holds the
		// data directory's lock), so the engine sees every membership
		// change; replicas sharing a database change memberships under
		// each other.
		ExclusiveStore: !cfg.sharedStore(),
		// A tenant's consumers subscribe only within its namespace.
		StreamOwner: func(path string) (string, bool) { return auth.StreamOwner(cfg.Access.TenantStreamPrefix, path) },
		Reserved:    wake.ReservedConfig{Store: p.Reserved, Root: cfg.streamRoot(), Logger: p.Logger.With("api", "reserved")},
	})
	if err != nil {
		return nil, nil, err
	}
	if err := eng.Start(ctx); err != nil {
		return nil, nil, err
	}
	return eng, eng.Reserved(), nil
}

// storedTokenKeys returns the token keys the store keeps, made at the
// first start: the keys of an older Herald's key file when there is one,
// else a new key. Once the store holds the file's keys, the file goes.
func storedTokenKeys(ctx context.Context, st store.TokenKeyStore, dataDir string, log *slog.Logger) ([]subscription.Key, error) {
	legacy := filepath.Join(dataDir, legacyTokenKeyFile)
	initial, err := wake.ReadKeyFile(legacy)
	fromFile := err == nil
	if errors.Is(err, fs.ErrNotExist) {
		var k subscription.Key
		k, err = subscription.GenerateKey(rand.Reader)
		initial = []subscription.Key{k}
	}
	if err != nil {
		return nil, err
	}
	offer := make([]store.TokenKey, len(initial))
	for i, k := range initial {
		offer[i] = store.TokenKey{ID: k.ID, Secret: k.Secret}
	}
	stored, err := st.TokenKeyInit(ctx, &store.TokenKeyInitParams{Keys: offer, Now: time.Now()})
	if err != nil {
		return nil, err
	}
	keys := make([]subscription.Key, len(stored))
	same := len(stored) == len(initial)
	for i, k := range stored {
		keys[i] = subscription.Key{ID: k.ID, Secret: k.Secret}
		same = same && k.ID == initial[i].ID && bytes.Equal(k.Secret, initial[i].Secret)
	}
	if fromFile {
		if !same {
			// The store had keys already: this file is not what it holds
			// (a copy put back?). It is left for its owner to look at.
			log.Warn("a token key file is in the data directory, but the database holds other token keys, which are used", "file", legacy)
		} else if err := os.Remove(legacy); err != nil {
			return nil, fmt.Errorf("remove the token key file now kept in the database: %w", err)
		} else {
			log.Info("callback token keys moved from the token key file into the database, encrypted; the file is removed", "file", legacy)
		}
	}
	return keys, nil
}

// warnPublicURL logs a warning when Herald listens beyond loopback with
// no --public-url: the URLs it hands out (wakes' callbacks, portal links)
// then name the listen address or localhost, which other machines may
// not reach.
func warnPublicURL(log *slog.Logger, configured, scheme string, ln net.Addr) {
	if configured != "" || isLoopback(ln) {
		return
	}
	log.Warn("--public-url is not set while listening beyond loopback: the callback URLs of wakes and the dashboard URLs of portal tokens name "+
		publicURL("", scheme, ln)+", which consumers on other machines may not reach; set --public-url to the URL they reach Herald at",
		"addr", ln.String(), "public_url", publicURL("", scheme, ln))
}

// publicURL is the base of callback URLs: the configured one, or the
// listener's address with scheme (http, or https when Herald serves TLS),
// <scheme>://localhost:<port> when it listens on every address.
func publicURL(configured, scheme string, ln net.Addr) string {
	if configured != "" {
		return strings.TrimSuffix(configured, "/")
	}
	tcp, ok := ln.(*net.TCPAddr)
	if !ok {
		return scheme + "://localhost:4437"
	}
	if tcp.IP == nil || tcp.IP.IsUnspecified() {
		return fmt.Sprintf("%s://localhost:%d", scheme, tcp.Port)
	}
	return scheme + "://" + tcp.String()
}
