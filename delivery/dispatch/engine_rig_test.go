package dispatch

import (
	"context"
	"encoding/json"
	"log/slog"
	"testing"
	"time"

	"github.com/heraldstreams/herald/delivery"
	"github.com/heraldstreams/herald/delivery/internal/deliverytest"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/heraldstreams/herald/store"
	"github.com/heraldstreams/herald/store/sqlite"
)

// rig is an engine on a fresh store with an in-process receiver.
type rig struct {
	t   *testing.T
	st  *sqlite.Store
	e   *Engine
	rc  *deliverytest.Receiver
	reg *prometheus.Registry
}

// newRig starts an engine; call inside a synctest bubble. tweak adjusts
// the configuration.
func newRig(t *testing.T, tweak func(*EngineConfig)) *rig {
	t.Helper()
	st := deliverytest.OpenStore(t)
	rc := &deliverytest.Receiver{}
	r := &rig{t: t, st: st, rc: rc, reg: prometheus.NewRegistry()}
	cfg := EngineConfig{
		Store:      st,
		Sender:     deliverytest.NewSender(rc),
		Registerer: r.reg,
		Logger:     slog.New(slog.DiscardHandler),
		Lease:      time.Minute,
		// Long enough that the ladder's hours of fake time do not run
		// thousands of sweeps; tests that need one call it.
		SweepInterval: time.Hour,
		PruneInterval: 24 * time.Hour,
	}
	if tweak != nil {
		tweak(&cfg)
	}
	var err error
	r.e, err = NewEngine(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.e.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		r.e.Stop(context.Background())
	})
	return r
}

func (r *rig) endpoint(p *CreateEndpointParams) *store.Endpoint {
	r.t.Helper()
	if p.Config.URL == "" {
		p.Config.URL = deliverytest.HookURL
	}
	ep, err := r.e.CreateEndpoint(context.Background(), p)
	if err != nil {
		r.t.Fatalf("create endpoint: %v", err)
	}
	return ep
}

func (r *rig) publish(typ, stream string, data string) *PublishResult {
	r.t.Helper()
	res, err := r.e.Publish(context.Background(), &PublishParams{Event: &delivery.Event{Type: typ, Timestamp: time.Now().UTC(), Data: json.RawMessage(data)}, Stream: stream})
	if err != nil {
		r.t.Fatalf("publish: %v", err)
	}
	return res
}

// metric returns the value of a counter or gauge of the rig's registry
// (see deliverytest.Metric).
func (r *rig) metric(name string, labels ...string) float64 {
	r.t.Helper()
	return deliverytest.Metric(r.t, r.reg, name, labels...)
}

func (r *rig) deliveries(endpointID string) []store.Delivery {
	r.t.Helper()
	ds, err := r.st.DeliveryList(context.Background(), &store.DeliveryListParams{EndpointID: endpointID})
	if err != nil {
		r.t.Fatal(err)
	}
	return ds
}
