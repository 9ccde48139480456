package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/heraldstreams/herald/client"
	"github.com/heraldstreams/herald/subscription"
)

// keylessConsumer is the webhook of a Go SDK Consumer given no key, run
// against a Herald with access control on: every read is refused, so
// each wake ends with done and no ack, and Herald wakes it again at
// once. Once it has had subscription.StuckWakes wakes (the consumer is
// then stuck) it stops handling them and only answers 200, so the
// consumer stays LIVE and the test's Herald is not kept busy; stuck is
// closed then.
type keylessConsumer struct {
	srv   *httptest.Server
	wakes atomic.Int64
	stuck chan struct{}
}

// newKeylessConsumer creates subscription id on pattern with the
// consumer as its webhook.
func newKeylessConsumer(t *testing.T, m *matrix, id, pattern string) *keylessConsumer {
	t.Helper()
	k := &keylessConsumer{srv: httptest.NewUnstartedServer(nil), stuck: make(chan struct{})}
	var sub struct {
		Secret string `json:"webhook_secret"`
	}
	m.admin(t, "PUT", pattern+"?subscription="+id, `{"webhook":"http://`+k.srv.Listener.Addr().String()+`/wake"}`, http.StatusCreated, &sub)
	sdk := client.NewConsumer(client.ConsumerConfig{Secret: sub.Secret, RetryBackoff: time.Millisecond,
		Process: func(context.Context, client.Batch) error { return nil }})
	k.srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := k.wakes.Add(1)
		if n == subscription.StuckWakes {
			close(k.stuck)
		}
		if n >= subscription.StuckWakes {
			w.WriteHeader(http.StatusOK)
			return
		}
		sdk.ServeHTTP(w, r)
	})
	k.srv.Start()
	t.Cleanup(k.srv.Close)
	return k
}

// waitStuck waits until the consumer has had its StuckWakes-th wake:
// Herald stores a wake's count before it sends it.
func (k *keylessConsumer) waitStuck(t *testing.T) {
	t.Helper()
	select {
	case <-k.stuck:
	case <-time.After(30 * time.Second):
		t.Fatalf("%d wakes after 30 s, want %d", k.wakes.Load(), subscription.StuckWakes)
	}
}

// TestConsumersShowStuck: a consumer whose reads are refused (no key)
// is woken again and again without an ack; the consumer API, the CLI and
// the metrics show it stuck, with the reason.
func TestConsumersShowStuck(t *testing.T) {
	t.Parallel()
	m := newMatrix(t)
	env := cliEnv(m)
	k := newKeylessConsumer(t, m, "nokey", "/nokey/*")
	m.admin(t, "PUT", "/nokey/s1", `[]`, http.StatusCreated, nil)
	k.waitStuck(t)

	id := "nokey:%2Fnokey%2Fs1"
	var ci subscription.ConsumerInfo
	m.admin(t, "GET", "/_herald/v1/consumers/"+id, "", http.StatusOK, &ci)
	if !ci.Stuck || ci.StuckReason == nil || !strings.HasPrefix(*ci.StuckReason, "woken 10 times in ") || !strings.HasSuffix(*ci.StuckReason, " without an ack") {
		t.Fatalf("consumer = %+v (reason %v)", ci, ci.StuckReason)
	}
	expectOutput(t, "consumers ls", mustCLI(t, env, "consumers", "ls", "nokey"), "STUCK", *ci.StuckReason)
	expectOutput(t, "consumers get", mustCLI(t, env, "consumers", "get", id), "stuck:", "woken 10 times in ")
	_, metrics := m.call(t, "GET", "/_herald/metrics", map[string]string{"Authorization": "Bearer " + testAdminKey}, "")
	if !strings.Contains(metrics, "\nherald_subscription_consumers_stuck 1\n") {
		t.Fatalf("metrics lack herald_subscription_consumers_stuck 1:\n%s", metrics)
	}

	// A consumer that acks is not stuck.
	expectOutput(t, "consumers ls", mustCLI(t, env, "subscriptions", "create", "/acks/*", "acks", "--webhook", m.receiver.URL), "acks")
	mustCLI(t, env, "streams", "create", "/acks/a", "--content-type", "text/plain")
	// The consumer is spawned by the engine once it sees the new stream:
	// wait for it to exist.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		status, _ := m.call(t, "GET", "/_herald/v1/consumers/acks:%2Facks%2Fa", map[string]string{"Authorization": "Bearer " + testAdminKey}, "")
		if status == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the consumer of /acks/a does not exist after 30 s (last answer %d)", status)
		}
	}
	out := mustCLI(t, env, "consumers", "get", "acks:%2Facks%2Fa")
	expectOutput(t, "consumers get", out, "stuck:")
	if !strings.Contains(out, "no\n") {
		t.Fatalf("a consumer without wakes shows stuck: %q", out)
	}
}
