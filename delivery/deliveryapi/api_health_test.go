package deliveryapi

import (
	"testing"
	"time"

	"github.com/heraldstreams/herald/store"
)

func TestSummarizeAttempts(t *testing.T) {
	t.Parallel()
	if n, rate, p50, p99 := summarizeAttempts(nil); n != 0 || rate != nil || p50 != nil || p99 != nil {
		t.Fatalf("no attempts: %d %v %v %v, want 0 and nils", n, rate, p50, p99)
	}
	var as []store.DeliveryAttempt
	for i := 1; i <= 100; i++ {
		code := 200
		if i%4 == 0 {
			code = 500
		}
		as = append(as, store.DeliveryAttempt{StatusCode: code, Latency: time.Duration(i) * time.Millisecond})
	}
	as = append(as, store.DeliveryAttempt{StatusCode: 0, Error: "dial tcp: connection refused", Latency: 2500 * time.Microsecond}) // a network error
	n, rate, p50, p99 := summarizeAttempts(as)
	if n != 101 || *rate != 75.0/101 || *p50 != 50 || *p99 != 99 {
		t.Errorf("got %d, rate %v, p50 %v, p99 %v; want 101, 75/101, 50, 99", n, *rate, *p50, *p99)
	}
	// A broker's acknowledgement has no status and no error: a success.
	if _, rate, _, _ := summarizeAttempts(append(as, store.DeliveryAttempt{Latency: time.Millisecond})); *rate != 76.0/102 {
		t.Errorf("with a broker's acknowledgement: rate %v, want 76/102", *rate)
	}
	if _, _, p50, _ := summarizeAttempts(as[100:]); *p50 != 2.5 {
		t.Errorf("one attempt of 2.5ms: p50 %v", *p50)
	}
}
