package dispatch

// Broker destinations: how a delivery reaches an endpoint of type "nats"
// or "kafka". The engine sees only the Destinations interface; the
// transport behind it is the bus package's.

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/heraldstreams/herald/bus"
	"github.com/heraldstreams/herald/delivery"
	"github.com/heraldstreams/herald/store"
	"github.com/heraldstreams/herald/webhook"
)

// Destinations publishes to broker destinations (*bus.Pool implements
// it): one publisher per endpoint, kept while the endpoint's config is
// the same.
type Destinations interface {
	// Publish publishes msgs to the endpoint's destination d (its stored
	// config is config) and returns once the broker acknowledged every
	// one.
	Publish(ctx context.Context, endpointID string, d *delivery.Destination, config []byte, msgs []bus.Message) error
	// CheckAddresses checks the destination's addresses against the
	// address policy when it is configured.
	CheckAddresses(ctx context.Context, d *delivery.Destination) error
	// Forget closes the endpoint's publisher.
	Forget(endpointID string)
}

// ErrNoDestinations: a broker endpoint on an engine built without
// Destinations.
var ErrNoDestinations = errors.New("delivery: this Herald publishes to no message broker")

// destinationOf parses a stored endpoint's broker destination, nil for
// a webhook.
func destinationOf(ep *store.Endpoint) (*delivery.Destination, error) {
	if !delivery.IsBroker(ep.Type) {
		return nil, nil
	}
	return delivery.ParseDestination(ep.Type, ep.Destination)
}

// addressCheck is the check of a broker destination's addresses for
// delivery.ValidateEndpoint: a refusal becomes a *delivery.ValidationError
// of CodeURLRefused on the config's address list.
func (e *Engine) addressCheck(ctx context.Context, d *delivery.Destination) error {
	if e.cfg.Destinations == nil {
		return delivery.Invalid(delivery.CodeInvalidDestination, "type", "%s", ErrNoDestinations.Error())
	}
	err := e.cfg.Destinations.CheckAddresses(ctx, d)
	if errors.Is(err, webhook.ErrURLRefused) {
		field := "config.servers"
		if d.Kafka != nil {
			field = "config.brokers"
		}
		return &delivery.ValidationError{Code: delivery.CodeURLRefused, Field: field, Message: refusalMessage(err), Err: err}
	}
	return err
}

// publish sends a group of deliveries to the endpoint's broker, each
// event its own message (a batch is the client's batching), with the
// custom headers and the profile's signature headers a POST would
// carry, within the endpoint's attempt timeout.
func (e *Engine) publish(ctx context.Context, le *liveEndpoint, ds []store.Delivery, at time.Time) error {
	if e.cfg.Destinations == nil {
		return ErrNoDestinations
	}
	msgs := make([]bus.Message, len(ds))
	for i, d := range ds {
		h, err := e.brokerHeaders(le, d.EventID, d.EventType, d.Body, at)
		if err != nil {
			return err
		}
		ts, ok := le.profile.EventTimestamp(d.Body)
		if !ok {
			ts = d.CreatedAt
		}
		msgs[i] = bus.Message{EventFields: delivery.EventFields{ID: d.EventID, Type: d.EventType, Tenant: d.EventTenant, Stream: d.Stream},
			Timestamp: ts, Body: d.Body, Header: h}
	}
	ctx, cancel := context.WithTimeout(ctx, le.timeout)
	defer cancel()
	if err := e.cfg.Destinations.Publish(ctx, le.ep.ID, le.dest, le.ep.Destination, msgs); err != nil {
		return fmt.Errorf("%s: %w", le.dest.Type, err)
	}
	return nil
}

// brokerHeaders are a message's headers: the endpoint's custom headers
// and its profile's signed headers, as a POST of the body would carry.
func (e *Engine) brokerHeaders(le *liveEndpoint, id, eventType string, body []byte, at time.Time) (http.Header, error) {
	req, err := e.signedRequest(le, id, eventType, body, at)
	if err != nil {
		return nil, err
	}
	req.Header.Del("Content-Type") // the bus sets its own
	req.Header.Del("User-Agent")
	return req.Header, nil
}
