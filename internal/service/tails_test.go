package service

import (
	"context"
	"testing"

	"github.com/heraldstreams/herald/store"
)

// The listener hands changes on in order and says when the feed's buffer
// overflowed (the store dropped changes).
func TestTailListenerReportsLoss(t *testing.T) {
	t.Parallel()
	hub := store.NewHub()
	l := ListenTails(hub, 4)
	// Fill the buffer and overflow it: /0 is dropped.
	for _, p := range []string{"/0", "/1", "/2", "/3", "/4"} {
		hub.Publish(store.TailChange{Path: p})
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	got := make(chan string, 8)
	lost := make(chan struct{}, 8)
	done := make(chan struct{})
	go func() {
		defer close(done)
		l.Run(ctx, func(c store.TailChange) { got <- c.Path }, func() { lost <- struct{}{} })
	}()
	for _, want := range []string{"/1", "/2", "/3", "/4"} {
		if p := <-got; p != want {
			t.Fatalf("got %s, want %s", p, want)
		}
	}
	select {
	case <-lost:
	default:
		t.Fatal("an overflow was not reported")
	}
	// Once drained, a single change is no sign of loss.
	for len(lost) > 0 {
		<-lost
	}
	hub.Publish(store.TailChange{Path: "/5"})
	if p := <-got; p != "/5" {
		t.Fatalf("got %s", p)
	}
	if len(lost) != 0 {
		t.Fatal("a loss was reported with an empty buffer")
	}
	cancel()
	<-done
}

// A feed filled to its bound, not past it, lost nothing and says so.
func TestTailListenerFullIsNoLoss(t *testing.T) {
	t.Parallel()
	hub := store.NewHub()
	l := ListenTails(hub, 3)
	for _, p := range []string{"/0", "/1", "/2"} {
		hub.Publish(store.TailChange{Path: p})
	}
	ctx, cancel := context.WithCancel(context.Background())
	got := make(chan string, 8)
	done := make(chan struct{})
	lost := false
	go func() {
		defer close(done)
		l.Run(ctx, func(c store.TailChange) { got <- c.Path }, func() { lost = true })
	}()
	for _, want := range []string{"/0", "/1", "/2"} {
		if p := <-got; p != want {
			t.Fatalf("got %s, want %s", p, want)
		}
	}
	cancel()
	<-done
	if lost {
		t.Fatal("a loss was reported for a buffer filled to its bound")
	}
}
