package sqlite

import (
	"context"
	"runtime"
	"sync"
	"testing"
)

// A batch made only of relaxed writes commits without fsync; a batch with
// any durable write in it waits for the disk, for every op in it.
func TestRelaxedWritesNeverRelaxADurableOne(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, Config{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Error(err)
		}
	})
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

	// Hold the committer in one batch while a relaxed and a durable write
	// queue behind it: they share the next batch, which is durable.
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
	var mixed int
	queued := func(o *funcOp) {
		wg.Go(func() {
			if err := s.submitFunc(ctx, o); err != nil {
				t.Error(err)
			}
		})
	}
	queued(&funcOp{fn: mode(&mixed), done: make(chan struct{}), relaxed: true})
	queued(&funcOp{fn: func(*batch) error { return nil }, done: make(chan struct{})})
	for len(s.ops) < 2 {
		runtime.Gosched() // both are queued behind the held batch
	}
	close(hold)
	wg.Wait()
	if mixed != 2 {
		t.Fatalf("relaxed write batched with a durable one: synchronous = %d, want 2", mixed)
	}
}
