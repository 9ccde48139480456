package service

import (
	"context"
	"testing"
)

func orFlags(a, b uint8) uint8 { return a | b }

func TestQueueCoalescesInOrder(t *testing.T) {
	t.Parallel()
	q := NewQueue(orFlags)
	ctx := context.Background()
	q.Push("/a", 1)
	q.Push("/b", 1)
	q.Push("/a", 2)
	if n := q.Len(); n != 2 {
		t.Fatalf("len %d, want 2", n)
	}
	k, v, ok := q.Pop(ctx)
	if !ok || k != "/a" || v != 3 {
		t.Fatalf("pop %q %d %v, want /a 3", k, v, ok)
	}
	q.Done(k)
	k, v, _ = q.Pop(ctx)
	if k != "/b" || v != 1 {
		t.Fatalf("pop %q %d, want /b 1", k, v)
	}
	q.Done(k)
	if n := q.Len(); n != 0 {
		t.Fatalf("len %d after popping all", n)
	}
}

// A key pushed while a worker holds it is not given to another worker,
// and is queued again, merged, when the first is done.
func TestQueueKeyHeldByOneWorker(t *testing.T) {
	t.Parallel()
	q := NewQueue(orFlags)
	ctx := context.Background()
	q.Push("/a", 1)
	k, _, _ := q.Pop(ctx)
	q.Push("/a", 2)
	q.Push("/a", 4)
	if n := q.Len(); n != 0 {
		t.Fatalf("a held key is waiting: len %d", n)
	}
	q.Done(k)
	k, v, _ := q.Pop(ctx)
	if k != "/a" || v != 6 {
		t.Fatalf("pop %q %d, want /a 6", k, v)
	}
	q.Done(k)
	if n := q.Len(); n != 0 {
		t.Fatalf("len %d", n)
	}
}

func TestQueuePopEnds(t *testing.T) {
	t.Parallel()
	q := NewQueue[struct{}](nil)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, _, ok := q.Pop(ctx); ok {
		t.Fatal("Pop returned a key on an ended context")
	}
	popped := make(chan bool)
	go func() {
		_, _, ok := q.Pop(context.Background())
		popped <- ok
	}()
	q.Close()
	if <-popped {
		t.Fatal("Pop returned a key from a closed queue")
	}
	q.Push("/a", struct{}{})
	if q.Len() != 0 {
		t.Fatal("a closed queue took a key")
	}
}

// A waiting worker takes what is pushed after it began to wait.
func TestQueuePopWaits(t *testing.T) {
	t.Parallel()
	q := NewQueue[int](nil)
	got := make(chan string)
	go func() {
		k, _, _ := q.Pop(context.Background())
		got <- k
	}()
	q.Push("/late", 1)
	if k := <-got; k != "/late" {
		t.Fatalf("popped %q", k)
	}
}

func TestQueueWaitBelow(t *testing.T) {
	t.Parallel()
	q := NewQueue[int](nil)
	q.Push("/a", 1)
	q.Push("/b", 1)
	q.WaitBelow(context.Background(), 3) // 2 < 3: returns at once
	waited := make(chan struct{})
	go func() {
		q.WaitBelow(context.Background(), 2)
		close(waited)
	}()
	k, _, _ := q.Pop(context.Background())
	q.Done(k)
	<-waited // one key left
	if n := q.Len(); n != 1 {
		t.Fatalf("len %d", n)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	q.WaitBelow(ctx, 1) // an ended context returns
}
