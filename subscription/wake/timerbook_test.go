package wake

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/heraldstreams/herald/internal/testhttp"
	"github.com/heraldstreams/herald/store"
	"github.com/heraldstreams/herald/store/sqlite"
	"github.com/heraldstreams/herald/subscription"
)

// errAway is the error of a store whose database is away.
var errAway = fmt.Errorf("%w: connection reset", store.ErrUnavailable)

// lostStore commits the next timer claims that take consumers and then
// answers them with store.ErrUnavailable, as when the database restarts
// after a commit and before its answer: the timers are claimed in the
// rows, by this live replica, and it never learns of them. It can also
// fail, uncommitted, the update of the tick that follows a claim.
type lostStore struct {
	*sqlite.Store
	// claims counts the claims that take consumers still to lose.
	claims atomic.Int64
	// ticks counts the claims whose tick's update is still to fail;
	// failing is set from such a claim until its update failed.
	ticks   atomic.Int64
	failing atomic.Bool
}

func (s *lostStore) ConsumerClaimDue(ctx context.Context, p *store.ConsumerClaimDueParams) (*store.ConsumerClaimDueResult, error) {
	res, err := s.Store.ConsumerClaimDue(ctx, p)
	if err != nil || len(res.Consumers) == 0 {
		return res, err
	}
	if s.claims.Add(-1) >= 0 {
		return nil, errAway
	}
	if s.ticks.Add(-1) >= 0 {
		s.failing.Store(true)
	}
	return res, nil
}

func (s *lostStore) ConsumerUpdate(ctx context.Context, p *store.ConsumerUpdateParams) (int64, error) {
	if s.failing.CompareAndSwap(true, false) {
		return 0, errAway
	}
	return s.Store.ConsumerUpdate(ctx, p)
}

// openLost opens a lostStore in a temporary directory.
func openLost(t *testing.T) *lostStore {
	t.Helper()
	st, err := sqlite.Open(context.Background(), sqlite.Config{Dir: t.TempDir(), TouchFlushInterval: time.Hour, CheckpointInterval: time.Hour, RelaxedInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	return &lostStore{Store: st}
}

// startLost starts an engine on st as a replica of a shared database
// runs it: not exclusive, so it sweeps every DefaultSweepInterval.
func startLost(t *testing.T, st *lostStore, cfg EngineConfig) *Engine {
	t.Helper()
	cfg.Store, cfg.Keyring, cfg.CallbackBaseURL, cfg.StreamOwner = st, rigKeyring(t), "https://herald.test", tenantOfPath
	eng, err := NewEngine(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := eng.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		eng.Stop(context.Background())
		if err := st.Close(); err != nil {
			t.Error(err)
		}
	})
	return eng
}

// wantRetrySoon checks that the second wake (a retry, fired by a timer)
// came within its backoff plus two sweeps of the first, long before the
// TimerLease of a claim left to run out, and that the lostStore's
// counter left was spent.
func wantRetrySoon(t *testing.T, at []time.Time, left *atomic.Int64) {
	t.Helper()
	if left.Load() > 0 {
		t.Fatal("no claim was lost")
	}
	if len(at) < 2 {
		t.Fatalf("%d wakes; want the retry", len(at))
	}
	base, jitter := subscription.RetryBackoff(1)
	if gap, bound := at[1].Sub(at[0]), base+jitter+2*DefaultSweepInterval+deadlineResolution; gap > bound {
		t.Fatalf("the retry came %v after the first wake, want at most %v", gap, bound)
	}
}

// A timer claim committed while its answer was lost does not hold the
// consumer's retry for the TimerLease: the next sweep ends the timers
// this replica does not fire, and claims the retry at once.
func TestLostTimerClaimReleasedBySweep(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		st := openLost(t)
		st.claims.Store(1) // the claim of the first retry
		wantRetrySoon(t, failingWakes(t, st), &st.claims)
	})
}

// failingWakes subscribes to /agents/* on an engine on st whose webhook
// always fails, creates /agents/a, and returns when each wake was sent
// in the TimerLease/2 that follow.
func failingWakes(t *testing.T, st *lostStore) []time.Time {
	t.Helper()
	hook := &receiver{}
	hook.setReply(func(subscription.WakePayload, *http.Request) (int, string) { return http.StatusInternalServerError, "" })
	eng := startLost(t, st, EngineConfig{Sender: newSender(hook)})
	if _, err := eng.CreateSubscription(context.Background(), &CreateSubscriptionParams{ID: "sub", Pattern: "/agents/*", Webhook: hookURL}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.StreamCreate(context.Background(), &store.StreamCreateParams{Path: "/agents/a", ContentType: "text/plain", Data: []byte("x"), Now: time.Now()}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(TimerLease / 2)
	synctest.Wait()
	var at []time.Time
	for _, w := range hook.wakes() {
		at = append(at, w.At)
	}
	return at
}

// So for a reserved-API subscription's timer, a consumer row of the
// other kind.
func TestLostReservedTimerClaimReleasedBySweep(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		st := openLost(t)
		hook := &testhttp.Receiver[subscription.DSWebhookBody]{}
		hook.SetReply(func(int, subscription.DSWebhookBody, *http.Request) (int, map[string]string, string) {
			return http.StatusServiceUnavailable, nil, ""
		})
		eng := startLost(t, st, EngineConfig{Sender: testhttp.NewSender(hook), Reserved: ReservedConfig{Store: st, Root: "/v1/stream"}})
		cfg, err := subscription.ParseDSConfig([]byte(`{"type":"webhook","streams":["events/a"],"webhook":{"url":"` + hookURL + `"}}`))
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := eng.Reserved().Create(context.Background(), &ReservedCreateParams{ID: "sub-1", Config: cfg}); err != nil {
			t.Fatal(err)
		}
		if _, err := st.StreamCreate(context.Background(), &store.StreamCreateParams{Path: "/v1/stream/events/a", ContentType: "text/plain", Data: []byte("abc"), Now: time.Now()}); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		st.claims.Store(1)
		if _, err := st.StreamAppend(context.Background(), &store.StreamAppendParams{Path: "/v1/stream/events/a", ContentType: "text/plain", Data: []byte("d"), Now: time.Now()}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(TimerLease / 2)
		synctest.Wait()
		var at []time.Time
		for _, q := range hook.Requests() {
			at = append(at, q.At)
		}
		wantRetrySoon(t, at, &st.claims)
	})
}

// A tick that failed because the database was away leaves its claim in
// the row: the next sweep ends it too, and the retry is not held for the
// TimerLease.
func TestFailedTickReleasedBySweep(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		st := openLost(t)
		st.ticks.Store(1)
		at := failingWakes(t, st)
		if st.failing.Load() {
			t.Fatal("the tick's update did not fail")
		}
		wantRetrySoon(t, at, &st.ticks)
	})
}

// The timer book keeps the consumers being fired, and asks for a
// release after a tick failed only when the database was away: a tick
// that fails otherwise keeps its claim for the lease, and is not tried
// again every sweep.
func TestTimerBookOrphans(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	clock := func() time.Time { return at }
	var b timerBook
	claim, _ := b.begin(clock)
	firing := []store.Consumer{{ID: "a"}, {ID: "b"}}
	b.end(claim, firing, nil)
	b.fired(firing[1:], errors.New("a decision failed"))
	if _, ok := b.orphans(clock); ok {
		t.Fatal("a release asked for after a tick failed with the database up")
	}
	b.fired(nil, errAway)
	p, ok := b.orphans(clock)
	if !ok || !slices.Equal(p.Keep, []string{"a"}) || !p.Before.Equal(at.Add(TimerLease)) || !p.Now.Equal(at) {
		t.Fatalf("after a tick failed with the database away, orphans = %+v, %v; want a kept, before now plus the lease", p, ok)
	}
}
