//go:build brokers

package dispatch

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"slices"
	"strings"
	"sync"
	"syscall"
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
	busBenchRate       = flag.Int("bus-bench-rate", 5000, "events per second published by BenchmarkBusDeliveryLatency")
	busBenchBatch      = flag.Int("bus-bench-batch", 100, "batch.max_events of the broker endpoint in the broker benchmarks (1: no batch, each event published on its own)")
	busBenchAppenders  = flag.Int("bus-bench-appenders", 8, "concurrent appenders of BenchmarkBusDeliveryThroughput")
	busBenchPublishers = flag.Int("bus-bench-publishers", 50, "concurrent publishers sharing -bus-bench-rate in BenchmarkBusDeliveryLatency")
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
		if *busBenchBatch > 1 {
			c.Batch = &delivery.BatchConfig{MaxEvents: *busBenchBatch, MaxWaitMS: 5}
		}
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
		time.Sleep(25 * time.Millisecond) // polling the engine's counter (a gather also reads the store), the benchmark's clock
	}
}

func BenchmarkBusDeliveryThroughput(b *testing.B) {
	for _, tg := range busBenchTargets {
		b.Run(tg.name, func(b *testing.B) {
			r, _ := newBusBenchRig(b, tg.typ, tg.config(b))
			// Several publishers append at once, as a platform's do: each
			// append waits for its commit, which a lone publisher would
			// pay for alone.
			const perAppend = 100
			appends := (b.N + perAppend - 1) / perAppend
			b.ResetTimer()
			start, cpu0 := time.Now(), processCPU(b)
			inParallel(b, *busBenchAppenders, func(w int) error {
				for a := w; a < appends; a += *busBenchAppenders {
					var buf strings.Builder
					i := a * perAppend
					n := min(perAppend, b.N-i)
					for j := range n {
						fmt.Fprintf(&buf, `{"id":"ev-%d","type":"bench.event","data":{"i":%d,"pad":"%0200d"}}`+"\n", i+j, i+j, 0)
					}
					if _, err := r.st.StreamAppend(context.Background(), &store.StreamAppendParams{Path: "/bench", ContentType: "application/json",
						Data: []byte(buf.String()), Messages: n, Now: time.Now()}); err != nil {
						return err
					}
				}
				return nil
			})
			appended := time.Since(start)
			r.waitAcked(b, b.N)
			elapsed := time.Since(start)
			b.ReportMetric(appended.Seconds()/elapsed.Seconds(), "appended-at")
			b.StopTimer()
			b.ReportMetric(float64(b.N)/elapsed.Seconds(), "events/s")
			b.ReportMetric(float64((processCPU(b)-cpu0).Microseconds())/float64(b.N), "cpu-µs/event")
		})
	}
}

func BenchmarkBusDeliveryLatency(b *testing.B) {
	for _, tg := range busBenchTargets {
		b.Run(tg.name, func(b *testing.B) {
			r, ep := newBusBenchRig(b, tg.typ, tg.config(b))
			// Each publish waits for its commit, so one publisher alone
			// would be paced by the sync; -bus-bench-publishers share the
			// rate, each one event every publishers/rate.
			p := *busBenchPublishers
			interval := time.Second * time.Duration(p) / time.Duration(*busBenchRate)
			sent := make([]time.Time, b.N)
			b.ResetTimer()
			start := time.Now()
			inParallel(b, p, func(w int) error {
				next := start.Add(interval * time.Duration(w) / time.Duration(p))
				for i := w; i < b.N; i += p {
					if d := time.Until(next); d > 0 {
						time.Sleep(d) // pacing the publisher, not waiting for an effect
					}
					next = next.Add(interval)
					sent[i] = time.Now()
					ev := &delivery.Event{ID: fmt.Sprintf("ev-%d", i), Type: "bench.event", Data: json.RawMessage(`{"i":1}`)}
					if _, err := r.e.Publish(context.Background(), &PublishParams{Event: ev, Stream: "/bench"}); err != nil {
						return err
					}
				}
				return nil
			})
			offered := float64(b.N) / time.Since(start).Seconds()
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
			b.ReportMetric(offered, "events/s-published")
		})
	}
}

// processCPU is the CPU time the test process used so far (Herald's
// engine and store, the broker in process and the benchmark itself): on
// a busy machine, CPU an event compares where events/s cannot.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// inParallel runs fn(0) to fn(n-1) at once and fails the benchmark with
// the first error once all returned.
func inParallel(b *testing.B, n int, fn func(w int) error) {
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for w := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := fn(w); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		b.Fatal(err)
	}
}
