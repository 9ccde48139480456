package service

import (
	"context"
	"slices"
	"sync"
)

// Queue is a first-in first-out queue of keys (stream paths) that
// coalesces: a key pushed again while it waits is queued once, its
// values merged, and a key is never taken by two workers at a time. A key
// pushed while a worker holds it (between Pop and Done) is queued again
// when Done is called, so a change that lands during the work is worked
// on after it. Nothing pushed is lost until Close.
type Queue[V any] struct {
	merge func(old, pushed V) V

	mu      sync.Mutex
	queued  map[string]V    // waiting keys; guarded by mu
	order   []string        // guarded by mu
	head    int             // guarded by mu
	running map[string]bool // keys between Pop and Done; guarded by mu
	again   map[string]V    // pushed while running; guarded by mu
	closed  bool            // guarded by mu
	signal  chan struct{}
	popped  chan struct{} // closed and replaced at each Pop; guarded by mu
	done    chan struct{} // closed by Close
	// pool starts and counts the workers of Serve (see workers.go);
	// guarded by mu.
	pool workerPool
}

// NewQueue returns an empty Queue; merge combines the value of a waiting
// key with the value pushed again (nil: the first value is kept).
func NewQueue[V any](merge func(old, pushed V) V) *Queue[V] {
	if merge == nil {
		merge = func(old, _ V) V { return old }
	}
	return &Queue[V]{merge: merge, queued: map[string]V{}, running: map[string]bool{}, again: map[string]V{},
		signal: make(chan struct{}, 1), popped: make(chan struct{}), done: make(chan struct{})}
}

// Push queues key with v, or merges v into the key's waiting value.
func (q *Queue[V]) Push(key string, v V) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return
	}
	if q.running[key] {
		if old, ok := q.again[key]; ok {
			v = q.merge(old, v)
		}
		q.again[key] = v
		return
	}
	q.enqueue(key, v)
}

// enqueue queues or merges under mu.
func (q *Queue[V]) enqueue(key string, v V) {
	if old, ok := q.queued[key]; ok {
		q.queued[key] = q.merge(old, v)
		return
	}
	q.queued[key] = v
	q.order = append(q.order, key)
	q.notify()
	q.spawn()
}

func (q *Queue[V]) notify() {
	select {
	case q.signal <- struct{}{}:
	default:
	}
}

// Pop takes the oldest waiting key, waiting for one until ctx ends or the
// queue is closed (ok false). The caller calls Done(key) when its work
// on the key ends.
func (q *Queue[V]) Pop(ctx context.Context) (key string, v V, ok bool) {
	for {
		q.mu.Lock()
		if q.closed {
			q.mu.Unlock()
			return "", v, false
		}
		if q.head < len(q.order) {
			key, v = q.take()
			q.mu.Unlock()
			return key, v, true
		}
		q.mu.Unlock()
		select {
		case <-q.signal:
		case <-q.done:
		case <-ctx.Done():
			return "", v, false
		}
	}
}

// take takes the oldest waiting key under mu; one waits.
func (q *Queue[V]) take() (key string, v V) {
	key = q.order[q.head]
	q.order[q.head] = ""
	q.head++
	if q.head > 1024 && 2*q.head > len(q.order) {
		q.order = slices.Clone(q.order[q.head:])
		q.head = 0
	}
	v = q.queued[key]
	delete(q.queued, key)
	q.running[key] = true
	close(q.popped)
	q.popped = make(chan struct{})
	if q.head < len(q.order) {
		q.notify() // another worker may take the next one
	}
	return key, v
}

// Done ends the work on a key Pop returned; if it was pushed meanwhile,
// it is queued again with what was pushed.
func (q *Queue[V]) Done(key string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	delete(q.running, key)
	v, again := q.again[key]
	delete(q.again, key)
	if again && !q.closed {
		q.enqueue(key, v)
	}
}

// Len returns how many keys wait.
func (q *Queue[V]) Len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.order) - q.head
}

// WaitBelow waits until fewer than n keys wait, ctx ends or the queue
// is closed: a producer of many keys (a reconciliation) uses it to queue
// no faster than the workers take them.
func (q *Queue[V]) WaitBelow(ctx context.Context, n int) {
	for {
		q.mu.Lock()
		if q.closed || len(q.order)-q.head < n {
			q.mu.Unlock()
			return
		}
		popped := q.popped
		q.mu.Unlock()
		select {
		case <-popped:
		case <-q.done:
			return
		case <-ctx.Done():
			return
		}
	}
}

// Close drops what waits and ends every Pop; later pushes are ignored.
func (q *Queue[V]) Close() {
	q.mu.Lock()
	defer q.mu.Unlock()
	if !q.closed {
		q.closed = true
		clear(q.queued)
		clear(q.again)
		q.order, q.head = nil, 0
		close(q.done)
	}
}
