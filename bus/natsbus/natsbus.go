// Package natsbus publishes events to NATS, core or JetStream, with the
// nats.go client, dialing through the address guard.
package natsbus

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nkeys"

	"github.com/heraldstreams/herald/bus"
	"github.com/heraldstreams/herald/delivery"
)

// Connection settings.
const (
	// connectTimeout bounds one dial and the server's handshake.
	connectTimeout = 5 * time.Second
	// maxPending bounds the JetStream publishes awaiting their
	// acknowledgement on one connection.
	maxPending = 16384
	// flushTimeout bounds a core NATS flush when the caller's context
	// has no deadline.
	flushTimeout = 10 * time.Second
)

// publisher publishes to one NATS destination.
type publisher struct {
	cfg *delivery.NATSConfig
	nc  *nats.Conn
	js  jetstream.JetStream // nil for core NATS
}

// dialer adapts the guarded dial function to nats.go's dialer.
type dialer struct{ dial bus.DialFunc }

// Dial dials one server within the connect timeout.
func (d dialer) Dial(network, address string) (net.Conn, error) {
	ctx, cancel := context.WithTimeout(context.Background(), connectTimeout)
	defer cancel()
	return d.dial(ctx, network, address)
}

// Open connects to a NATS destination (a bus.Opener). The client
// reconnects by itself when the connection drops; a publish meanwhile
// fails, and is retried on the endpoint's schedule.
func Open(d *delivery.Destination, dial bus.DialFunc) (bus.Publisher, error) {
	c := d.NATS
	if c == nil {
		return nil, errors.New("natsbus: not a NATS destination")
	}
	opts := []nats.Option{
		nats.Name("herald"),
		nats.SetCustomDialer(dialer{dial}),
		nats.Timeout(connectTimeout),
		nats.MaxReconnects(-1),
		nats.ReconnectWait(250 * time.Millisecond),
		// The first connection is retried in the background: an endpoint
		// created while its broker is down waits for it.
		nats.RetryOnFailedConnect(true),
		// Nothing is buffered while disconnected: a publish fails then,
		// and its delivery is retried, rather than sit in memory.
		nats.ReconnectBufSize(-1),
	}
	if d.TLS() {
		tc, err := bus.TLSConfig(c.TLS)
		if err != nil {
			return nil, err
		}
		opts = append(opts, nats.Secure(tc))
	}
	auth, err := authOption(c)
	if err != nil {
		return nil, err
	}
	if auth != nil {
		opts = append(opts, auth)
	}
	nc, err := nats.Connect(strings.Join(c.Servers, ","), opts...)
	if err != nil {
		return nil, fmt.Errorf("natsbus: connect: %w", err)
	}
	p := &publisher{cfg: c, nc: nc}
	if c.JetStream {
		js, err := jetstream.New(nc, jetstream.WithPublishAsyncMaxPending(maxPending))
		if err != nil {
			nc.Close()
			return nil, fmt.Errorf("natsbus: JetStream: %w", err)
		}
		p.js = js
	}
	return p, nil
}

// authOption is the option of the destination's one way to
// authenticate, nil when it has none.
func authOption(c *delivery.NATSConfig) (nats.Option, error) {
	switch {
	case c.User != "":
		return nats.UserInfo(c.User, c.Password), nil
	case c.Token != "":
		return nats.Token(c.Token), nil
	case c.NKeySeed != "":
		kp, err := nkeys.FromSeed([]byte(c.NKeySeed))
		if err != nil {
			return nil, errors.New("natsbus: nkey_seed is not an NKey seed")
		}
		pub, err := kp.PublicKey()
		if err != nil {
			return nil, errors.New("natsbus: nkey_seed is not an NKey seed")
		}
		return nats.Nkey(pub, kp.Sign), nil
	case c.Creds != "":
		jwt, err := nkeys.ParseDecoratedJWT([]byte(c.Creds))
		if err != nil {
			return nil, errors.New("natsbus: creds holds no user JWT")
		}
		kp, err := nkeys.ParseDecoratedNKey([]byte(c.Creds))
		if err != nil {
			return nil, errors.New("natsbus: creds holds no NKey seed")
		}
		seed, err := kp.Seed()
		if err != nil {
			return nil, errors.New("natsbus: creds holds no NKey seed")
		}
		return nats.UserJWTAndSeed(jwt, string(seed)), nil
	}
	return nil, nil
}

// message builds the NATS message of m.
func (p *publisher) message(m *bus.Message) *nats.Msg {
	h := nats.Header(m.Headers())
	h.Set(jetstream.MsgIDHeader, m.ID)
	return &nats.Msg{Subject: p.cfg.SubjectOf(m.EventFields), Data: m.Body, Header: h}
}

// Publish implements bus.Publisher: with JetStream, every message is
// published at once and acknowledged by the stream (de-duplicated on
// Nats-Msg-Id, the event id); with core NATS, the messages are written
// and a flush waits until the server has read them.
func (p *publisher) Publish(ctx context.Context, msgs []bus.Message) error {
	if p.js == nil {
		return p.publishCore(ctx, msgs)
	}
	futures := make([]jetstream.PubAckFuture, 0, len(msgs))
	for i := range msgs {
		f, err := p.js.PublishMsgAsync(p.message(&msgs[i]), jetstream.WithMsgID(msgs[i].ID))
		if err != nil {
			return fmt.Errorf("natsbus: publish: %w (%s)", err, bus.Acknowledged(0, len(msgs)))
		}
		futures = append(futures, f)
	}
	for i, f := range futures {
		select {
		case <-f.Ok():
		case err := <-f.Err():
			return fmt.Errorf("natsbus: JetStream: %w (%s)", err, bus.Acknowledged(i, len(msgs)))
		case <-ctx.Done():
			return fmt.Errorf("natsbus: waiting for JetStream: %w (%s)", ctx.Err(), bus.Acknowledged(i, len(msgs)))
		}
	}
	return nil
}

func (p *publisher) publishCore(ctx context.Context, msgs []bus.Message) error {
	if !p.nc.IsConnected() {
		return fmt.Errorf("natsbus: not connected (%s)", p.nc.Status())
	}
	for i := range msgs {
		if err := p.nc.PublishMsg(p.message(&msgs[i])); err != nil {
			return fmt.Errorf("natsbus: publish: %w", err)
		}
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, flushTimeout)
		defer cancel()
	}
	if err := p.nc.FlushWithContext(ctx); err != nil {
		return fmt.Errorf("natsbus: flush: %w", err)
	}
	return nil
}

// Close implements bus.Publisher.
func (p *publisher) Close() { p.nc.Close() }
