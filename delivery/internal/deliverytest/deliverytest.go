// Package deliverytest holds what the delivery engine and API tests share:
// an in-process receiver of deliveries, a sender over an in-process
// transport with the real URL policy, and a metric reader.
package deliverytest

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/heraldstreams/herald/delivery"
	"github.com/heraldstreams/herald/store/sqlite"
	"github.com/heraldstreams/herald/webhook"
	"github.com/prometheus/client_golang/prometheus"
)

// The engine tests run the real engine on the real embedded store inside
// testing/synctest bubbles: time is fake, so the retry ladder (34.5 hours),
// leases and rate limits pass in milliseconds, and synctest.Wait returns
// once every goroutine is idle. Endpoints are served in process by an
// http.RoundTripper that calls an http.Handler.

// HookURL is the URL of the in-process receiver.
const HookURL = "http://127.0.0.1:9/hook"

// HandlerTransport serves requests with an http.Handler in process.
type HandlerTransport struct{ H http.Handler }

// RoundTrip serves r with the handler.
func (t HandlerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	rec := httptest.NewRecorder()
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return nil, err
	}
	r2 := r.Clone(r.Context())
	r2.Body = io.NopCloser(bytes.NewReader(body))
	t.H.ServeHTTP(rec, r2)
	return rec.Result(), nil
}

// TransportSender is a sender over an in-process transport, with the real
// URL policy of webhook.Sender for ValidateURL.
type TransportSender struct {
	Client *http.Client
	Policy webhook.Policy
}

// ValidateURL checks raw with the policy, without DNS.
func (s *TransportSender) ValidateURL(_ context.Context, raw string) error {
	_, err := s.Policy.CheckURL(raw)
	return err
}

// Send POSTs req over the client.
func (s *TransportSender) Send(ctx context.Context, req *webhook.Request) (*webhook.Response, error) {
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, req.URL, bytes.NewReader(req.Body))
	if err != nil {
		return nil, err
	}
	hreq.Header = req.Header.Clone()
	start := time.Now()
	resp, err := s.Client.Do(hreq)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, webhook.DefaultMaxResponseBody))
	return &webhook.Response{StatusCode: resp.StatusCode, Header: resp.Header, Body: body, BodyErr: err, Latency: time.Since(start)}, nil
}

// Received is one request the receiver got.
type Received struct {
	At     time.Time
	Header http.Header
	Body   []byte
	Event  delivery.Event
}

// Receiver records requests and answers with respond.
type Receiver struct {
	mu      sync.Mutex
	got     []Received
	respond func(n int, ev delivery.Event) (status int, header map[string]string)
}

// ServeHTTP records the event and answers as respond says (200 when nil).
func (rc *Receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body) // in process: cannot fail
	var ev delivery.Event
	if err := json.Unmarshal(body, &ev); err != nil {
		http.Error(w, "not an event", http.StatusBadRequest)
		return
	}
	rc.mu.Lock()
	n := len(rc.got)
	rc.got = append(rc.got, Received{At: time.Now(), Header: r.Header.Clone(), Body: body, Event: ev})
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

// Requests returns the requests so far.
func (rc *Receiver) Requests() []Received {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]Received(nil), rc.got...)
}

// SetRespond sets how the receiver answers the next requests.
func (rc *Receiver) SetRespond(f func(n int, ev delivery.Event) (int, map[string]string)) {
	rc.mu.Lock()
	rc.respond = f
	rc.mu.Unlock()
}

// Metric returns the value of a counter or gauge of the registry whose
// labels include the given name=value pairs, or -1 when absent.
func Metric(t testing.TB, reg prometheus.Gatherer, name string, labels ...string) float64 {
	t.Helper()
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
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

// OpenStore opens a fresh embedded store, closed when the test ends
// (after the cleanups registered later, such as stopping an engine).
// No wait between relaxed commits: synctest.Wait then means every
// outcome is stored. Checkpoints are left to the hours of fake time the
// retry tests pass.
func OpenStore(t testing.TB) *sqlite.Store {
	t.Helper()
	st, err := sqlite.Open(context.Background(), sqlite.Config{Dir: t.TempDir(), RelaxedInterval: -1, CheckpointInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := st.Close(); err != nil {
			t.Error(err)
		}
	})
	return st
}

// NewSender returns a sender that delivers to h in process, with the
// real URL policy allowing loopback addresses (HookURL).
func NewSender(h http.Handler) *TransportSender {
	return &TransportSender{Client: &http.Client{Transport: HandlerTransport{H: h}},
		Policy: webhook.Policy{AllowCIDRs: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}}}
}
