package sqlite

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/heraldstreams/herald/store"
)

// An idle store touches its database for neither heartbeats nor
// checkpoints: a beat and a reap write nothing, and the WAL is
// checkpointed once after the open, then only after a batch committed.
func TestIdleStoreWritesNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		s, err := Open(ctx, Config{Dir: t.TempDir(), CheckpointInterval: time.Second, TouchFlushInterval: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Second + time.Millisecond)
		synctest.Wait()
		if n := s.wal.runs.Load(); n != 1 {
			t.Fatalf("%d checkpoints after the first interval, want 1", n)
		}
		batches := s.batches.Load()
		for i := range 10 {
			now := time.Now()
			if err := s.ReplicaBeat(ctx, &store.ReplicaBeatParams{Now: now}); err != nil {
				t.Fatalf("beat %d: %v", i, err)
			}
			if res, err := s.ReplicaReap(ctx, &store.ReplicaReapParams{Now: now, DeadAfter: time.Second}); err != nil || len(res.Replicas) != 0 {
				t.Fatalf("reap %d = %+v, %v", i, res, err)
			}
			time.Sleep(time.Second)
			synctest.Wait()
		}
		if n, b := s.wal.runs.Load(), s.batches.Load(); n != 1 || b != batches {
			t.Fatalf("idle for 10 s: %d checkpoints, %d batches; want 1 and %d", n, b, batches)
		}
		if err := s.write(ctx, func(*batch) error { return nil }); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Second)
		synctest.Wait()
		if n := s.wal.runs.Load(); n != 2 {
			t.Fatalf("%d checkpoints after a batch, want 2", n)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		if err := s.ReplicaBeat(ctx, &store.ReplicaBeatParams{Now: time.Now()}); !errors.Is(err, store.ErrClosedStore) {
			t.Fatalf("beat after Close = %v, want ErrClosedStore", err)
		}
	})
}

// Once the segment log is broken (no batch goes through until the store
// is opened again), every beat says so: readiness follows.
func TestBeatReportsBrokenSegmentLog(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, err := Open(ctx, Config{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := s.Close(); err != nil {
			t.Error(err)
		}
	}()
	if err := s.ReplicaBeat(ctx, &store.ReplicaBeatParams{Now: time.Now()}); err != nil {
		t.Fatalf("beat of a healthy store = %v", err)
	}
	broken := errors.New("segment record not undone")
	// Runs in the committer, which alone touches the segment log.
	if err := s.write(ctx, func(*batch) error { s.seg.broken = broken; return nil }); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := s.ReplicaBeat(ctx, &store.ReplicaBeatParams{Now: time.Now()}); !errors.Is(err, broken) {
			t.Fatalf("beat of a broken store = %v, want %v", err, broken)
		}
	}
	if _, err := s.ReplicaReap(ctx, &store.ReplicaReapParams{Now: time.Now(), DeadAfter: time.Second}); !errors.Is(err, broken) {
		t.Fatalf("reap of a broken store = %v", err)
	}
}

// The replay jobs the process before held (killed: their leases still
// run) are claimable as soon as the store opens again, as its other
// claims: the delivery engine's first sweep resumes them.
func TestOpenEndsThePreviousProcessReplayLeases(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cfg := Config{Dir: t.TempDir()}
	s := openStore(t, cfg)
	now := time.Now()
	job := &store.ReplayJob{ID: "rpl_1", EndpointID: "ep", Request: []byte(`{}`), Owner: "run-a", LeaseUntil: now.Add(time.Hour), CreatedAt: now}
	if err := s.ReplayJobCreate(ctx, job); err != nil {
		t.Fatal(err)
	}
	claim := func(s *Store) []store.ReplayJob {
		t.Helper()
		jobs, err := s.ReplayJobClaim(ctx, &store.ReplayJobClaimParams{Owner: "run-b", LeaseUntil: now.Add(time.Minute), Limit: 10, Now: now})
		if err != nil {
			t.Fatal(err)
		}
		return jobs
	}
	if jobs := claim(s); len(jobs) != 0 {
		t.Fatalf("claimed %d jobs whose lease runs", len(jobs))
	}
	s = reopen(t, s, cfg)
	if jobs := claim(s); len(jobs) != 1 || jobs[0].ID != "rpl_1" || jobs[0].Owner != "run-b" {
		t.Fatalf("after a reopen, claimed %+v", jobs)
	}
}
