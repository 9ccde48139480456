// Package kafkabus produces events to Kafka with the franz-go client: an
// idempotent producer with acks=all, batching records per partition,
// dialing through the address guard.
package kafkabus

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/heraldstreams/herald/bus"
	"github.com/heraldstreams/herald/delivery"
)

// Producer settings.
const (
	// linger is how long a partition's batch waits for more records: a
	// few milliseconds of latency buy batches under load.
	linger = 2 * time.Millisecond
	// deliveryTimeout bounds how long a record is retried inside the
	// client (a broker down) when the caller's context has no deadline.
	deliveryTimeout = 30 * time.Second
	dialTimeout     = 10 * time.Second
)

// publisher produces to one Kafka destination.
type publisher struct {
	cfg *delivery.KafkaConfig
	cl  *kgo.Client
}

// Open makes the producer of a Kafka destination (a bus.Opener). It
// connects lazily, at the first record.
func Open(d *delivery.Destination, dial bus.DialFunc) (bus.Publisher, error) {
	c := d.Kafka
	if c == nil {
		return nil, errors.New("kafkabus: not a Kafka destination")
	}
	dialFn := func(ctx context.Context, network, host string) (net.Conn, error) { return dial(ctx, network, host) }
	if d.TLS() {
		tc, err := bus.TLSConfig(c.TLS)
		if err != nil {
			return nil, err
		}
		dialFn = tlsDial(dial, tc)
	}
	opts := []kgo.Opt{
		kgo.SeedBrokers(c.Brokers...),
		kgo.ClientID("herald"),
		kgo.Dialer(dialFn),
		kgo.DialTimeout(dialTimeout),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.ProducerLinger(linger),
		kgo.RecordDeliveryTimeout(deliveryTimeout),
		// The attempt's timeout ends its records; a retry sends them
		// again (deliveries are at least once).
		kgo.AllowIdempotentProduceCancellation(),
	}
	if m := mechanism(c.SASL); m != nil {
		opts = append(opts, kgo.SASL(m))
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, fmt.Errorf("kafkabus: %w", err)
	}
	return &publisher{cfg: c, cl: cl}, nil
}

// tlsDial wraps the guarded dial in a TLS handshake, checking the
// broker's name (or the config's server name).
func tlsDial(dial bus.DialFunc, tc *tls.Config) func(ctx context.Context, network, host string) (net.Conn, error) {
	return func(ctx context.Context, network, host string) (net.Conn, error) {
		raw, err := dial(ctx, network, host)
		if err != nil {
			return nil, err
		}
		c := tc.Clone()
		if c.ServerName == "" {
			if h, _, err := net.SplitHostPort(host); err == nil {
				c.ServerName = h
			}
		}
		conn := tls.Client(raw, c)
		if err := conn.HandshakeContext(ctx); err != nil {
			_ = raw.Close()
			return nil, err
		}
		return conn, nil
	}
}

// mechanism is the SASL mechanism of the destination, nil for none.
func mechanism(s *delivery.KafkaSASL) sasl.Mechanism {
	if s == nil {
		return nil
	}
	switch s.Mechanism {
	case delivery.SASLScramSHA256:
		return scram.Auth{User: s.Username, Pass: s.Password}.AsSha256Mechanism()
	case delivery.SASLScramSHA512:
		return scram.Auth{User: s.Username, Pass: s.Password}.AsSha512Mechanism()
	}
	return plain.Auth{User: s.Username, Pass: s.Password}.AsMechanism()
}

// record builds the Kafka record of m.
func (p *publisher) record(m *bus.Message) *kgo.Record {
	h := m.Headers()
	headers := make([]kgo.RecordHeader, 0, len(h))
	for k, vs := range h {
		for _, v := range vs {
			headers = append(headers, kgo.RecordHeader{Key: k, Value: []byte(v)})
		}
	}
	// The record's timestamp is left to the client (the time it is
	// produced), which times the record's delivery from it: the event's
	// own time is in its header.
	return &kgo.Record{Topic: p.cfg.TopicOf(m.EventFields), Key: p.cfg.KeyOf(m.EventFields), Value: m.Body, Headers: headers}
}

// Publish implements bus.Publisher: the records go out in the client's
// batches, and Publish returns once every partition leader acknowledged
// them with all in-sync replicas.
func (p *publisher) Publish(ctx context.Context, msgs []bus.Message) error {
	recs := make([]*kgo.Record, len(msgs))
	for i := range msgs {
		recs[i] = p.record(&msgs[i])
	}
	res := p.cl.ProduceSync(ctx, recs...)
	acked := 0
	var first error
	for _, r := range res {
		if r.Err == nil {
			acked++
		} else if first == nil {
			first = r.Err
		}
	}
	if first != nil {
		return fmt.Errorf("kafkabus: produce: %w (%s)", first, bus.Acknowledged(acked, len(msgs)))
	}
	return nil
}

// Close implements bus.Publisher.
func (p *publisher) Close() { p.cl.Close() }
