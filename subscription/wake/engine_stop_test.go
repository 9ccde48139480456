package wake

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	"github.com/heraldstreams/herald/internal/service"
	"github.com/heraldstreams/herald/subscription"
)

// TestEngineStopLetsWakesFinish: Stop lets a wake in flight finish and
// record its outcome while Stop's context lasts; when the context ends
// first, the wake is cancelled and its consumer stays WAKING (its waking
// deadline sends it again after a restart).
func TestEngineStopLetsWakesFinish(t *testing.T) {
	t.Parallel()
	for _, finish := range []bool{true, false} {
		dir := t.TempDir()
		synctest.Test(t, func(t *testing.T) {
			hook := &receiver{}
			release := make(chan struct{})
			arrived := make(chan struct{}, 1)
			hook.setReply(func(_ subscription.WakePayload, r *http.Request) (int, string) {
				arrived <- struct{}{}
				select {
				case <-release:
				case <-r.Context().Done():
				}
				return http.StatusOK, "{}"
			})
			r := newRig(t, dir, hook)
			r.subscribe("sub", "/agents/*")
			r.createStream("/agents/a", "x")
			<-arrived // the wake is in flight
			id := subscription.ConsumerID("sub", "/agents/a")

			ctx, cancel := context.WithTimeout(context.Background(), time.Second) // below the wake's request timeout
			defer cancel()
			stopped := make(chan error, 1)
			go func() { stopped <- r.eng.Stop(ctx) }()
			synctest.Wait()
			select {
			case err := <-stopped:
				t.Fatalf("Stop returned %v with a wake in flight", err)
			default:
			}
			if finish {
				close(release)
				if err := <-stopped; err != nil {
					t.Fatalf("Stop = %v", err)
				}
				if c := r.consumer(id); c.State != "LIVE" {
					t.Fatalf("state after the wake finished during Stop = %s, want LIVE", c.State)
				}
			} else {
				if err := <-stopped; !errors.Is(err, context.DeadlineExceeded) {
					t.Fatalf("Stop = %v, want its context's deadline", err)
				}
				if c := r.consumer(id); c.State != "WAKING" {
					t.Fatalf("state after the wake was cancelled = %s, want WAKING", c.State)
				}
			}
			if err := r.st.Close(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestEngineStartErrors: a second Start is an error, a Start after Stop
// too, and cancelling Start's context stops the engine.
func TestEngineStartErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t, dir, &receiver{})
		defer r.close()
		if err := r.eng.Start(context.Background()); !errors.Is(err, service.ErrStarted) {
			t.Fatalf("a second Start = %v", err)
		}
		eng, err := NewEngine(EngineConfig{Store: r.st, Sender: newSender(&receiver{}), Keyring: r.keys, CallbackBaseURL: "https://herald.test"})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		if err := eng.Start(ctx); err != nil {
			t.Fatal(err)
		}
		cancel()
		<-eng.life.Context().Done()
		if err := eng.Stop(context.Background()); err != nil {
			t.Fatal(err)
		}
		if err := eng.Start(context.Background()); !errors.Is(err, service.ErrStopped) {
			t.Fatalf("a Start after Stop = %v", err)
		}
	})
}
