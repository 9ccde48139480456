package dispatch

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/heraldstreams/herald/auth"
	"github.com/heraldstreams/herald/delivery"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/heraldstreams/herald/store"
	"github.com/heraldstreams/herald/store/sqlite"
	"github.com/heraldstreams/herald/webhook"
)

// The engine tests run the real engine on the real embedded store inside
// testing/synctest bubbles: time is fake, so the retry ladder (34.5 hours),
// leases and rate limits pass in milliseconds, and synctest.Wait returns
// once every goroutine is idle. Endpoints are served in process by an
// http.RoundTripper that calls an http.Handler.

const hookURL = "http://127.0.0.1:9/hook"

// handlerTransport serves requests with an http.Handler in process.
type handlerTransport struct{ h http.Handler }

func (t handlerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	rec := httptest.NewRecorder()
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return nil, err
	}
	r2 := r.Clone(r.Context())
	r2.Body = io.NopCloser(bytes.NewReader(body))
	t.h.ServeHTTP(rec, r2)
	return rec.Result(), nil
}

// transportSender is a Sender over an in-process transport, with the real
// URL policy of webhook.Sender for ValidateURL.
type transportSender struct {
	client *http.Client
	policy webhook.Policy
}

func (s *transportSender) ValidateURL(_ context.Context, raw string) error {
	_, err := s.policy.CheckURL(raw)
	return err
}

func (s *transportSender) Send(ctx context.Context, req *webhook.Request) (*webhook.Response, error) {
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, req.URL, bytes.NewReader(req.Body))
	if err != nil {
		return nil, err
	}
	hreq.Header = req.Header.Clone()
	start := time.Now()
	resp, err := s.client.Do(hreq)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, webhook.DefaultMaxResponseBody))
	return &webhook.Response{StatusCode: resp.StatusCode, Header: resp.Header, Body: body, BodyErr: err, Latency: time.Since(start)}, nil
}

// received is one request the receiver got.
type received struct {
	at     time.Time
	header http.Header
	body   []byte
	event  delivery.Event
}

// receiver records requests and answers with respond.
type receiver struct {
	mu      sync.Mutex
	got     []received
	respond func(n int, ev delivery.Event) (status int, header map[string]string)
}

func (rc *receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body) // in process: cannot fail
	var ev delivery.Event
	if err := json.Unmarshal(body, &ev); err != nil {
		http.Error(w, "not an event", http.StatusBadRequest)
		return
	}
	rc.mu.Lock()
	n := len(rc.got)
	rc.got = append(rc.got, received{at: time.Now(), header: r.Header.Clone(), body: body, event: ev})
	respond := rc.respond
	rc.mu.Unlock()
	status := http.StatusOK
	if respond != nil {
		var hdr map[string]string
		status, hdr = respond(n, ev)
		for k, v := range hdr {
			w.Header().Set(k, v)
		}
	}
	w.WriteHeader(status)
	_, _ = w.Write([]byte(`{"received":true}`))
}

func (rc *receiver) requests() []received {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]received(nil), rc.got...)
}

func (rc *receiver) setRespond(f func(n int, ev delivery.Event) (int, map[string]string)) {
	rc.mu.Lock()
	rc.respond = f
	rc.mu.Unlock()
}

// rig is an engine on a fresh store with an in-process receiver.
type rig struct {
	t   *testing.T
	st  *sqlite.Store
	e   *Engine
	rc  *receiver
	reg *prometheus.Registry
	api http.Handler
}

// newRig starts an engine; call inside a synctest bubble. tweak adjusts
// the configuration.
func newRig(t *testing.T, tweak func(*EngineConfig)) *rig {
	t.Helper()
	// No wait between relaxed commits: synctest.Wait then means every
	// outcome is stored. Checkpoints are left to the hours of fake time
	// the retry tests pass.
	st, err := sqlite.Open(context.Background(), sqlite.Config{Dir: t.TempDir(), RelaxedInterval: -1, CheckpointInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	rc := &receiver{}
	r := &rig{t: t, st: st, rc: rc, reg: prometheus.NewRegistry()}
	cfg := EngineConfig{
		Store:      st,
		Sender:     &transportSender{client: &http.Client{Transport: handlerTransport{rc}}, policy: webhook.Policy{AllowCIDRs: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}}},
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
	r.e, err = NewEngine(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.e.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	NewAPI(r.e).Mount(auth.ServeMux{Mux: mux, Auth: auth.Off()})
	r.api = mux
	t.Cleanup(func() {
		r.e.Stop(context.Background())
		if err := st.Close(); err != nil {
			t.Error(err)
		}
	})
	return r
}

func (r *rig) endpoint(p *CreateEndpointParams) *store.Endpoint {
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

func (r *rig) publish(typ, stream string, data string) *PublishResult {
	r.t.Helper()
	res, err := r.e.Publish(context.Background(), &PublishParams{Event: &delivery.Event{Type: typ, Timestamp: time.Now().UTC(), Data: json.RawMessage(data)}, Stream: stream})
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

// metric returns the value of a counter or gauge of the registry whose
// labels include the given name=value pairs, or -1 when absent.
func (r *rig) metric(name string, labels ...string) float64 {
	r.t.Helper()
	fams, err := r.reg.Gather()
	if err != nil {
		r.t.Fatal(err)
	}
	for _, f := range fams {
		if f.GetName() != name {
			continue
		}
	next:
		for _, m := range f.GetMetric() {
			for i := 0; i+1 < len(labels); i += 2 {
				found := false
				for _, lp := range m.GetLabel() {
					found = found || (lp.GetName() == labels[i] && lp.GetValue() == labels[i+1])
				}
				if !found {
					continue next
				}
			}
			switch {
			case m.GetCounter() != nil:
				return m.GetCounter().GetValue()
			case m.GetGauge() != nil:
				return m.GetGauge().GetValue()
			case m.GetHistogram() != nil:
				return float64(m.GetHistogram().GetSampleCount())
			}
		}
	}
	return -1
}
