package e2e

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/heraldstreams/herald/client"
)

// retryBatch is one batch the SDK consumer handed to its Process, and
// what Process answered.
type retryBatch struct {
	stream, offset, data string
	failed               bool
	at                   time.Time
}

// nextRetryBatch returns the next batch processed, failing the test when
// none comes within timeout.
func nextRetryBatch(t *testing.T, srv *server, batches <-chan retryBatch, timeout time.Duration) retryBatch {
	t.Helper()
	select {
	case b := <-batches:
		return b
	case <-time.After(timeout):
		t.Fatalf("no batch processed within %v\n%s", timeout, srv.logs)
		return retryBatch{}
	}
}

// TestConsumerRetriesAFailedBatchSoon runs the SDK's Consumer as the
// webhook of the real binary. A batch whose processing fails is delivered
// again after the consumer's RetryBackoff, within seconds rather than
// after Herald's 45 s liveness timeout; the batches acked before it are
// not delivered again; a batch that always fails is retried no faster than
// the backoff.
func TestConsumerRetriesAFailedBatchSoon(t *testing.T) {
	t.Parallel()
	const backoff = 500 * time.Millisecond
	// soon is far below the 45 s liveness timeout a stalled wake waits for.
	const soon = 5 * time.Second
	srv := startHerald(t, t.TempDir(), "--webhook-allow-cidrs", "127.0.0.0/8")

	batches := make(chan retryBatch, 64)
	var mu sync.Mutex
	seen := map[string]bool{}
	process := func(_ context.Context, b client.Batch) error {
		data := string(b.Data)
		mu.Lock()
		fail := strings.Contains(data, "poison") || (data == "fail-once" && !seen[b.Stream+data])
		seen[b.Stream+data] = true
		mu.Unlock()
		select {
		case batches <- retryBatch{stream: b.Stream, offset: b.Offset, data: data, failed: fail, at: time.Now()}:
		default: // the test has seen what it needs; the poison goes on
		}
		if fail {
			return errors.New("cannot process " + data)
		}
		return nil
	}

	hook := httptest.NewUnstartedServer(nil)
	secret := createSubscription(t, srv.base, "/jobs/*", "jobs", "http://"+hook.Listener.Addr().String()+"/hook")
	hook.Config.Handler = client.NewConsumer(client.ConsumerConfig{Secret: secret, RetryBackoff: backoff, Process: process})
	hook.Start()
	defer hook.Close()

	text := map[string]string{"Content-Type": "text/plain"}
	if resp, body := do(t, "PUT", srv.base+"/jobs/a", text, "ok-1"); resp.StatusCode != http.StatusCreated {
		t.Fatalf("create: %d %s", resp.StatusCode, body)
	}
	if b := nextRetryBatch(t, srv, batches, soon); b.stream != "/jobs/a" || b.data != "ok-1" || b.failed {
		t.Fatalf("first batch: %+v", b)
	}
	resp, _ := do(t, "POST", srv.base+"/jobs/a", text, "fail-once")
	if resp.StatusCode != http.StatusNoContent {
		t.Fatalf("append: %d", resp.StatusCode)
	}
	failed := nextRetryBatch(t, srv, batches, soon)
	if failed.data != "fail-once" || !failed.failed {
		t.Fatalf("second batch: %+v", failed)
	}
	retried := nextRetryBatch(t, srv, batches, soon)
	if retried.stream != "/jobs/a" || retried.data != "fail-once" || retried.offset != failed.offset || retried.failed {
		t.Fatalf("the failed batch again: %+v, want %+v delivered again", retried, failed)
	}
	if gap := retried.at.Sub(failed.at); gap < backoff {
		t.Fatalf("retried %v after the failure, before the backoff of %v", gap, backoff)
	}

	// A batch that always fails: each attempt waits out the backoff.
	do(t, "PUT", srv.base+"/jobs/p", text, "poison")
	var attempts []retryBatch
	for len(attempts) < 4 {
		b := nextRetryBatch(t, srv, batches, soon)
		if b.stream != "/jobs/p" {
			t.Fatalf("a batch of %s was delivered again: %+v", b.stream, b)
		}
		if b.data != "poison" || b.offset != "-1" || !b.failed {
			t.Fatalf("poison attempt: %+v", b)
		}
		attempts = append(attempts, b)
	}
	for i := 1; i < len(attempts); i++ {
		if gap := attempts[i].at.Sub(attempts[i-1].at); gap < backoff {
			t.Fatalf("attempt %d came %v after the previous one, faster than the backoff of %v", i+1, gap, backoff)
		}
	}
}
