package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"

	"github.com/heraldstreams/herald/store"
	"github.com/heraldstreams/herald/store/internal/codec"
	"github.com/heraldstreams/herald/store/sqlstore"
)

// dialect is how SQLite's SQL differs from the core's: one writer runs at
// a time (the committer), so nothing locks rows or tables.
var dialect = sqlstore.Dialect{
	Name:       "sqlite",
	IsNoRows:   isNoRows,
	LockTable:  func(string) string { return "" },
	LeaseToken: `UPDATE lease_tokens SET last = last + 1 WHERE id = 1 RETURNING last`,
	Int64s:     int64s,
}

// int64s is a list of integers as a JSON array, whose values json_each
// returns.
func int64s(ph string, v []int64) (string, any) {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // integers always marshal
	}
	return `SELECT value FROM json_each(` + ph + `)`, string(b)
}

// backend runs the core's statements: writes in the committer's batches
// (group committed with every other write), reads on the read pool.
type backend struct{ s *Store }

// Write implements sqlstore.Backend. A rule error rolls back the write's
// own changes (its savepoint) and leaves the rest of the batch.
func (k backend) Write(ctx context.Context, mode sqlstore.WriteMode, fn func(sqlstore.Tx) error) error {
	o := &funcOp{done: make(chan struct{}), checksFirst: mode == sqlstore.ChecksFirst, relaxed: mode == sqlstore.Relaxed,
		fn: func(b *batch) error {
			err := fn(batchTx{wexec{b.s, b.ctx}, b})
			var r *sqlstore.RuleError
			if errors.As(err, &r) {
				return ruleError{r}
			}
			return err
		}}
	return k.s.submitFunc(ctx, o)
}

// Read implements sqlstore.Backend.
func (k backend) Read(ctx context.Context, fn func(sqlstore.Executor) error) error {
	return fn(rexec{k.s, ctx})
}

// wexec runs statements on the writer connection: the committer's, or
// Open's before the committer starts. Statements are prepared once.
type wexec struct {
	s   *Store
	ctx context.Context
}

func (x wexec) QueryRow(sql string, args ...any) codec.Row {
	stmt, err := x.s.writerStmt(x.ctx, codec.Numbered(sql))
	if err != nil {
		return errRow{err}
	}
	return stmt.QueryRowContext(x.ctx, args...)
}

func (x wexec) Query(sql string, args []any, each func(codec.Row) error) error {
	stmt, err := x.s.writerStmt(x.ctx, codec.Numbered(sql))
	if err != nil {
		return err
	}
	rows, err := stmt.QueryContext(x.ctx, args...)
	return eachRow(rows, err, each)
}

func (x wexec) Exec(sql string, args ...any) (int64, error) {
	stmt, err := x.s.writerStmt(x.ctx, codec.Numbered(sql))
	if err != nil {
		return 0, err
	}
	res, err := stmt.ExecContext(x.ctx, args...)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

// batchTx is the writer executor of one batch.
type batchTx struct {
	wexec
	b *batch
}

// InsertID implements sqlstore.Tx with the last insert id: RETURNING
// would make SQLite keep a statement journal, truncated at every
// statement.
func (t batchTx) InsertID(sql, _ string, args ...any) (int64, error) {
	stmt, err := t.s.writerStmt(t.ctx, codec.Numbered(sql))
	if err != nil {
		return 0, err
	}
	res, err := stmt.ExecContext(t.ctx, args...)
	if err != nil {
		return 0, err
	}
	if n, err := res.RowsAffected(); err != nil || n == 0 {
		return 0, err
	}
	return res.LastInsertId()
}

// txOf is the executor of a batch.
func txOf(b *batch) batchTx { return batchTx{wexec{b.s, b.ctx}, b} }

// Invalidate implements sqlstore.Tx: the hub hears of it after the
// batch commits.
func (t batchTx) Invalidate(inv store.Invalidation) error {
	t.b.invalidate(inv.Kind, inv.ID)
	return nil
}

// rexec runs statements on the read pool, each prepared once.
type rexec struct {
	s   *Store
	ctx context.Context
}

func (x rexec) QueryRow(sql string, args ...any) codec.Row {
	stmt, err := x.s.readerStmt(x.ctx, codec.Numbered(sql))
	if err != nil {
		return errRow{err}
	}
	return stmt.QueryRowContext(x.ctx, args...)
}

func (x rexec) Query(sql string, args []any, each func(codec.Row) error) error {
	stmt, err := x.s.readerStmt(x.ctx, codec.Numbered(sql))
	if err != nil {
		return err
	}
	rows, err := stmt.QueryContext(x.ctx, args...)
	return eachRow(rows, err, each)
}

// Exec refuses: the read pool is read-only.
func (x rexec) Exec(string, ...any) (int64, error) {
	return 0, errors.New("sqlite: a write on the read pool")
}

// eachRow calls each for every row of a query that returned rows, err.
func eachRow(rows *sql.Rows, err error, each func(codec.Row) error) error {
	if err != nil {
		return err
	}
	for rows.Next() {
		if err := each(rows); err != nil {
			return errors.Join(err, rows.Close())
		}
	}
	return errors.Join(rows.Err(), rows.Close())
}

// errRow is a row whose statement could not be prepared.
type errRow struct{ err error }

func (r errRow) Scan(...any) error { return r.err }
