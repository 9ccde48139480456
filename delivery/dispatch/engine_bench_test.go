package dispatch

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/heraldstreams/herald/delivery"
	"github.com/heraldstreams/herald/store"
	"github.com/heraldstreams/herald/store/sqlite"
	"github.com/heraldstreams/herald/webhook"
)

// Issue item 11. Run with
//
//	go test -run '^$' -bench BenchmarkDelivery -benchtime 20000x ./delivery/
//
// BenchmarkDeliveryThroughput: one publisher appends events (100 per
// append) to a stream that 10 endpoints source from; each endpoint is
// served by one local HTTP receiver. It reports deliveries/s from the
// first append to the last delivery. BenchmarkDeliveryLatency publishes one
// event at a time at -delivery-bench-rate events/s (10 deliveries each)
// and reports the p50 and p99 of publish-to-receive time.
var benchRate = flag.Int("delivery-bench-rate", 500, "events per second published by BenchmarkDeliveryLatency (each goes to 10 endpoints)")

var benchProfile = flag.String("delivery-bench-profile", "", "wire profile of the benchmark's endpoints (default: the installation's, standard-webhooks)")

const benchEndpoints = 10

type benchRig struct {
	st       *sqlite.Store
	e        *Engine
	received atomic.Int64
	done     chan struct{}
	want     int64
	mu       sync.Mutex
	lat      []time.Duration
}

func newBenchRig(b *testing.B, want int64, measure bool) *benchRig {
	b.Helper()
	st, err := sqlite.Open(context.Background(), sqlite.Config{Dir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	r := &benchRig{st: st, done: make(chan struct{}), want: want}
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, err := io.ReadAll(req.Body)
		if err != nil {
			http.Error(w, "read", http.StatusBadRequest)
			return
		}
		if measure {
			// The event's data is "data" in the default envelope and
			// "payload" in the x-ruche-v1 one.
			var ev struct {
				Data    struct{ Sent int64 } `json:"data"`
				Payload struct{ Sent int64 } `json:"payload"`
			}
			if err := json.Unmarshal(body, &ev); err == nil {
				d := time.Since(time.Unix(0, max(ev.Data.Sent, ev.Payload.Sent)))
				r.mu.Lock()
				r.lat = append(r.lat, d)
				r.mu.Unlock()
			}
		}
		w.WriteHeader(http.StatusNoContent)
		if r.received.Add(1) == r.want {
			close(r.done)
		}
	}))
	sender := webhook.New(webhook.Config{AllowCIDRs: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}, MaxConcurrent: 1000, MaxPerHost: 1000})
	r.e, err = NewEngine(EngineConfig{Store: st, Sender: sender, Logger: slog.New(slog.DiscardHandler), GlobalMaxInFlight: 1000})
	if err != nil {
		b.Fatal(err)
	}
	if err := r.e.Start(context.Background()); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		r.e.Stop(context.Background())
		hook.Close()
		sender.Close()
		if err := st.Close(); err != nil {
			b.Error(err)
		}
	})
	if _, err := st.StreamCreate(context.Background(), &store.StreamCreateParams{Path: "/bench", ContentType: "application/json", Now: time.Now()}); err != nil {
		b.Fatal(err)
	}
	for range benchEndpoints {
		if _, err := r.e.CreateEndpoint(context.Background(), &CreateEndpointParams{Active: true, Config: delivery.EndpointConfig{URL: hook.URL + "/hook", Streams: []string{"/bench"}, MaxInFlight: 100, Profile: *benchProfile}}); err != nil {
			b.Fatal(err)
		}
	}
	return r
}

func (r *benchRig) wait(b *testing.B) {
	select {
	case <-r.done:
	case <-time.After(5 * time.Minute):
		b.Fatalf("%d of %d deliveries after 5 minutes", r.received.Load(), r.want)
	}
}

func BenchmarkDeliveryThroughput(b *testing.B) {
	r := newBenchRig(b, int64(b.N)*benchEndpoints, false)
	const perAppend = 100
	b.ResetTimer()
	start := time.Now()
	for i := 0; i < b.N; i += perAppend {
		var buf strings.Builder
		n := min(perAppend, b.N-i)
		for j := range n {
			fmt.Fprintf(&buf, `{"id":"ev-%d","type":"bench.event","data":{"i":%d}}`+"\n", i+j, i+j)
		}
		if _, err := r.st.StreamAppend(context.Background(), &store.StreamAppendParams{Path: "/bench", ContentType: "application/json",
			Data: []byte(buf.String()), Messages: n, Now: time.Now()}); err != nil {
			b.Fatal(err)
		}
	}
	r.wait(b)
	elapsed := time.Since(start)
	b.StopTimer()
	b.ReportMetric(float64(b.N*benchEndpoints)/elapsed.Seconds(), "deliveries/s")
}

func BenchmarkDeliveryLatency(b *testing.B) {
	r := newBenchRig(b, int64(b.N)*benchEndpoints, true)
	interval := time.Second / time.Duration(*benchRate)
	b.ResetTimer()
	next := time.Now()
	for i := range b.N {
		if d := time.Until(next); d > 0 {
			time.Sleep(d) // pacing the publisher, not waiting for an effect
		}
		next = next.Add(interval)
		ev := &delivery.Event{ID: fmt.Sprintf("ev-%d", i), Type: "bench.event", Data: json.RawMessage(fmt.Sprintf(`{"sent":%d}`, time.Now().UnixNano()))}
		if _, err := r.e.Publish(context.Background(), &PublishParams{Event: ev, Stream: "/bench"}); err != nil {
			b.Fatal(err)
		}
	}
	r.wait(b)
	b.StopTimer()
	r.mu.Lock()
	defer r.mu.Unlock()
	slices.Sort(r.lat)
	pct := func(p float64) float64 {
		return float64(r.lat[int(p*float64(len(r.lat)-1))]) / float64(time.Millisecond)
	}
	b.ReportMetric(pct(0.50), "p50-ms")
	b.ReportMetric(pct(0.99), "p99-ms")
	b.ReportMetric(float64(*benchRate*benchEndpoints), "deliveries/s-offered")
}
