package store

import (
	"sync"

	"go.opentelemetry.io/otel/trace"
)

// Notifier tells readers and engines that a stream's tail changed. The
// in-process Hub implements it for one process; a backend shared by several
// replicas (Postgres) fans changes out between them (LISTEN/NOTIFY) and
// delivers them through a Hub on each replica.
type Notifier interface {
	// Wait returns a channel that is closed at the next change of the
	// stream with the given ID. Take it before reading the state you wait
	// to see change, so no change falls between the read and the wait.
	Wait(streamID int64) <-chan struct{}
	// Listen returns every change from now on, in commit order per stream,
	// and a function that stops the feed. A listener that falls more than
	// buffer changes behind loses the oldest: engines treat changes as hints
	// and keep their truth in the store.
	Listen(buffer int) (<-chan TailChange, func())
}

// TailChange is one change of a stream's tail or lifecycle.
type TailChange struct {
	StreamID int64
	Path     string
	Tail     int64
	Closed   bool
	Created  bool
	Deleted  bool
	// Trace is the span context of the request that made the change
	// (invalid when tracing is off), so the work it causes, a wake or a
	// match, joins the request's trace.
	Trace trace.SpanContext
}

// Hub is the in-process Notifier. The zero value is not usable; use NewHub.
type Hub struct {
	mu        sync.Mutex
	waiters   map[int64]chan struct{}
	listeners map[*hubListener]struct{}
}

type hubListener struct {
	ch chan TailChange
}

var _ Notifier = (*Hub)(nil)

// NewHub returns an empty Hub.
func NewHub() *Hub {
	return &Hub{
		waiters:   make(map[int64]chan struct{}),
		listeners: make(map[*hubListener]struct{}),
	}
}

// Wait implements Notifier. All waiters of one stream share one channel, so
// a change wakes a thousand long-polls with one close.
func (h *Hub) Wait(streamID int64) <-chan struct{} {
	h.mu.Lock()
	defer h.mu.Unlock()
	ch, ok := h.waiters[streamID]
	if !ok {
		ch = make(chan struct{})
		h.waiters[streamID] = ch
	}
	return ch
}

// Listen implements Notifier.
func (h *Hub) Listen(buffer int) (<-chan TailChange, func()) {
	if buffer < 1 {
		buffer = 1
	}
	l := &hubListener{ch: make(chan TailChange, buffer)}
	h.mu.Lock()
	h.listeners[l] = struct{}{}
	h.mu.Unlock()
	var once sync.Once
	return l.ch, func() {
		once.Do(func() {
			h.mu.Lock()
			delete(h.listeners, l)
			h.mu.Unlock()
		})
	}
}

// Publish wakes the waiters of each changed stream and feeds the listeners.
// Backends call it after the change is durable.
func (h *Hub) Publish(changes ...TailChange) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, c := range changes {
		if ch, ok := h.waiters[c.StreamID]; ok {
			close(ch)
			delete(h.waiters, c.StreamID)
		}
		for l := range h.listeners {
			select {
			case l.ch <- c:
			default:
				// Full: drop the oldest to make room (listeners treat
				// changes as hints).
				select {
				case <-l.ch:
				default:
				}
				select {
				case l.ch <- c:
				default:
				}
			}
		}
	}
}
