// Package bus publishes events to message brokers: the destinations of
// endpoints of type "nats" and "kafka" (see delivery.Destination). Its
// publishers (packages natsbus and kafkabus) dial through the webhook
// sender's guarded dialer, so a broker address, and every address a
// cluster tells its client of, passes the same address policy as a
// webhook URL at every connection. Pool keeps one publisher per endpoint
// for the delivery engine, which knows only the Destinations interface.
package bus

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/heraldstreams/herald/delivery"
)

// Message is one event to publish: its fields (which render the subject
// or topic and the record key), its body (the JSON envelope of the
// endpoint's wire profile) and headers to send with it.
type Message struct {
	delivery.EventFields
	Timestamp time.Time
	Body      []byte
	// Header holds the headers of the endpoint's profile and its custom
	// headers; Headers adds Herald's own.
	Header http.Header
}

// Header names every broker message carries.
const (
	HeaderEventID   = "Herald-Event-Id"
	HeaderEventType = "Herald-Event-Type"
	HeaderTenant    = "Herald-Tenant"
	HeaderTimestamp = "Herald-Timestamp"
	HeaderStream    = "Herald-Stream"
)

// Headers returns the message's headers: its own, then Herald's (the
// event id, type, tenant, RFC 3339 timestamp and stream), and the content
// type.
func (m *Message) Headers() http.Header {
	h := make(http.Header, len(m.Header)+6)
	for k, v := range m.Header {
		h[k] = v
	}
	h.Set(HeaderEventID, m.ID)
	h.Set(HeaderEventType, m.Type)
	h.Set(HeaderTenant, m.Tenant)
	h.Set(HeaderTimestamp, m.Timestamp.UTC().Format(time.RFC3339Nano))
	h.Set(HeaderStream, m.Stream)
	h.Set("Content-Type", "application/json")
	return h
}

// Publisher publishes to one destination. It is safe for concurrent use.
type Publisher interface {
	// Publish publishes msgs and returns once the broker acknowledged
	// every one of them; an error means some may not have been (a retry
	// sends them all again).
	Publish(ctx context.Context, msgs []Message) error
	// Close ends the publisher's connections.
	Close()
}

// DialFunc dials a broker's address.
type DialFunc func(ctx context.Context, network, address string) (net.Conn, error)

// Opener makes the publisher of a destination, dialing with dial.
type Opener func(d *delivery.Destination, dial DialFunc) (Publisher, error)

// Guard is the address policy brokers are held to: *webhook.Sender
// implements it.
type Guard interface {
	// BrokerDialer dials under the policy, checked at every connection;
	// a plaintext connection (tls false) reaches only allow-list
	// addresses.
	BrokerDialer(tls bool) func(ctx context.Context, network, address string) (net.Conn, error)
	// ValidateBrokerAddress checks host:port when a destination is
	// configured.
	ValidateBrokerAddress(ctx context.Context, hostport string, tls bool) error
}

// PoolConfig configures a Pool.
type PoolConfig struct {
	// Guard holds the addresses to the policy. Required.
	Guard Guard
	// Openers make the publishers, by destination type.
	Openers map[string]Opener
}

// Pool keeps one publisher per key (an endpoint), opened at its first
// message and opened again when the key's destination changes.
type Pool struct {
	cfg PoolConfig

	mu     sync.Mutex
	pubs   map[string]*pooled // guarded by mu
	closed bool               // guarded by mu
}

// pooled is one key's publisher, opened once.
type pooled struct {
	config string // the destination's config it was opened for
	once   sync.Once
	pub    Publisher
	err    error
}

// NewPool returns a Pool.
func NewPool(cfg PoolConfig) (*Pool, error) {
	if cfg.Guard == nil {
		return nil, errors.New("bus: a pool needs the address guard")
	}
	return &Pool{cfg: cfg, pubs: make(map[string]*pooled)}, nil
}

// ErrClosed: the pool was closed.
var ErrClosed = errors.New("bus: the publisher pool is closed")

// Publish publishes msgs to key's destination d, whose stored config is
// config (a change of it opens a new publisher).
func (p *Pool) Publish(ctx context.Context, key string, d *delivery.Destination, config []byte, msgs []Message) error {
	e, err := p.entry(key, d, string(config))
	if err != nil {
		return err
	}
	if e.err != nil {
		// A failed open is not kept: the next attempt opens again.
		p.drop(key, e)
		return e.err
	}
	return e.pub.Publish(ctx, msgs)
}

// entry returns key's publisher for config, opening it if need be.
func (p *Pool) entry(key string, d *delivery.Destination, config string) (*pooled, error) {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil, ErrClosed
	}
	e := p.pubs[key]
	var old *pooled
	if e == nil || e.config != config {
		old = e
		e = &pooled{config: config}
		p.pubs[key] = e
	}
	p.mu.Unlock()
	if old != nil {
		old.close()
	}
	e.once.Do(func() {
		open, ok := p.cfg.Openers[d.Type]
		if !ok {
			e.err = fmt.Errorf("bus: no publisher for destinations of type %q", d.Type)
			return
		}
		e.pub, e.err = open(d, p.cfg.Guard.BrokerDialer(d.TLS()))
	})
	return e, nil
}

// drop forgets key's entry if it is still e.
func (p *Pool) drop(key string, e *pooled) {
	p.mu.Lock()
	if p.pubs[key] == e {
		delete(p.pubs, key)
	}
	p.mu.Unlock()
}

func (e *pooled) close() {
	e.once.Do(func() { e.err = ErrClosed }) // an entry never opened stays closed
	if e.pub != nil {
		e.pub.Close()
	}
}

// Forget closes key's publisher (its endpoint is gone).
func (p *Pool) Forget(key string) {
	p.mu.Lock()
	e := p.pubs[key]
	delete(p.pubs, key)
	p.mu.Unlock()
	if e != nil {
		e.close()
	}
}

// Close closes every publisher; Publish fails from then on.
func (p *Pool) Close() {
	p.mu.Lock()
	pubs := p.pubs
	p.pubs, p.closed = nil, true
	p.mu.Unlock()
	for _, e := range pubs {
		e.close()
	}
}

// CheckAddresses checks every address of d against the policy, as
// webhook URLs are checked when an endpoint is configured.
func (p *Pool) CheckAddresses(ctx context.Context, d *delivery.Destination) error {
	for _, a := range d.Addresses() {
		if err := p.cfg.Guard.ValidateBrokerAddress(ctx, a, d.TLS()); err != nil {
			return err
		}
	}
	return nil
}

// TLSConfig builds a destination's client TLS configuration: TLS 1.2 at
// least, the system roots or the config's CA bundle, and the config's
// server name when it gives one.
func TLSConfig(t *delivery.TLSConfig) (*tls.Config, error) {
	c := &tls.Config{MinVersion: tls.VersionTLS12}
	if t == nil {
		return c, nil
	}
	c.ServerName = t.ServerName
	if t.CA != "" {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM([]byte(t.CA)) {
			return nil, errors.New("bus: the tls.ca bundle holds no certificate")
		}
		c.RootCAs = pool
	}
	return c, nil
}

// Acknowledged says how many messages of a batch were acknowledged, for
// an error's text.
func Acknowledged(acked, total int) string {
	return strconv.Itoa(acked) + " of " + strconv.Itoa(total) + " acknowledged"
}
