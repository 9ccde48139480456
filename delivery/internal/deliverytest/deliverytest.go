// Package deliverytest holds what the delivery engine and API tests share:
// a receiver of deliveries and a sender on the engines' shared in-process
// transport (internal/testhttp), a store opener and a metric reader.
package deliverytest

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/heraldstreams/herald/delivery"
	"github.com/heraldstreams/herald/internal/testhttp"
	"github.com/heraldstreams/herald/store/sqlite"
	"github.com/prometheus/client_golang/prometheus"
)

// The engine tests run the real engine on the real embedded store inside
// testing/synctest bubbles: time is fake, so the retry ladder (34.5 hours),
// leases and rate limits pass in milliseconds, and synctest.Wait returns
// once every goroutine is idle. Endpoints are served in process by an
// http.RoundTripper that calls an http.Handler.

// HookURL is the URL of the in-process receiver.
const HookURL = testhttp.HookURL

// Received is one request the receiver got.
type Received struct {
	At     time.Time
	Header http.Header
	Body   []byte
	Event  delivery.Event
}

// Receiver records the deliveries it is sent (testhttp.Receiver) and
// answers 200 unless SetRespond says otherwise, with the body
// testhttp.DefaultBody.
type Receiver struct {
	testhttp.Receiver[delivery.Event]
}

// Requests returns the requests so far.
func (rc *Receiver) Requests() []Received {
	got := rc.Receiver.Requests()
	out := make([]Received, len(got))
	for i, q := range got {
		out[i] = Received{At: q.At, Header: q.Header, Body: q.Body, Event: q.Value}
	}
	return out
}

// SetRespond sets how the receiver answers the next requests (nil: 200).
func (rc *Receiver) SetRespond(f func(n int, ev delivery.Event) (int, map[string]string)) {
	if f == nil {
		rc.SetReply(nil)
		return
	}
	rc.SetReply(func(n int, ev delivery.Event, _ *http.Request) (int, map[string]string, string) {
		status, hdr := f(n, ev)
		return status, hdr, testhttp.DefaultBody
	})
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
func NewSender(h http.Handler) *testhttp.Sender {
	return testhttp.NewSender(h)
}
