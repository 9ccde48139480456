//go:build brokers

package dispatch

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/heraldstreams/herald/delivery"
	"github.com/heraldstreams/herald/internal/brokertest"
	"github.com/heraldstreams/herald/store"
)

// The whole engine publishing to a broker: events matched, stored as
// deliveries, claimed, published and acknowledged, their outcomes
// recorded. Run with
//
//	go test -run '^$' -bench 'BenchmarkBusDelivery' -benchtime 100000x ./delivery/dispatch/
//
// BenchmarkBusDeliveryThroughput appends events 100 to an append to a
// stream one broker endpoint sources from (batches of
// -bus-bench-batch events) and reports events/s from the first append to
// the last acknowledgement recorded. BenchmarkBusDeliveryLatency
// publishes one event at a time at -bus-bench-rate events/s and reports
// the p50 and p99 from just before Publish to the acknowledgement's
// outcome in the store.
var (
	busBenchRate  = flag.Int("bus-bench-rate", 5000, "events per second published by BenchmarkBusDeliveryLatency")
	busBenchBatch = flag.Int("bus-bench-batch", 100, "batch.max_events of the broker endpoint in the broker benchmarks")
)

// busBenchTargets starts each broker in process and gives the endpoint
// type and config that publishes to it: one JetStream subject of a
// file-backed stream, one Kafka topic of one partition.
var busBenchTargets = []struct {
	name   string
	typ    string
	config func(b *testing.B) string
}{
	{"nats-jetstream", delivery.DestinationNATS, func(b *testing.B) string {
		n := brokertest.StartNATS(b)
		n.Stream("EVENTS", 2*time.Minute, "herald.>")
		return `{"servers":["` + n.URL() + `"],"jetstream":true}`
	}},
	{"kafka", delivery.DestinationKafka, func(b *testing.B) string {
		k := brokertest.StartKafka(b, []string{"herald.bench.event"})
		return `{"brokers":["` + k.Addr() + `"]}`
	}},
}

func newBusBenchRig(b *testing.B, typ, config string) (*busRig, *store.Endpoint) {
	r := newBusRig(b, nil, func(c *EngineConfig) { c.Timeout = 10 * time.Second; c.GlobalMaxInFlight = 1000 })
	if _, err := r.st.StreamCreate(context.Background(), &store.StreamCreateParams{Path: "/bench", ContentType: "application/json", Now: time.Now()}); err != nil {
		b.Fatal(err)
	}
	ep := r.endpoint(typ, config, func(c *delivery.EndpointConfig) {
		c.Streams = []string{"/bench"}
		c.MaxInFlight = 100
		c.Batch = &delivery.BatchConfig{MaxEvents: *busBenchBatch, MaxWaitMS: 5}
	})
	return r, ep
}

// waitAcked waits until the engine counted want acknowledged deliveries.
func (r *busRig) waitAcked(b *testing.B, want int) {
	deadline := time.Now().Add(5 * time.Minute)
	for r.deliveredMetric() < float64(want) {
		if time.Now().After(deadline) {
			b.Fatalf("%v of %d events acknowledged after 5 minutes", r.deliveredMetric(), want)
		}
		time.Sleep(5 * time.Millisecond) // polling the engine's counter, the benchmark's clock
	}
}

func BenchmarkBusDeliveryThroughput(b *testing.B) {
	for _, tg := range busBenchTargets {
		b.Run(tg.name, func(b *testing.B) {
			r, _ := newBusBenchRig(b, tg.typ, tg.config(b))
			const perAppend = 100
			b.ResetTimer()
			start := time.Now()
			for i := 0; i < b.N; i += perAppend {
				var buf strings.Builder
				n := min(perAppend, b.N-i)
				for j := range n {
					fmt.Fprintf(&buf, `{"id":"ev-%d","type":"bench.event","data":{"i":%d,"pad":"%0200d"}}`+"\n", i+j, i+j, 0)
				}
				if _, err := r.st.StreamAppend(context.Background(), &store.StreamAppendParams{Path: "/bench", ContentType: "application/json",
					Data: []byte(buf.String()), Messages: n, Now: time.Now()}); err != nil {
					b.Fatal(err)
				}
			}
			r.waitAcked(b, b.N)
			elapsed := time.Since(start)
			b.StopTimer()
			b.ReportMetric(float64(b.N)/elapsed.Seconds(), "events/s")
		})
	}
}

func BenchmarkBusDeliveryLatency(b *testing.B) {
	for _, tg := range busBenchTargets {
		b.Run(tg.name, func(b *testing.B) {
			r, ep := newBusBenchRig(b, tg.typ, tg.config(b))
			interval := time.Second / time.Duration(*busBenchRate)
			sent := make([]time.Time, b.N)
			b.ResetTimer()
			next := time.Now()
			for i := range b.N {
				if d := time.Until(next); d > 0 {
					time.Sleep(d) // pacing the publisher, not waiting for an effect
				}
				next = next.Add(interval)
				sent[i] = time.Now()
				ev := &delivery.Event{ID: fmt.Sprintf("ev-%d", i), Type: "bench.event", Data: json.RawMessage(`{"i":1}`)}
				if _, err := r.e.Publish(context.Background(), &PublishParams{Event: ev, Stream: "/bench"}); err != nil {
					b.Fatal(err)
				}
			}
			r.waitAcked(b, b.N)
			b.StopTimer()
			ds, err := r.st.DeliveryList(context.Background(), &store.DeliveryListParams{EndpointID: ep.ID, Limit: b.N + 1})
			if err != nil {
				b.Fatal(err)
			}
			if len(ds) != b.N {
				b.Fatalf("%d deliveries, want %d", len(ds), b.N)
			}
			lat := make([]time.Duration, 0, len(ds))
			for _, d := range ds {
				var i int
				if _, err := fmt.Sscanf(d.EventID, "ev-%d", &i); err != nil || d.Status != store.DeliveryDelivered {
					b.Fatalf("delivery %s: %s (%v)", d.EventID, d.Status, err)
				}
				lat = append(lat, d.UpdatedAt.Sub(sent[i]))
			}
			slices.Sort(lat)
			pct := func(p float64) float64 { return float64(lat[int(p*float64(len(lat)-1))]) / float64(time.Millisecond) }
			b.ReportMetric(pct(0.50), "p50-ms")
			b.ReportMetric(pct(0.99), "p99-ms")
			b.ReportMetric(float64(*busBenchRate), "events/s-offered")
		})
	}
}
