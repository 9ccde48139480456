package dispatch

import (
	"context"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/heraldstreams/herald/store"
)

// searchCounter counts the searches for replay jobs, and says whether
// other replicas share the store.
type searchCounter struct {
	EngineStore
	peers    bool
	searches atomic.Int64
}

func (s *searchCounter) Peers() bool { return s.peers }

func (s *searchCounter) ReplayJobClaim(ctx context.Context, p *store.ReplayJobClaimParams) ([]store.ReplayJob, error) {
	s.searches.Add(1)
	return s.EngineStore.ReplayJobClaim(ctx, p)
}

// On a store no other replica shares, the sweep searches for replay jobs
// to resume at its first run and then once a minute (a safety net); on a
// shared one, at every sweep.
func TestReplaySearchPacedOnExclusiveStore(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		peers bool
		want  int64
	}{{peers: false, want: 2}, {peers: true, want: 13}} {
		synctest.Test(t, func(t *testing.T) {
			var counter *searchCounter
			newRig(t, func(cfg *EngineConfig) {
				counter = &searchCounter{EngineStore: cfg.Store, peers: c.peers}
				cfg.Store = counter
				cfg.SweepInterval = 5 * time.Second
			})
			synctest.Wait()
			time.Sleep(time.Minute + time.Millisecond)
			synctest.Wait()
			if n := counter.searches.Load(); n != c.want {
				t.Fatalf("peers %v: %d searches in a minute of 5 s sweeps, want %d", c.peers, n, c.want)
			}
		})
	}
}
