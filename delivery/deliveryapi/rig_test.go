package deliveryapi

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/heraldstreams/herald/auth"
	"github.com/heraldstreams/herald/delivery"
	"github.com/heraldstreams/herald/delivery/dispatch"
	"github.com/heraldstreams/herald/delivery/internal/deliverytest"
	"github.com/heraldstreams/herald/internal/routetest"
	"github.com/heraldstreams/herald/internal/testhttp"
	"github.com/heraldstreams/herald/store"
	"github.com/heraldstreams/herald/store/sqlite"
)

// The API tests run the real engine on the real embedded store inside
// testing/synctest bubbles (see the engine tests), with the API mounted
// without authentication; endpoints are served in process.

const hookURL = deliverytest.HookURL

// rig is an engine with its API on a fresh store with an in-process
// receiver.
type rig struct {
	t      *testing.T
	st     *sqlite.Store
	e      *dispatch.Engine
	rc     *deliverytest.Receiver
	sender *testhttp.Sender
	reg    *prometheus.Registry
	api    http.Handler
}

// newRig starts an engine and its API; call inside a synctest bubble.
// tweak adjusts the configuration.
func newRig(t *testing.T, tweak func(*dispatch.EngineConfig)) *rig {
	t.Helper()
	st := deliverytest.OpenStore(t)
	rc := &deliverytest.Receiver{}
	r := &rig{t: t, st: st, rc: rc, reg: prometheus.NewRegistry(),
		sender: deliverytest.NewSender(rc)}
	cfg := dispatch.EngineConfig{
		Store:         st,
		Sender:        r.sender,
		Registerer:    r.reg,
		Logger:        slog.New(slog.DiscardHandler),
		Lease:         time.Minute,
		SweepInterval: time.Hour,
		PruneInterval: 24 * time.Hour,
	}
	if tweak != nil {
		tweak(&cfg)
	}
	var err error
	r.e, err = dispatch.NewEngine(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.e.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	r.api = routetest.Handler(auth.Off(), NewAPI(r.e).Routes())
	t.Cleanup(func() {
		r.e.Stop(context.Background())
	})
	return r
}

func (r *rig) endpoint(p *dispatch.CreateEndpointParams) *store.Endpoint {
	r.t.Helper()
	if p.Config.URL == "" {
		p.Config.URL = hookURL
	}
	ep, err := r.e.CreateEndpoint(context.Background(), p)
	if err != nil {
		r.t.Fatalf("create endpoint: %v", err)
	}
	return ep
}

func (r *rig) publish(typ, stream string, data string) *dispatch.PublishResult {
	r.t.Helper()
	res, err := r.e.Publish(context.Background(), &dispatch.PublishParams{Event: &delivery.Event{Type: typ, Timestamp: time.Now().UTC(), Data: json.RawMessage(data)}, Stream: stream})
	if err != nil {
		r.t.Fatalf("publish: %v", err)
	}
	return res
}

// call sends one API request and decodes the JSON answer into out (when
// not nil).
func (r *rig) call(method, path, body string, out any) int {
	r.t.Helper()
	req := httptest.NewRequest(method, path, bytes.NewReader([]byte(body)))
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	rec := httptest.NewRecorder()
	r.api.ServeHTTP(rec, req)
	if out != nil {
		if err := json.Unmarshal(rec.Body.Bytes(), out); err != nil {
			r.t.Fatalf("%s %s: %d %s: %v", method, path, rec.Code, rec.Body, err)
		}
	}
	return rec.Code
}

func (r *rig) deliveries(endpointID string) []store.Delivery {
	r.t.Helper()
	ds, err := r.st.DeliveryList(context.Background(), &store.DeliveryListParams{EndpointID: endpointID})
	if err != nil {
		r.t.Fatal(err)
	}
	return ds
}

// metric returns the value of a counter or gauge of the rig's registry
// (see deliverytest.Metric).
func (r *rig) metric(name string, labels ...string) float64 {
	r.t.Helper()
	return deliverytest.Metric(r.t, r.reg, name, labels...)
}
