package bus

import (
	"context"
	"errors"
	"net"
	"sync"
	"testing"

	"github.com/heraldstreams/herald/delivery"
)

// fakeGuard allows what allow says, and records the TLS of each dialer.
type fakeGuard struct {
	allow func(hostport string) error
	mu    sync.Mutex
	tls   []bool
}

func (g *fakeGuard) BrokerDialer(tls bool) func(context.Context, string, string) (net.Conn, error) {
	g.mu.Lock()
	g.tls = append(g.tls, tls)
	g.mu.Unlock()
	return func(context.Context, string, string) (net.Conn, error) {
		return nil, errors.New("no dial in this test")
	}
}

func (g *fakeGuard) ValidateBrokerAddress(_ context.Context, hp string, _ bool) error {
	return g.allow(hp)
}

// fakePub counts its messages and whether it was closed.
type fakePub struct {
	mu     sync.Mutex
	n      int
	closed bool
}

func (p *fakePub) Publish(_ context.Context, msgs []Message) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return ErrClosed
	}
	p.n += len(msgs)
	return nil
}

func (p *fakePub) Close() {
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
}

func TestPoolOpensOncePerConfigAndCloses(t *testing.T) {
	t.Parallel()
	var opened []*fakePub
	failNext := false
	g := &fakeGuard{allow: func(string) error { return nil }}
	pool, err := NewPool(PoolConfig{Guard: g, Openers: map[string]Opener{delivery.DestinationNATS: func(*delivery.Destination, DialFunc) (Publisher, error) {
		if failNext {
			failNext = false
			return nil, errors.New("connect failed")
		}
		p := &fakePub{}
		opened = append(opened, p)
		return p, nil
	}}})
	if err != nil {
		t.Fatal(err)
	}
	d, err := delivery.ParseDestination(delivery.DestinationNATS, []byte(`{"servers":["tls://n.example"]}`))
	if err != nil {
		t.Fatal(err)
	}
	msgs := []Message{{EventFields: delivery.EventFields{ID: "e1"}}}
	for range 3 {
		if err := pool.Publish(t.Context(), "ep_1", d, []byte("v1"), msgs); err != nil {
			t.Fatal(err)
		}
	}
	if len(opened) != 1 || opened[0].n != 3 || len(g.tls) != 1 || !g.tls[0] {
		t.Fatalf("opened %d publishers, tls %v", len(opened), g.tls)
	}
	// A changed config closes the old publisher and opens a new one.
	if err := pool.Publish(t.Context(), "ep_1", d, []byte("v2"), msgs); err != nil {
		t.Fatal(err)
	}
	if len(opened) != 2 || !opened[0].closed {
		t.Fatalf("after a change: %d opened, first closed %v", len(opened), opened[0].closed)
	}
	// A failed open is not kept.
	failNext = true
	if err := pool.Publish(t.Context(), "ep_2", d, []byte("v1"), msgs); err == nil {
		t.Fatal("a failed open published")
	}
	if err := pool.Publish(t.Context(), "ep_2", d, []byte("v1"), msgs); err != nil {
		t.Fatalf("the open after a failed one: %v", err)
	}
	pool.Forget("ep_1")
	if !opened[1].closed {
		t.Fatal("Forget did not close the publisher")
	}
	pool.Close()
	if !opened[2].closed {
		t.Fatal("Close did not close the publisher")
	}
	if err := pool.Publish(t.Context(), "ep_1", d, []byte("v1"), msgs); !errors.Is(err, ErrClosed) {
		t.Fatalf("publish after Close = %v", err)
	}
}

func TestPoolChecksEveryAddress(t *testing.T) {
	t.Parallel()
	refused := errors.New("refused")
	var seen []string
	g := &fakeGuard{allow: func(hp string) error {
		seen = append(seen, hp)
		if hp == "10.0.0.1:9092" {
			return refused
		}
		return nil
	}}
	pool, err := NewPool(PoolConfig{Guard: g})
	if err != nil {
		t.Fatal(err)
	}
	d, err := delivery.ParseDestination(delivery.DestinationKafka, []byte(`{"brokers":["k.example:9092","10.0.0.1:9092"]}`))
	if err != nil {
		t.Fatal(err)
	}
	if err := pool.CheckAddresses(t.Context(), d); !errors.Is(err, refused) || len(seen) != 2 {
		t.Fatalf("check = %v after %v", err, seen)
	}
}

func TestMessageHeaders(t *testing.T) {
	t.Parallel()
	m := Message{EventFields: delivery.EventFields{ID: "e1", Type: "a.b", Tenant: "t", Stream: "/s"}}
	m.Header = map[string][]string{"X-Custom": {"1"}, HeaderEventID: {"spoofed"}}
	h := m.Headers()
	if h.Get("X-Custom") != "1" || h.Get(HeaderEventID) != "e1" || h.Get("Content-Type") != "application/json" || h.Get(HeaderTimestamp) == "" {
		t.Fatalf("headers = %v", h)
	}
}
