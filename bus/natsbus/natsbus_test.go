//go:build brokers

package natsbus

import (
	"context"
	"errors"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/heraldstreams/herald/bus"
	"github.com/heraldstreams/herald/delivery"
	"github.com/heraldstreams/herald/internal/brokertest"
	"github.com/heraldstreams/herald/webhook"
)

func open(t *testing.T, config string) bus.Publisher {
	return brokertest.Publisher(t, Open, delivery.DestinationNATS, config)
}

var msg = brokertest.Message

func withTimeout(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestJetStreamPublishIsAcknowledgedAndDeduplicated(t *testing.T) {
	t.Parallel()
	n := brokertest.StartNATS(t)
	stream := n.Stream("EVENTS", time.Minute, "herald.>")
	p := open(t, `{"servers":["`+n.URL()+`"],"subject":"herald.{tenant}.{type}","jetstream":true}`)
	ctx := withTimeout(t)
	batch := []bus.Message{msg("e1", "order.paid", "/orders/eu"), msg("e2", "order.shipped", "/orders/eu")}
	if err := p.Publish(ctx, batch); err != nil {
		t.Fatal(err)
	}
	// The same events again (a retry after a lost acknowledgement): the
	// stream keeps one of each.
	if err := p.Publish(ctx, batch); err != nil {
		t.Fatal(err)
	}
	got := brokertest.StreamMessages(t, stream)
	if len(got) != 2 {
		t.Fatalf("stream holds %d messages, want 2 (de-duplicated)", len(got))
	}
	m := got[0]
	if m.Subject != "herald.acme.order.paid" || string(m.Data) != `{"id":"e1"}` || m.Header.Get("Nats-Msg-Id") != "e1" ||
		m.Header.Get(bus.HeaderEventType) != "order.paid" || m.Header.Get(bus.HeaderTenant) != "acme" ||
		m.Header.Get(bus.HeaderStream) != "/orders/eu" || m.Header.Get(bus.HeaderTimestamp) != "2026-01-02T03:04:05Z" {
		t.Fatalf("message = %s %s %v", m.Subject, m.Data, m.Header)
	}
	if got[1].Header.Get(bus.HeaderEventID) != "e2" {
		t.Fatalf("second message = %v", got[1].Header)
	}
}

func TestJetStreamWithoutAStreamFails(t *testing.T) {
	t.Parallel()
	n := brokertest.StartNATS(t)
	p := open(t, `{"servers":["`+n.URL()+`"],"jetstream":true}`)
	if err := p.Publish(withTimeout(t), []bus.Message{msg("e1", "a.b", "/s")}); err == nil {
		t.Fatal("a JetStream publish no stream stores was acknowledged")
	}
}

func TestCorePublishReachesSubscribers(t *testing.T) {
	t.Parallel()
	n := brokertest.StartNATS(t)
	nc := n.Conn()
	sub, err := nc.SubscribeSync("herald.>")
	if err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	p := open(t, `{"servers":["`+n.URL()+`"],"subject":"herald.{stream}.{type}"}`)
	if err := p.Publish(withTimeout(t), []bus.Message{msg("e1", "order.paid", "/orders/eu")}); err != nil {
		t.Fatal(err)
	}
	m, err := sub.NextMsg(5 * time.Second)
	if err != nil || m.Subject != "herald.orders.eu.order.paid" || m.Header.Get("Nats-Msg-Id") != "e1" {
		t.Fatalf("received %v, %v", m, err)
	}
}

// TestCredentials: each way to authenticate is accepted by a server that
// requires it, and a wrong one fails.
func TestCredentials(t *testing.T) {
	t.Parallel()
	n := brokertest.StartNATS(t, func(o *server.Options) { o.Username, o.Password = "herald", "s3cret" })
	sub, err := nats.Connect(n.URL(), nats.UserInfo("herald", "s3cret"))
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	s, err := sub.SubscribeSync("herald.>")
	if err != nil || sub.Flush() != nil {
		t.Fatal(err)
	}
	ok := open(t, `{"servers":["`+n.URL()+`"],"user":"herald","password":"s3cret"}`)
	if err := ok.Publish(withTimeout(t), []bus.Message{msg("e1", "a.b", "/s")}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.NextMsg(5 * time.Second); err != nil {
		t.Fatal(err)
	}
	bad := open(t, `{"servers":["`+n.URL()+`"],"user":"herald","password":"wrong"}`)
	ctx, cancel := context.WithTimeout(t.Context(), time.Second)
	defer cancel()
	if err := bad.Publish(ctx, []bus.Message{msg("e2", "a.b", "/s")}); err == nil {
		t.Fatal("a publish with a wrong password succeeded")
	}
	tok := brokertest.StartNATS(t, func(o *server.Options) { o.Authorization = "t0ken" })
	if err := open(t, `{"servers":["`+tok.URL()+`"],"token":"t0ken"}`).Publish(withTimeout(t), []bus.Message{msg("e3", "a.b", "/s")}); err != nil {
		t.Fatalf("token: %v", err)
	}
}

// TestServerDownThenBack: a publish while the server is down fails (the
// delivery is retried), and once it is back the same publisher succeeds,
// the messages in order.
func TestServerDownThenBack(t *testing.T) {
	t.Parallel()
	n := brokertest.StartNATS(t)
	stream := n.Stream("EVENTS", time.Minute, "herald.>")
	p := open(t, `{"servers":["`+n.URL()+`"],"jetstream":true}`)
	if err := p.Publish(withTimeout(t), []bus.Message{msg("e1", "a.b", "/s")}); err != nil {
		t.Fatal(err)
	}
	n.Stop()
	ctx, cancel := context.WithTimeout(t.Context(), 500*time.Millisecond)
	err := p.Publish(ctx, []bus.Message{msg("e2", "a.b", "/s")})
	cancel()
	if err == nil {
		t.Fatal("a publish to a stopped server succeeded")
	}
	n.Restart()
	// The client reconnects by itself; a retry succeeds once it has.
	deadline := time.Now().Add(15 * time.Second)
	for {
		err := p.Publish(withTimeout(t), []bus.Message{msg("e2", "a.b", "/s"), msg("e3", "a.b", "/s")})
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no publish succeeded after the restart: %v", err)
		}
		waitReconnect(t, p)
	}
	var ids []string
	for _, m := range brokertest.StreamMessages(t, stream) {
		ids = append(ids, m.Header.Get(bus.HeaderEventID))
	}
	if fmt.Sprint(ids) != "[e1 e2 e3]" {
		t.Fatalf("stream = %v, want [e1 e2 e3]", ids)
	}
}

// waitReconnect waits until the publisher's connection is up again.
func waitReconnect(t *testing.T, p bus.Publisher) {
	t.Helper()
	nc := p.(*publisher).nc
	ch := make(chan struct{}, 1)
	nc.SetReconnectHandler(func(*nats.Conn) {
		select {
		case ch <- struct{}{}:
		default:
		}
	})
	if nc.IsConnected() {
		return
	}
	select {
	case <-ch:
	case <-time.After(10 * time.Second):
		t.Fatal("the publisher did not reconnect")
	}
}

// TestDialRefusedByThePolicy: without loopback allowed, the guarded
// dialer refuses the server, and no publish succeeds.
func TestDialRefusedByThePolicy(t *testing.T) {
	t.Parallel()
	n := brokertest.StartNATS(t)
	d, err := delivery.ParseDestination(delivery.DestinationNATS, []byte(`{"servers":["`+n.URL()+`"]}`))
	if err != nil {
		t.Fatal(err)
	}
	s := webhook.New(webhook.Config{})
	defer s.Close()
	refusals := make(chan error, 100)
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := s.BrokerDialer(false)(ctx, network, addr)
		if err != nil {
			select {
			case refusals <- err:
			default:
			}
		}
		return c, err
	}
	p, err := Open(d, dial)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 500*time.Millisecond)
	defer cancel()
	if err := p.Publish(ctx, []bus.Message{msg("e1", "a.b", "/s")}); err == nil {
		t.Fatal("a publish through a refused dial succeeded")
	}
	if refused := <-refusals; !errors.Is(refused, webhook.ErrURLRefused) {
		t.Fatalf("dial error = %v, want a refusal", refused)
	}
}
