package replica

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/heraldstreams/herald/internal/service"
	"github.com/heraldstreams/herald/store"
)

// fakeReplicas records beats and reaps; fail makes the next beats fail.
type fakeReplicas struct {
	beats, reaps []time.Time
	fail         error
	dead         []string
}

func (f *fakeReplicas) ReplicaID() string { return "me" }

func (f *fakeReplicas) ReplicaBeat(_ context.Context, p *store.ReplicaBeatParams) error {
	if f.fail != nil {
		return f.fail
	}
	f.beats = append(f.beats, p.Now)
	return nil
}

func (f *fakeReplicas) ReplicaReap(_ context.Context, p *store.ReplicaReapParams) (*store.ReplicaReapResult, error) {
	f.reaps = append(f.reaps, p.Now)
	res := &store.ReplicaReapResult{Replicas: f.dead, Released: 2 * len(f.dead)}
	f.dead = nil
	return res, nil
}

// stepClock is a clock the test moves.
type stepClock struct {
	service.RealClock
	now time.Time
}

func (c *stepClock) Now() time.Time { return c.now }

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// TestReapsOnceItsOwnBeatsSettle: a replica reaps only once its own
// beats have gone through for half of DeadAfter (after a start, and
// again after an outage of the database, when every beat is old, so
// that the live replicas beat again first), readiness follows each beat,
// and the engines are told when claims were ended.
func TestReapsOnceItsOwnBeatsSettle(t *testing.T) {
	t.Parallel()
	st := &fakeReplicas{}
	clock := &stepClock{now: t0}
	var health []error
	released := 0
	h := New(Config{Store: st, Clock: clock, Interval: 2 * time.Second, DeadAfter: 10 * time.Second,
		Health: func(err error) { health = append(health, err) }, Released: func() { released++ }})
	beatAt := func(at time.Duration) error {
		t.Helper()
		clock.now = t0.Add(at)
		return h.Beat(context.Background())
	}
	for at := time.Duration(0); at < 5*time.Second; at += time.Second {
		if err := beatAt(at); err != nil {
			t.Fatal(err)
		}
	}
	if len(st.reaps) != 0 {
		t.Fatalf("reaped %v before its own beats settled", st.reaps)
	}
	st.dead = []string{"gone"}
	if err := beatAt(5 * time.Second); err != nil {
		t.Fatal(err)
	}
	if len(st.reaps) != 1 || released != 1 {
		t.Fatalf("once settled: reaps %v, released %d", st.reaps, released)
	}
	if err := beatAt(7 * time.Second); err != nil || len(st.reaps) != 2 || released != 1 {
		t.Fatalf("a reap that ended nothing: reaps %v, released %d, %v", st.reaps, released, err)
	}

	// The database goes away: beats fail, readiness says so, no reap.
	away := errors.New("database away")
	st.fail = away
	if err := beatAt(9 * time.Second); !errors.Is(err, away) {
		t.Fatalf("beat while away = %v", err)
	}
	st.fail = nil
	for at := 11 * time.Second; at < 16*time.Second; at += time.Second {
		if err := beatAt(at); err != nil {
			t.Fatal(err)
		}
	}
	if len(st.reaps) != 2 {
		t.Fatalf("reaped before its beats settled after the database's return: %v", st.reaps)
	}
	if err := beatAt(16 * time.Second); err != nil || len(st.reaps) != 3 {
		t.Fatalf("no reap once settled again: %v, %v", st.reaps, err)
	}
	var failed int
	for i, err := range health {
		if err != nil {
			failed++
			if i != 7 {
				t.Fatalf("health %d = %v", i, err)
			}
		}
	}
	if len(health) != 14 || failed != 1 {
		t.Fatalf("health reports %v", health)
	}
}

// TestDefaults: a Heart beats every two seconds and declares a replica
// dead after ten.
func TestDefaults(t *testing.T) {
	t.Parallel()
	h := New(Config{Store: &fakeReplicas{}})
	if h.cfg.Interval != 2*time.Second || h.cfg.DeadAfter != 10*time.Second {
		t.Fatalf("defaults %v, %v", h.cfg.Interval, h.cfg.DeadAfter)
	}
}
