package sqlite

import (
	"context"
	"errors"
	"fmt"

	"github.com/heraldstreams/herald/store/sqlstore"
)

// funcOp runs a function inside the committer's batch, within its own
// savepoint: a rule violation (sqlstore.RuleError) rolls back only this op's writes
// and becomes its error; any other error aborts the batch.
type funcOp struct {
	fn      func(b *batch) error
	done    chan struct{}
	err     error
	relaxed bool
	// checksFirst: every rule error of fn comes before its first change,
	// so it needs no savepoint to roll back (two statements fewer).
	checksFirst bool
}

// relaxer is implemented by ops that may be committed without waiting for
// the disk (see writeRelaxed).
type relaxer interface {
	relaxedOK() bool
}

func (o *funcOp) relaxedOK() bool { return o.relaxed }

func (o *funcOp) apply(b *batch) error {
	if o.checksFirst {
		err := o.fn(b)
		var rule *sqlstore.RuleError
		if errors.As(err, &rule) {
			o.err = rule // nothing was changed
			return nil
		}
		return err
	}
	if _, err := b.exec(`SAVEPOINT op`); err != nil {
		return fmt.Errorf("savepoint: %w", err)
	}
	mark := b.s.seg.mark()
	err := o.fn(b)
	var rule *sqlstore.RuleError
	if errors.As(err, &rule) {
		o.err = rule
		if _, err := b.exec(`ROLLBACK TO op`); err != nil {
			return fmt.Errorf("rollback to savepoint: %w", err)
		}
		b.s.seg.rollback(mark)  // the bytes it appended are indexed nowhere
		b.pend = pendingChunk{} // nor is its chunk: none was pending before it
	} else if err != nil {
		return err
	}
	if _, err := b.exec(`RELEASE op`); err != nil {
		return fmt.Errorf("release savepoint: %w", err)
	}
	return nil
}

func (o *funcOp) finish(err error) {
	if err != nil {
		o.err = err
	}
	close(o.done)
}

// write runs fn in the committer (group committed with other writes) and
// returns its rule error, or the batch's error.
func (s *Store) write(ctx context.Context, fn func(b *batch) error) error {
	return s.submitFunc(ctx, &funcOp{fn: fn, done: make(chan struct{})})
}

// writeChecked is write for an fn whose rule errors all come before its
// first change (a compare-and-set first): it runs without a savepoint.
func (s *Store) writeChecked(ctx context.Context, fn func(b *batch) error) error {
	return s.submitFunc(ctx, &funcOp{fn: fn, done: make(chan struct{}), checksFirst: true})
}

// writeRelaxed is write for bookkeeping whose loss costs nothing but
// repeated work (the delivery engine's leases, outcomes and cursors: a
// lost one only sends again). A batch made only of such writes commits
// without waiting for fsync; the next durable commit, or a checkpoint,
// makes it durable with everything before it (the WAL is written in
// order). A process crash loses nothing: the WAL is written before the
// commit returns. Only a machine crash may lose it.
func (s *Store) writeRelaxed(ctx context.Context, fn func(b *batch) error) error {
	return s.submitFunc(ctx, &funcOp{fn: fn, done: make(chan struct{}), relaxed: true})
}

func (s *Store) submitFunc(ctx context.Context, o *funcOp) error {
	if err := s.submit(ctx, o, o.done); err != nil {
		return err
	}
	return o.err
}
