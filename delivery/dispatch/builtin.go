package dispatch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/heraldstreams/herald/delivery"
	"github.com/heraldstreams/herald/store"
)

// Built-in destinations are the installation's own broker endpoints,
// configured by flags (--kafka-brokers, --nats-url) rather than the API:
// each receives every event, with the delivery machinery of any
// endpoint (retries, dead letters, the attempt log, metrics).

// Ids of the built-in destinations: fixed, so a restart finds its own.
const (
	BuiltinKafkaID = "ep_000000000000000000000001"
	BuiltinNATSID  = "ep_000000000000000000000002"
)

// BuiltinBatch is how many events a built-in destination publishes in
// one go, one batch at a time, oldest first.
const BuiltinBatch = 1000

// BuiltinParams configure one built-in destination.
type BuiltinParams struct {
	ID, Name string
	// Type is delivery.DestinationKafka or delivery.DestinationNATS; Config
	// its config (see delivery.ParseDestination). A nil Config removes
	// the destination.
	Type   string
	Config json.RawMessage
}

// EnsureBuiltin makes the stored built-in destination p.ID match p: it is
// created (active, from the events appended after it), or its type and
// config are changed (its state, paused or disabled, and its deliveries
// kept), or, with no config, it is deleted with its deliveries. Its
// addresses pass the address policy as any endpoint's.
func (e *Engine) EnsureBuiltin(ctx context.Context, p BuiltinParams) error {
	cur, err := e.st.EndpointGet(ctx, p.ID)
	if err != nil && !errors.Is(err, store.ErrEndpointNotFound) {
		return err
	}
	if p.Config == nil {
		if cur == nil {
			return nil
		}
		return e.DeleteEndpoint(ctx, p.ID)
	}
	c := delivery.EndpointConfig{Type: p.Type, Config: p.Config, Name: p.Name, Ordering: delivery.OrderingNone, MaxInFlight: 1,
		Batch: &delivery.BatchConfig{MaxEvents: BuiltinBatch}}
	var curDest *delivery.Destination
	if cur != nil {
		if curDest, err = destinationOf(cur); err != nil {
			curDest = nil
		}
	}
	cfg, err := e.validate(ctx, &c, curDest)
	if err != nil {
		return fmt.Errorf("built-in %s destination: %w", p.Type, err)
	}
	cfg.RetrySchedule = nil // the installation's
	if cur == nil {
		secret, err := e.newSecret()
		if err != nil {
			return err
		}
		ep := endpointFromConfig(p.ID, cfg)
		ep.Active, ep.Secret = true, secret
		created, err := e.st.EndpointCreate(ctx, &store.EndpointCreateParams{Endpoint: ep, Now: e.now()})
		if errors.Is(err, store.ErrEndpointExists) {
			return e.EnsureBuiltin(ctx, p) // another replica made it first: now it is there
		}
		if err != nil {
			return err
		}
		e.install(created)
		return nil
	}
	if cur.Type == cfg.Type && string(cur.Destination) == string(cfg.Config) && cur.Name == cfg.Name {
		return nil
	}
	_, err = e.changeEndpoint(ctx, p.ID, func(cur *store.Endpoint) (store.Endpoint, error) {
		ep := endpointFromConfig(p.ID, cfg)
		ep.Active, ep.Secret, ep.PreviousSecret, ep.PreviousSecretUntil = cur.Active, cur.Secret, cur.PreviousSecret, cur.PreviousSecretUntil
		return ep, nil
	})
	return err
}
