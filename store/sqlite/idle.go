package sqlite

import (
	"context"
	"sync/atomic"

	"github.com/heraldstreams/herald/store"
)

// What an idle embedded store does: nothing that touches the database.
// Its periodic work ran SQLite's write path every two seconds (the
// replica heartbeat, a relaxed write) and a checkpoint every second,
// whose code and memory came back into an idle server's RSS after each
// give-back (internal/idlemem), and which wrote and synced the WAL and the
// database file for nothing: one process owns the database (the lock
// file), Open ends the previous process's claims and forgets its
// replicas, and no other replica ever reads a beat.

// afterBatch is what the committer does after each batch: it counts the
// batch (the checkpoint loop copies the WAL only when batches came since
// it last copied all of it), publishes a broken segment log to the
// heartbeat, and restarts a large WAL (restartWAL).
func (s *Store) afterBatch() {
	s.batches.Add(1)
	if err := s.seg.broken; err != nil && s.broken.Load() == nil {
		s.broken.Store(&err)
	}
	s.restartWAL(context.Background())
}

// ReplicaBeat implements store.ReplicaStore without writing: no peer
// reads the beat (Peers is false). It answers what a beat would find
// wrong: the store is closed, or its segment log broke (no write goes
// through after that until the store is opened again), so that
// readiness still follows the store's health.
func (s *Store) ReplicaBeat(context.Context, *store.ReplicaBeatParams) error {
	s.closeMu.RLock()
	closed := s.closed
	s.closeMu.RUnlock()
	if closed {
		return store.ErrClosedStore
	}
	if err := s.broken.Load(); err != nil {
		return *err
	}
	return nil
}

// ReplicaReap implements store.ReplicaStore: there is no other replica
// to reap. The claims of the process before this one ended when the
// store opened (startClaims), and none other can take any.
func (s *Store) ReplicaReap(ctx context.Context, _ *store.ReplicaReapParams) (*store.ReplicaReapResult, error) {
	return &store.ReplicaReapResult{}, s.ReplicaBeat(ctx, nil)
}

// walWatch tells the checkpoint loop when a checkpoint has nothing to
// copy: no batch committed since one copied the whole WAL.
type walWatch struct {
	// clean says the last checkpoint copied every frame; batches is the
	// committer's count read before it ran.
	clean   bool
	batches int64
	// runs counts the checkpoints run.
	runs atomic.Int64
}

// unchanged reports whether the WAL holds nothing to copy: batches (the
// count now) is the count before a checkpoint that copied everything.
func (w *walWatch) unchanged(batches int64) bool {
	return w.clean && batches == w.batches
}

// checkpointed records a checkpoint, run after the count was batches,
// and whether it copied every frame.
func (w *walWatch) checkpointed(batches int64, all bool) {
	w.clean, w.batches = all, batches
	w.runs.Add(1)
}
