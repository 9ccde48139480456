package sqlite

import (
	"context"
	"errors"
	"fmt"
)

// funcOp runs a function inside the committer's batch, within its own
// savepoint: a rule violation (ruleError) rolls back only this op's writes
// and becomes its error; any other error aborts the batch.
type funcOp struct {
	fn   func(b *batch) error
	done chan struct{}
	err  error
}

func (o *funcOp) apply(b *batch) error {
	if _, err := b.s.wconn.ExecContext(b.ctx, `SAVEPOINT op`); err != nil {
		return fmt.Errorf("savepoint: %w", err)
	}
	err := o.fn(b)
	var rule ruleError
	if errors.As(err, &rule) {
		o.err = rule.err
		if _, err := b.s.wconn.ExecContext(b.ctx, `ROLLBACK TO op`); err != nil {
			return fmt.Errorf("rollback to savepoint: %w", err)
		}
	} else if err != nil {
		return err
	}
	if _, err := b.s.wconn.ExecContext(b.ctx, `RELEASE op`); err != nil {
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
	o := &funcOp{fn: fn, done: make(chan struct{})}
	if err := s.submit(ctx, o, o.done); err != nil {
		return err
	}
	return o.err
}
