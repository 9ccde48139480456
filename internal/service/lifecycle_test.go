package service

import (
	"context"
	"errors"
	"testing"
)

func TestLifecycleStartOnceAndErrors(t *testing.T) {
	t.Parallel()
	l := NewLifecycle()
	boom := errors.New("load failed")
	ran := make(chan struct{})
	err := l.Start(context.Background(), func() error {
		l.Go(func() { <-l.Context().Done(); close(ran) })
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("a failed start returned %v", err)
	}
	<-ran // the goroutine the failed start began was stopped
	if err := l.Start(context.Background(), func() error { return nil }); !errors.Is(err, ErrStopped) {
		t.Fatalf("a start after a failed one returned %v", err)
	}
	if l.Go(func() {}) {
		t.Fatal("a goroutine started after the failed start")
	}

	l2 := NewLifecycle()
	if err := l2.Start(context.Background(), func() error { return nil }); err != nil {
		t.Fatal(err)
	}
	if err := l2.Start(context.Background(), func() error { return nil }); !errors.Is(err, ErrStarted) {
		t.Fatalf("a second start returned %v", err)
	}
	if err := l2.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func TestLifecycleStartContextStops(t *testing.T) {
	t.Parallel()
	l := NewLifecycle()
	ctx, cancel := context.WithCancel(context.Background())
	ended := make(chan struct{})
	if err := l.Start(ctx, func() error {
		l.Go(func() { <-l.WorkContext().Done(); close(ended) })
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	cancel()
	<-ended // the work was cancelled with Start's context
	<-l.Context().Done()
	if l.Go(func() {}) {
		t.Fatal("a goroutine started after Start's context ended")
	}
	if err := l.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	l2 := NewLifecycle()
	if err := l2.Start(ctx, func() error { t.Error("started on an ended context"); return nil }); !errors.Is(err, context.Canceled) {
		t.Fatalf("a start on an ended context returned %v", err)
	}
}

// Stop lets work in flight finish while its context lasts.
func TestLifecycleStopWaitsForWork(t *testing.T) {
	t.Parallel()
	l := NewLifecycle()
	release := make(chan struct{})
	finished := make(chan error, 1)
	if err := l.Start(context.Background(), func() error {
		l.Go(func() {
			<-release
			finished <- l.WorkContext().Err()
		})
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	stopped := make(chan error, 1)
	go func() { stopped <- l.Stop(context.Background()) }()
	<-l.Context().Done() // Stop ended the run context first
	select {
	case <-stopped:
		t.Fatal("Stop returned with work in flight")
	default:
	}
	close(release)
	if err := <-finished; err != nil {
		t.Fatalf("the work's context ended before Stop's: %v", err)
	}
	if err := <-stopped; err != nil {
		t.Fatal(err)
	}
}

// When Stop's context ends, work in flight is cancelled and Stop returns
// the context's error once it has ended.
func TestLifecycleStopCancelsWorkAtDeadline(t *testing.T) {
	t.Parallel()
	l := NewLifecycle()
	if err := l.Start(context.Background(), func() error {
		l.Go(func() { <-l.WorkContext().Done() })
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := l.Stop(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Stop returned %v", err)
	}
	if err := l.Stop(context.Background()); err != nil {
		t.Fatalf("a second Stop returned %v", err)
	}
}
