package sqlite

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/heraldstreams/herald/store"
	"github.com/heraldstreams/herald/store/sqlstore"
)

// A batch made only of relaxed writes commits without fsync; a batch with
// any durable write in it waits for the disk, for every op in it.
func TestRelaxedWritesNeverRelaxADurableOne(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := openStore(t, Config{Dir: t.TempDir()})
	// synchronous as the op's own commit will use it: 1 NORMAL, 2 FULL.
	mode := func(got *int) func(b *batch) error {
		return func(b *batch) error {
			return b.s.wconn.QueryRowContext(b.ctx, `PRAGMA synchronous`).Scan(got)
		}
	}
	var alone, durable, after int
	if err := s.writeRelaxed(ctx, mode(&alone)); err != nil {
		t.Fatal(err)
	}
	if err := s.write(ctx, mode(&durable)); err != nil {
		t.Fatal(err)
	}
	if err := s.writeRelaxed(ctx, mode(&after)); err != nil {
		t.Fatal(err)
	}
	if alone != 1 || durable != 2 || after != 1 {
		t.Fatalf("synchronous = %d, %d, %d; want 1 (relaxed), 2 (durable), 1 (relaxed)", alone, durable, after)
	}

	// A relaxed and a durable write queued behind a held batch share the
	// next batch, which is durable.
	var mixed int
	errs := inOneBatch(t, s,
		&funcOp{fn: mode(&mixed), done: make(chan struct{}), relaxed: true},
		&funcOp{fn: func(*batch) error { return nil }, done: make(chan struct{})})
	if errs[0] != nil || errs[1] != nil {
		t.Fatal(errs)
	}
	if mixed != 2 {
		t.Fatalf("relaxed write batched with a durable one: synchronous = %d, want 2", mixed)
	}
}

// A relaxed write waits until RelaxedInterval has passed since the last
// relaxed commit, gathering others; a durable write is never held back,
// and takes the waiting relaxed writes into its commit.
func TestRelaxedWritesLinger(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		s, err := Open(ctx, Config{Dir: t.TempDir(), RelaxedInterval: time.Second, CheckpointInterval: time.Hour, TouchFlushInterval: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		defer func() {
			if err := s.Close(); err != nil {
				t.Error(err)
			}
		}()
		nop := func(*batch) error { return nil }
		start := time.Now()
		if err := s.writeRelaxed(ctx, nop); err != nil { // none before it: no wait
			t.Fatal(err)
		}
		if waited := time.Since(start); waited != 0 {
			t.Fatalf("the first relaxed write waited %v", waited)
		}
		var done atomic.Int32
		relaxed := func() {
			if err := s.writeRelaxed(ctx, nop); err != nil {
				t.Error(err)
			}
			done.Add(1)
		}
		go relaxed()
		synctest.Wait()
		if done.Load() != 0 {
			t.Fatal("a relaxed write right after another did not wait")
		}
		if err := s.write(ctx, nop); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if waited := time.Since(start); done.Load() != 1 || waited != 0 {
			t.Fatalf("after a durable write: %d relaxed done, %v waited; want 1 and none", done.Load(), waited)
		}
		go relaxed()
		go relaxed()
		synctest.Wait()
		if done.Load() != 1 {
			t.Fatal("relaxed writes did not wait")
		}
		time.Sleep(time.Second)
		synctest.Wait()
		if done.Load() != 3 {
			t.Fatalf("%d relaxed writes done a second later, want 3", done.Load())
		}
	})
}

// A checked write (its rule errors come before its first change) runs
// without a savepoint: its rule error is its own, and the batch it shares
// commits the other writes.
func TestCheckedWriteRuleErrorKeepsTheBatch(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := openStore(t, Config{Dir: t.TempDir()})
	errs := inOneBatch(t, s,
		&funcOp{fn: func(*batch) error { return sqlstore.Rule(store.ErrConsumerConflict) }, done: make(chan struct{}), checksFirst: true},
		&funcOp{fn: func(b *batch) error {
			_, err := b.exec(`INSERT INTO schema_migrations (version, applied_at) VALUES ('test', 0)`)
			return err
		}, done: make(chan struct{})})
	checkedErr, plainErr := errs[0], errs[1]
	if !errors.Is(checkedErr, store.ErrConsumerConflict) || plainErr != nil {
		t.Fatalf("checked write: %v, plain write: %v", checkedErr, plainErr)
	}
	var n int
	if err := s.reader.QueryRowContext(ctx, `SELECT count(*) FROM schema_migrations WHERE version = 'test'`).Scan(&n); err != nil || n != 1 {
		t.Fatalf("the batch's other write: %d rows, %v", n, err)
	}
}

// openStore opens a store with cfg, closed when the test ends.
func openStore(t *testing.T, cfg Config) *Store {
	t.Helper()
	s, err := Open(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Error(err)
		}
	})
	return s
}

// inOneBatch holds the committer in a batch until every op is queued
// behind it, so the ops share the next batch, and returns their errors.
func inOneBatch(t *testing.T, s *Store, ops ...*funcOp) []error {
	t.Helper()
	ctx := context.Background()
	hold, held := make(chan struct{}), make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		if err := s.write(ctx, func(*batch) error {
			close(held)
			<-hold
			return nil
		}); err != nil {
			t.Error(err)
		}
	})
	<-held
	errs := make([]error, len(ops))
	for i, o := range ops {
		wg.Go(func() { errs[i] = s.submitFunc(ctx, o) })
		for len(s.ops) < i+1 {
			runtime.Gosched() // queued in order behind the held batch
		}
	}
	close(hold)
	wg.Wait()
	return errs
}
