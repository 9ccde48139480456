package webhook

import (
	"context"
	"sync"
)

// limiter bounds concurrent sends globally and per destination host. A send
// takes its host's slot before a global one, so sends queued behind a slow
// host hold no global slot and cannot starve the other hosts.
type limiter struct {
	global  chan struct{}
	perHost int

	mu    sync.Mutex
	hosts map[string]*hostSlots // guarded by mu
}

// hostSlots is one host's semaphore; refs counts the sends holding or
// waiting for it, and the entry is dropped when it falls to zero so the map
// does not grow with every host ever contacted.
type hostSlots struct {
	sem  chan struct{}
	refs int // guarded by limiter.mu
}

func newLimiter(global, perHost int) *limiter {
	return &limiter{
		global:  make(chan struct{}, global),
		perHost: perHost,
		hosts:   make(map[string]*hostSlots),
	}
}

// acquire waits for a slot for host, or for ctx to end. On success the
// caller must call release exactly once.
func (l *limiter) acquire(ctx context.Context, host string) (release func(), err error) {
	l.mu.Lock()
	hs, ok := l.hosts[host]
	if !ok {
		hs = &hostSlots{sem: make(chan struct{}, l.perHost)}
		l.hosts[host] = hs
	}
	hs.refs++
	l.mu.Unlock()

	select {
	case hs.sem <- struct{}{}:
	case <-ctx.Done():
		l.unref(host, hs)
		return nil, ctx.Err()
	}
	select {
	case l.global <- struct{}{}:
	case <-ctx.Done():
		<-hs.sem
		l.unref(host, hs)
		return nil, ctx.Err()
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			<-l.global
			<-hs.sem
			l.unref(host, hs)
		})
	}, nil
}

func (l *limiter) unref(host string, hs *hostSlots) {
	l.mu.Lock()
	defer l.mu.Unlock()
	hs.refs--
	if hs.refs == 0 {
		delete(l.hosts, host)
	}
}
