// Package service is the machinery Herald's background engines share:
// one start/stop lifecycle that owns their goroutines, one coalescing
// work queue, one listener of the store's tail-change feed, and one
// periodic runner. The delivery engine, the wake engine and the reaper
// run on it, so they start, stop and wait for their work the same way.
package service

import (
	"context"
	"errors"
	"sync"
)

// Errors of Lifecycle.Start.
var (
	// ErrStarted: Start was called before.
	ErrStarted = errors.New("service: already started")
	// ErrStopped: the service was stopped (Stop, or Start's context
	// ended) and does not start again.
	ErrStopped = errors.New("service: stopped")
)

// Lifecycle starts a service once, owns its goroutines and stops it.
//
// Stop semantics, the same for every service: Stop ends the run context
// at once (loops end, no new work is claimed or matched), lets the work
// in flight finish while Stop's context lasts, then cancels the work
// context (work in flight ends early; what it did not record is done
// again after a restart), and returns when every goroutine has ended.
// When Start's context ends, the service stops as by a Stop whose
// context has ended: run and work contexts are cancelled at once.
type Lifecycle struct {
	mu      sync.Mutex
	started bool // guarded by mu
	stopped bool // guarded by mu: no goroutine starts once set
	wg      sync.WaitGroup

	run        context.Context
	cancelRun  context.CancelFunc
	work       context.Context
	cancelWork context.CancelFunc
	unwatch    func() bool // stops watching Start's context; guarded by mu
}

// NewLifecycle returns a Lifecycle that has not started.
func NewLifecycle() *Lifecycle {
	l := &Lifecycle{}
	l.run, l.cancelRun = context.WithCancel(context.Background())
	l.work, l.cancelWork = context.WithCancel(context.Background())
	return l
}

// Context is the service's run context: it ends when the service stops.
// Loops and the claiming of new work run under it.
func (l *Lifecycle) Context() context.Context { return l.run }

// WorkContext is the context of work in flight (a webhook POST and the
// recording of its outcome): it ends when Stop's context ends, after the
// run context.
func (l *Lifecycle) WorkContext() context.Context { return l.work }

// Start runs start once, which loads what the service needs and starts
// its goroutines with Go. An error of start is returned, and what start
// began is stopped and waited for; the service does not start again. A
// second Start returns ErrStarted (ErrStopped once stopped). When ctx
// ends, the service stops (see Lifecycle): give Start a context that
// lives as long as the service should.
func (l *Lifecycle) Start(ctx context.Context, start func() error) error {
	l.mu.Lock()
	switch {
	case l.stopped:
		l.mu.Unlock()
		return ErrStopped
	case l.started:
		l.mu.Unlock()
		return ErrStarted
	}
	l.started = true
	l.unwatch = context.AfterFunc(ctx, l.halt)
	l.mu.Unlock()
	if err := ctx.Err(); err != nil {
		l.wg.Wait()
		return err
	}
	if err := start(); err != nil {
		l.halt()
		l.wg.Wait()
		return err
	}
	return nil
}

// halt stops the service and cancels its work at once.
func (l *Lifecycle) halt() {
	l.mu.Lock()
	l.stopped = true
	l.mu.Unlock()
	l.cancelRun()
	l.cancelWork()
}

// Go runs fn in a goroutine that Stop waits for, unless the service has
// stopped: it then reports false and fn does not run.
func (l *Lifecycle) Go(fn func()) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.stopped {
		return false
	}
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		fn()
	}()
	return true
}

// GoLoops runs each loop in a goroutine Stop waits for, until the
// service stops.
func (l *Lifecycle) GoLoops(loops ...*Periodic) {
	for _, p := range loops {
		l.Go(func() { p.Loop(l.run) })
	}
}

// Stopped reports whether the service has stopped (or is stopping).
func (l *Lifecycle) Stopped() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.stopped
}

// Stop stops the service (see Lifecycle for what happens to work in
// flight) and returns when every goroutine it owns has ended: nil when
// the work in flight finished, ctx's error when it was cancelled. Stop
// may be called more than once, and before Start.
func (l *Lifecycle) Stop(ctx context.Context) error {
	l.mu.Lock()
	l.stopped = true
	if l.unwatch != nil {
		l.unwatch()
	}
	l.mu.Unlock()
	l.cancelRun()
	done := make(chan struct{})
	go func() { // ends when the service's goroutines have
		l.wg.Wait()
		close(done)
	}()
	var err error
	select {
	case <-done:
	case <-ctx.Done():
		err = ctx.Err()
		l.cancelWork()
		<-done
	}
	l.cancelWork()
	return err
}
