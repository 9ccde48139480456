package dispatch

import (
	"context"
	"fmt"
	"net/http"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/heraldstreams/herald/delivery"
	"github.com/heraldstreams/herald/store"
)

// awayStore fails the next outcomes written with store.ErrUnavailable,
// as a store whose database is away; conflict makes the next outcomes
// meet another replica's change of the breaker state first, and then
// the reads of the endpoint fail as away too (readsAway of them).
type awayStore struct {
	EngineStore
	// away counts the DeliveryComplete calls still to fail.
	away      atomic.Int64
	tries     atomic.Int64
	conflict  atomic.Int64
	readsAway atomic.Int64
}

var errAway = fmt.Errorf("%w: connection refused", store.ErrUnavailable)

func (s *awayStore) DeliveryComplete(ctx context.Context, p *store.DeliveryCompleteParams) (*store.DeliveryCompleteResult, error) {
	s.tries.Add(1)
	if s.conflict.Add(-1) >= 0 {
		return nil, store.ErrEndpointConflict
	}
	if s.away.Add(-1) >= 0 {
		return nil, errAway
	}
	return s.EngineStore.DeliveryComplete(ctx, p)
}

func (s *awayStore) EndpointGet(ctx context.Context, id string) (*store.Endpoint, error) {
	if s.readsAway.Add(-1) >= 0 {
		return nil, errAway
	}
	return s.EngineStore.EndpointGet(ctx, id)
}

// An answer received while the database is away is recorded by the
// replica that received it as soon as the database is back, not left to
// the lease: the delivery is delivered once, and the next delivery of an
// ordered stream goes at once.
func TestOutcomeWrittenWhenTheDatabaseIsBack(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		r, away, ep := newAwayRig(t)
		away.away.Store(5) // about three seconds of retries
		r.publishTwoWhileAway()
		if n := away.away.Load(); n >= 0 {
			t.Fatalf("%d writes of the outcome still to fail 5 s later", n+1)
		}
		r.wantEachSentOnce(t, ep.ID, 2)
		if away.tries.Load() < 6 {
			t.Fatalf("the outcome was written %d times", away.tries.Load())
		}
	})
}

// An outcome that meets another replica's change of the breaker state
// while the database goes away (the endpoint cannot be read again) is
// still written once the database is back, not left to the lease: the
// ordered stream goes on at once.
func TestOutcomeWrittenAfterAConflictWhileAway(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		r, away, ep := newAwayRig(t)
		away.conflict.Store(1)
		away.readsAway.Store(5)
		r.publishTwoWhileAway()
		if n := away.readsAway.Load(); n >= 0 {
			t.Fatalf("%d reads of the endpoint still to fail 5 s later", n+1)
		}
		r.wantEachSentOnce(t, ep.ID, 2)
	})
}

// newAwayRig is a rig whose store goes away when told (awayStore), with
// an endpoint of ordering "stream" whose receiver answers 200.
func newAwayRig(t *testing.T) (*rig, *awayStore, *store.Endpoint) {
	t.Helper()
	var away *awayStore
	r := newRig(t, func(cfg *EngineConfig) {
		away = &awayStore{EngineStore: cfg.Store}
		cfg.Store = away
	})
	ep := r.endpoint(&CreateEndpointParams{Active: true, Config: delivery.EndpointConfig{Ordering: delivery.OrderingStream}})
	r.rc.SetRespond(func(int, delivery.Event) (int, map[string]string) { return http.StatusOK, nil })
	return r, away, ep
}

// publishTwoWhileAway publishes two events to /orders and waits 5 s, past
// the database's return after about 3 s.
func (r *rig) publishTwoWhileAway() {
	r.publish("order.created", "/orders", `{"n":1}`)
	r.publish("order.created", "/orders", `{"n":2}`)
	synctest.Wait()
	time.Sleep(5 * time.Second) // the database is back after about 3 s
	synctest.Wait()
}

// wantEachSentOnce checks that the receiver got n requests and that every
// delivery of the endpoint is delivered at its first attempt: no outcome
// was left to the lease and sent again.
func (r *rig) wantEachSentOnce(t *testing.T, endpointID string, n int) {
	t.Helper()
	if got := len(r.rc.Requests()); got != n {
		t.Fatalf("%d requests, want %d (each event once, in order)", got, n)
	}
	for _, d := range r.deliveries(endpointID) {
		if d.Status != store.DeliveryDelivered || d.Attempts != 1 {
			t.Fatalf("delivery %s: %s after %d attempts", d.EventID, d.Status, d.Attempts)
		}
	}
}
