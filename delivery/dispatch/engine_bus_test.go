//go:build brokers

package dispatch

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/heraldstreams/herald/bus"
	"github.com/heraldstreams/herald/bus/kafkabus"
	"github.com/heraldstreams/herald/bus/natsbus"
	"github.com/heraldstreams/herald/delivery"
	"github.com/heraldstreams/herald/delivery/internal/deliverytest"
	"github.com/heraldstreams/herald/internal/brokertest"
	"github.com/heraldstreams/herald/store"
	"github.com/heraldstreams/herald/store/sqlite"
	"github.com/heraldstreams/herald/webhook"
)

// busRig is an engine on a fresh store publishing to real brokers, with
// the real sender's address guard (loopback allowed) and real time.
type busRig struct {
	t    testing.TB
	st   *sqlite.Store
	e    *Engine
	pool *bus.Pool
	reg  *prometheus.Registry
}

func newBusRig(t testing.TB, st *sqlite.Store, tweak func(*EngineConfig)) *busRig {
	t.Helper()
	if st == nil {
		st = deliverytest.OpenStore(t)
	}
	sender := webhook.New(webhook.Config{AllowCIDRs: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}})
	t.Cleanup(sender.Close)
	pool, err := bus.NewPool(bus.PoolConfig{Guard: sender, Openers: map[string]bus.Opener{
		delivery.DestinationNATS: natsbus.Open, delivery.DestinationKafka: kafkabus.Open}})
	if err != nil {
		t.Fatal(err)
	}
	r := &busRig{t: t, st: st, pool: pool, reg: prometheus.NewRegistry()}
	cfg := EngineConfig{Store: st, Sender: sender, Destinations: pool, Registerer: r.reg, Logger: slog.New(slog.DiscardHandler),
		Lease: time.Minute, SweepInterval: 100 * time.Millisecond, Timeout: 2 * time.Second, BreakerThreshold: 1000,
		RetrySchedule: delivery.Schedule{0, 50 * time.Millisecond, 100 * time.Millisecond, 200 * time.Millisecond, 200 * time.Millisecond,
			200 * time.Millisecond, 200 * time.Millisecond, 200 * time.Millisecond, 200 * time.Millisecond, 200 * time.Millisecond}}
	if tweak != nil {
		tweak(&cfg)
	}
	r.e, err = NewEngine(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.e.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		r.e.Stop(context.Background())
		pool.Close()
	})
	return r
}

func (r *busRig) endpoint(typ, config string, tweak func(*delivery.EndpointConfig)) *store.Endpoint {
	r.t.Helper()
	c := delivery.EndpointConfig{Type: typ, Config: json.RawMessage(config)}
	if tweak != nil {
		tweak(&c)
	}
	ep, err := r.e.CreateEndpoint(context.Background(), &CreateEndpointParams{Config: c, Active: true})
	if err != nil {
		r.t.Fatalf("create endpoint: %v", err)
	}
	return ep
}

func (r *busRig) publish(typ, stream string, n int) {
	r.t.Helper()
	res, err := r.e.Publish(context.Background(), &PublishParams{Event: &delivery.Event{ID: fmt.Sprintf("evt-%s-%d", strings.Trim(stream, "/"), n),
		Type: typ, Timestamp: time.Now().UTC(), Data: json.RawMessage(fmt.Sprintf(`{"n":%d}`, n))}, Stream: stream})
	if err != nil || res == nil {
		r.t.Fatalf("publish: %v", err)
	}
}

// publishTwoStreams publishes events from to to-1 of order.paid to
// /orders/a and /orders/b, alternating.
func (r *busRig) publishTwoStreams(from, to int) {
	r.t.Helper()
	for i := from; i < to; i++ {
		r.publish("order.paid", "/orders/a", i)
		r.publish("order.paid", "/orders/b", i)
	}
}

// waitDelivered waits until every delivery of the endpoint is delivered
// and there are want of them.
func (r *busRig) waitDelivered(id string, want int) []store.Delivery {
	r.t.Helper()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(30 * time.Second)
	for {
		ds, err := r.st.DeliveryList(context.Background(), &store.DeliveryListParams{EndpointID: id, Limit: 10000})
		if err != nil {
			r.t.Fatal(err)
		}
		done := len(ds) == want
		for _, d := range ds {
			done = done && d.Status == store.DeliveryDelivered
		}
		if done {
			return ds
		}
		select {
		case <-tick.C:
		case <-deadline:
			var st []string
			for _, d := range ds {
				st = append(st, fmt.Sprintf("%s %d %s %s", d.Status, d.Attempts, d.NextAttemptAt.Format("15:04:05.000"), d.LastError))
			}
			r.t.Fatalf("%d deliveries, want %d delivered: %v", len(ds), want, st)
		}
	}
}

// streamMsgs reads a JetStream stream's messages.
func streamMsgs(t *testing.T, s jetstream.Stream) []*nats.Msg {
	var out []*nats.Msg
	for _, m := range brokertest.StreamMessages(t, s) {
		out = append(out, &nats.Msg{Subject: m.Subject, Header: m.Header, Data: m.Data})
	}
	return out
}

// natsIDsByStream are the event ids of the messages, per Herald stream.
func natsIDsByStream(msgs []*nats.Msg) map[string][]string {
	out := map[string][]string{}
	for _, m := range msgs {
		out[m.Header.Get(bus.HeaderStream)] = append(out[m.Header.Get(bus.HeaderStream)], m.Header.Get(bus.HeaderEventID))
	}
	return out
}

func wantInOrder(stream string, n int) []string {
	var ids []string
	for i := range n {
		ids = append(ids, fmt.Sprintf("evt-%s-%d", strings.Trim(stream, "/"), i))
	}
	return ids
}

// TestNATSEndpointDeliversInStreamOrderAcrossAnOutage: a JetStream
// endpoint ordered per stream gets every event of two streams once, in
// each stream's order, although the server is down for part of the run
// (failed attempts are retried on the schedule); attempts are logged
// and counted as for a webhook.
func TestNATSEndpointDeliversInStreamOrderAcrossAnOutage(t *testing.T) {
	t.Parallel()
	n := brokertest.StartNATS(t)
	stream := n.Stream("EVENTS", time.Minute, "herald.>")
	r := newBusRig(t, nil, nil)
	ep := r.endpoint(delivery.DestinationNATS, `{"servers":["`+n.URL()+`"],"jetstream":true}`, func(c *delivery.EndpointConfig) {
		c.Ordering = delivery.OrderingStream
	})
	r.publishTwoStreams(0, 10)
	r.waitDelivered(ep.ID, 20)
	n.Stop()
	r.publishTwoStreams(10, 20)
	n.Restart()
	ds := r.waitDelivered(ep.ID, 40)
	retried := 0
	for _, d := range ds {
		if d.Attempts > 1 {
			retried++
		}
	}
	msgs := streamMsgs(t, stream)
	got := natsIDsByStream(msgs)
	for _, s := range []string{"/orders/a", "/orders/b"} {
		if fmt.Sprint(got[s]) != fmt.Sprint(wantInOrder(s, 20)) {
			t.Fatalf("%s: JetStream holds %v, want %v", s, got[s], wantInOrder(s, 20))
		}
	}
	if m := msgs[0]; m.Subject != "herald.order.paid" || !strings.Contains(string(m.Data), `"type":"order.paid"`) || m.Header.Get("Webhook-Signature") == "" {
		t.Fatalf("message = %s %s %v", m.Subject, m.Data, m.Header)
	}
	if got := r.deliveredMetric(); got != 40 {
		t.Fatalf("delivered attempts counted %v, want 40", got)
	}
	if retried == 0 {
		t.Log("the outage was over before any attempt failed")
	}
}

func (r *busRig) deliveredMetric() float64 {
	return deliverytest.Metric(r.t, r.reg, "herald_delivery_attempts_total", "outcome", "delivered")
}

// TestKafkaEndpointBatchesInOrderAcrossAnOutage: a Kafka endpoint with a
// batch and ordering per stream keys each record by its stream, keeps
// each stream's order in its partition, and loses nothing while the
// broker refuses connections for a while.
func TestKafkaEndpointBatchesInOrderAcrossAnOutage(t *testing.T) {
	t.Parallel()
	k := brokertest.StartKafka(t, []string{"herald.order.paid"})
	r := newBusRig(t, nil, nil)
	ep := r.endpoint(delivery.DestinationKafka, `{"brokers":["`+k.Addr()+`"]}`, func(c *delivery.EndpointConfig) {
		c.Ordering = delivery.OrderingStream
		c.Batch = &delivery.BatchConfig{MaxEvents: 10, MaxWaitMS: 5}
	})
	r.publishTwoStreams(0, 10)
	r.waitDelivered(ep.ID, 20)
	k.Down()
	r.publishTwoStreams(10, 20)
	k.Up()
	r.waitDelivered(ep.ID, 40)
	got := map[string][]string{}
	for _, rec := range k.Records("herald.order.paid") {
		var id, stream string
		for _, h := range rec.Headers {
			switch h.Key {
			case bus.HeaderEventID:
				id = string(h.Value)
			case bus.HeaderStream:
				stream = string(h.Value)
			}
		}
		if string(rec.Key) != stream {
			t.Fatalf("record key %q of stream %q", rec.Key, stream)
		}
		// A batch retried after a failure may be stored twice (at least
		// once); the first copy of each is in order.
		if ids := got[stream]; len(ids) == 0 || ids[len(ids)-1] != id {
			if !slices.Contains(ids, id) {
				got[stream] = append(ids, id)
			}
		}
	}
	for _, s := range []string{"/orders/a", "/orders/b"} {
		if fmt.Sprint(got[s]) != fmt.Sprint(wantInOrder(s, 20)) {
			t.Fatalf("%s: Kafka holds %v, want %v", s, got[s], wantInOrder(s, 20))
		}
	}
}

// TestBrokerEndpointFailuresDeadLetterAndTripTheBreaker: a destination
// that never acknowledges (JetStream with no stream for the subject)
// exhausts its deliveries into dead letters, and the breaker disables
// the endpoint, as for a webhook; once the stream exists, the endpoint
// re-enabled and its dead letters replayed, they are delivered.
func TestBrokerEndpointFailuresDeadLetterAndTripTheBreaker(t *testing.T) {
	t.Parallel()
	n := brokertest.StartNATS(t)
	r := newBusRig(t, nil, func(c *EngineConfig) {
		c.RetrySchedule = delivery.Schedule{0, 10 * time.Millisecond}
		c.BreakerThreshold = 4
	})
	ep := r.endpoint(delivery.DestinationNATS, `{"servers":["`+n.URL()+`"],"jetstream":true,"subject":"nowhere.{type}"}`, nil)
	r.publish("a.b", "/s", 0)
	r.publish("a.b", "/s", 1)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(20 * time.Second)
	for {
		cur, err := r.st.EndpointGet(context.Background(), ep.ID)
		if err != nil {
			t.Fatal(err)
		}
		ds, err := r.st.DeliveryList(context.Background(), &store.DeliveryListParams{EndpointID: ep.ID})
		if err != nil {
			t.Fatal(err)
		}
		exhausted := 0
		for _, d := range ds {
			if d.Status == store.DeliveryExhausted {
				exhausted++
			}
		}
		if exhausted == 2 && cur.Status() == store.EndpointDisabled {
			if !strings.Contains(ds[0].LastError, "nats") {
				t.Fatalf("last error %q", ds[0].LastError)
			}
			break
		}
		select {
		case <-tick.C:
		case <-deadline:
			t.Fatalf("endpoint %s, deliveries %+v", cur.Status(), ds)
		}
	}
	// The stream made, the endpoint re-enabled and its dead letters
	// replayed: both events reach JetStream.
	stream := n.Stream("NOWHERE", time.Minute, "nowhere.>")
	cur, err := r.st.EndpointGet(context.Background(), ep.ID)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.e.UpdateEndpoint(context.Background(), &UpdateEndpointParams{ID: ep.ID, Config: ConfigOf(cur), Active: true, Reenable: true,
		ExpectVersion: cur.Version}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.e.Replay(context.Background(), &ReplayParams{EndpointID: ep.ID, Status: store.DeliveryExhausted}); err != nil {
		t.Fatal(err)
	}
	r.waitDelivered(ep.ID, 2)
	got := natsIDsByStream(streamMsgs(t, stream))["/s"]
	slices.Sort(got) // ordering "none": in either order
	if fmt.Sprint(got) != "[evt-s-0 evt-s-1]" {
		t.Fatalf("JetStream holds %v after the replay", got)
	}
}

// TestCrashMidBatchRedeliversOnceToJetStream: an engine stopped with its
// publishes in flight (its context cancelled at once, as a crash) leaves
// the deliveries leased; a new engine on the same store sends them again
// when the leases end, and JetStream keeps one message per event (it
// de-duplicates the re-sent ones on Nats-Msg-Id).
func TestCrashMidBatchRedeliversOnceToJetStream(t *testing.T) {
	t.Parallel()
	n := brokertest.StartNATS(t)
	stream := n.Stream("EVENTS", time.Hour, "herald.>")
	st := deliverytest.OpenStore(t)
	first := newBusRig(t, st, func(c *EngineConfig) { c.Lease = 300 * time.Millisecond })
	ep := first.endpoint(delivery.DestinationNATS, `{"servers":["`+n.URL()+`"],"jetstream":true}`, func(c *delivery.EndpointConfig) {
		c.Batch = &delivery.BatchConfig{MaxEvents: 50, MaxWaitMS: 20}
	})
	for i := range 200 {
		first.publish("order.paid", "/orders/a", i)
	}
	// The crash: stop now, cancelling what is in flight.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	first.e.Stop(ctx)
	second := newBusRig(t, st, func(c *EngineConfig) { c.Lease = 300 * time.Millisecond })
	second.waitDelivered(ep.ID, 200)
	ids := natsIDsByStream(streamMsgs(t, stream))["/orders/a"]
	seen := map[string]bool{}
	for _, id := range ids {
		if seen[id] {
			t.Fatalf("JetStream holds %s twice", id)
		}
		seen[id] = true
	}
	if len(seen) != 200 {
		t.Fatalf("JetStream holds %d events, want 200", len(seen))
	}
}
