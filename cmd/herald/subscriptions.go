package main

import (
	"context"
	"crypto/rand"
	"fmt"
	"log/slog"
	"net"
	"path/filepath"
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/heraldstreams/herald/httpapi"
	"github.com/heraldstreams/herald/subscription"
	"github.com/heraldstreams/herald/webhook"
)

// tokenKeyFile is the name of the callback token key file in the data
// directory, created with one key on first start.
const tokenKeyFile = "token-keys"

// Outbound limits of the wake sender: one consumer's webhook host often
// serves many consumers (a serverless platform), so the per-host bound is
// well above the sender's default.
const (
	wakeMaxConcurrent = 512
	wakeMaxPerHost    = 128
)

// subscriptionsParams are the inputs of startSubscriptions.
type subscriptionsParams struct {
	Config   *serveConfig
	Store    subscription.EngineStore
	API      *httpapi.Server
	Metrics  prometheus.Registerer
	Logger   *slog.Logger
	Listener net.Addr
}

// startSubscriptions builds the webhook subscription engine, mounts its
// HTTP API and callbacks on the API server, and starts it. The caller
// stops it (Engine.Stop) after the HTTP server and before the store.
func startSubscriptions(ctx context.Context, p subscriptionsParams) (*subscription.Engine, error) {
	cfg := p.Config
	allow, err := webhook.ParseCIDRList(cfg.WebhookAllowCIDRs)
	if err != nil {
		return nil, err
	}
	var keys []subscription.Key
	if cfg.TokenKeys != "" {
		keys, err = subscription.ParseKeys(cfg.TokenKeys)
	} else {
		keys, err = subscription.LoadOrCreateKeyFile(filepath.Join(cfg.DataDir, tokenKeyFile), rand.Reader)
	}
	if err != nil {
		return nil, fmt.Errorf("callback token keys: %w", err)
	}
	keyring, err := subscription.NewKeyring(keys, nil)
	if err != nil {
		return nil, err
	}
	eng, err := subscription.NewEngine(subscription.EngineConfig{
		Store: p.Store,
		Sender: webhook.New(webhook.Config{
			AllowCIDRs:    allow,
			Timeout:       subscription.WebhookRequestTimeout,
			MaxConcurrent: wakeMaxConcurrent,
			MaxPerHost:    wakeMaxPerHost,
		}),
		Keyring:         keyring,
		CallbackBaseURL: publicURL(cfg.PublicURL, p.Listener),
		Logger:          p.Logger,
		Registerer:      p.Metrics,
		// The embedded store belongs to this process alone (it holds the
		// data directory's lock), so the engine sees every membership
		// change.
		ExclusiveStore: true,
	})
	if err != nil {
		return nil, err
	}
	p.API.MountSubscriptions(eng)
	if err := eng.Start(ctx); err != nil {
		return nil, err
	}
	return eng, nil
}

// publicURL is the base of callback URLs: the configured one, or the
// listener's address (http://localhost:<port> when it listens on every
// address).
func publicURL(configured string, ln net.Addr) string {
	if configured != "" {
		return strings.TrimSuffix(configured, "/")
	}
	tcp, ok := ln.(*net.TCPAddr)
	if !ok {
		return "http://localhost:4437"
	}
	if tcp.IP == nil || tcp.IP.IsUnspecified() {
		return fmt.Sprintf("http://localhost:%d", tcp.Port)
	}
	return "http://" + tcp.String()
}
