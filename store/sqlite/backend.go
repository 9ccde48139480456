package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"

	"github.com/heraldstreams/herald/store"
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
	EachJSON:   func(expr, alias string) string { return `json_each(` + expr + `) AS ` + alias },
	TextPairs:  func(ph string) string { return `SELECT value ->> 0 AS a, value ->> 1 AS b FROM json_each(` + ph + `)` },
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
		fn: func(b *batch) error { return fn(txOf(b)) }}
	return k.s.submitFunc(ctx, o)
}

// Read implements sqlstore.Backend.
func (k backend) Read(ctx context.Context, fn func(sqlstore.Executor) error) error {
	return fn(stmtExec{ctx, k.s.readerStmt})
}

// stmtExec runs statements prepared once by prepare: on the writer
// connection (Store.writerStmt: the committer's, or Open's before the
// committer starts), or on the read pool (Store.readerStmt, whose
// connections refuse writes).
type stmtExec struct {
	ctx     context.Context
	prepare func(context.Context, string) (*sql.Stmt, error)
}

// writerExec is the executor of the writer connection.
func (s *Store) writerExec(ctx context.Context) stmtExec { return stmtExec{ctx, s.writerStmt} }

func (x stmtExec) QueryRow(sql string, args ...any) sqlstore.Row {
	stmt, err := x.prepare(x.ctx, sql)
	if err != nil {
		return errRow{err}
	}
	return stmt.QueryRowContext(x.ctx, args...)
}

func (x stmtExec) Query(sql string, args []any, each func(sqlstore.Row) error) error {
	stmt, err := x.prepare(x.ctx, sql)
	if err != nil {
		return err
	}
	rows, err := stmt.QueryContext(x.ctx, args...)
	return eachRow(rows, err, each)
}

func (x stmtExec) Exec(sql string, args ...any) (int64, error) {
	res, err := x.exec(sql, args)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

func (x stmtExec) exec(sql string, args []any) (driverResult, error) {
	stmt, err := x.prepare(x.ctx, sql)
	if err != nil {
		return nil, err
	}
	return stmt.ExecContext(x.ctx, args...)
}

// driverResult is what an executed statement reports.
type driverResult interface {
	LastInsertId() (int64, error)
	RowsAffected() (int64, error)
}

// batchTx is the writer executor of one batch.
type batchTx struct {
	stmtExec
	b *batch
}

// InsertID implements sqlstore.Tx with the last insert id: RETURNING
// would make SQLite keep a statement journal, truncated at every
// statement.
func (t batchTx) InsertID(sql, _ string, args ...any) (int64, error) {
	res, err := t.exec(sql, args)
	if err != nil {
		return 0, err
	}
	if n, err := res.RowsAffected(); err != nil || n == 0 {
		return 0, err
	}
	return res.LastInsertId()
}

// txOf is the executor of a batch, made once per batch: a write's
// statements then cost no allocation for it.
func txOf(b *batch) *batchTx {
	if b.tx == nil {
		b.tx = &batchTx{b.s.writerExec(b.ctx), b}
	}
	return b.tx
}

// Invalidate implements sqlstore.Tx: the hub hears of it after the
// batch commits.
func (t batchTx) Invalidate(inv store.Invalidation) error {
	t.b.invalidate(inv.Kind, inv.ID)
	return nil
}

// connExec runs statements on a connection as they come, unprepared
// (migrations run once, before the committer starts).
type connExec struct {
	ctx  context.Context
	conn *sql.Conn
}

func (x connExec) QueryRow(q string, args ...any) sqlstore.Row {
	return x.conn.QueryRowContext(x.ctx, sqlstore.Numbered(q), args...)
}

func (x connExec) Query(q string, args []any, each func(sqlstore.Row) error) error {
	rows, err := x.conn.QueryContext(x.ctx, sqlstore.Numbered(q), args...)
	return eachRow(rows, err, each)
}

func (x connExec) Exec(q string, args ...any) (int64, error) {
	res, err := x.conn.ExecContext(x.ctx, sqlstore.Numbered(q), args...)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

// eachRow calls each for every row of a query that returned rows, err.
func eachRow(rows *sql.Rows, err error, each func(sqlstore.Row) error) error {
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
