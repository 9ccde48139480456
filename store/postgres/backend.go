package postgres

import (
	"context"

	"github.com/heraldstreams/herald/store"
	"github.com/heraldstreams/herald/store/sqlstore"
	"github.com/jackc/pgx/v5"
)

// dialect is how PostgreSQL's SQL differs from the core's: replicas write
// at once, so a transaction locks the rows it goes on to update, and
// takes a table lock where it must be the table's only writer.
var dialect = sqlstore.Dialect{
	Name:      "postgres",
	IsNoRows:  isNoRows,
	ForUpdate: "FOR UPDATE",
	LockTable: func(table string) string { return `LOCK TABLE ` + table + ` IN EXCLUSIVE MODE` },
	// Handles claiming at once take different rows instead of waiting;
	// the claims of one endpoint run one at a time on its bucket row (see
	// sqlstore.Claims).
	SkipLocked:   `FOR UPDATE SKIP LOCKED`,
	DeliveryLock: `FOR UPDATE OF d SKIP LOCKED`,
	LeaseToken:   `SELECT nextval('delivery_lease_tokens')`,
	EachJSON: func(expr, alias string) string {
		return `json_array_elements_text(CAST(` + expr + ` AS json)) AS ` + alias + `(value)`
	},
	TextPairs: func(ph string) string {
		return `SELECT value ->> 0 AS a, value ->> 1 AS b FROM json_array_elements(CAST(` + ph + ` AS json))`
	},
	Int64s: func(ph string, v []int64) (string, any) {
		if v == nil {
			v = []int64{}
		}
		return `SELECT unnest(CAST(` + ph + ` AS BIGINT[]))`, v
	},
}

// backend runs the core's statements: every write is one transaction,
// run again when it lost a race (Store.tx); every read is on the pool.
type backend struct{ s *Store }

// Write implements sqlstore.Backend. Every write is durable when its
// transaction commits, whatever the mode.
func (k backend) Write(ctx context.Context, _ sqlstore.WriteMode, fn func(sqlstore.Tx) error) error {
	return k.s.tx(ctx, func(tx *wtx) error { return fn(pgTx{ctx, tx, k.s}) })
}

// Read implements sqlstore.Backend.
func (k backend) Read(ctx context.Context, fn func(sqlstore.Executor) error) error {
	if err := k.s.usable(); err != nil {
		return err
	}
	return unavailable(fn(poolExec{ctx, k.s}))
}

// pgTx runs statements in a write transaction.
type pgTx struct {
	ctx context.Context
	tx  *wtx
	s   *Store
}

func (t pgTx) QueryRow(sql string, args ...any) sqlstore.Row {
	return t.tx.QueryRow(t.ctx, sql, args...)
}

func (t pgTx) Query(sql string, args []any, each func(sqlstore.Row) error) error {
	rows, err := t.tx.Query(t.ctx, sql, args...)
	return eachRow(rows, err, each)
}

func (t pgTx) Exec(sql string, args ...any) (int64, error) {
	tag, err := t.tx.Exec(t.ctx, sql, args...)
	return tag.RowsAffected(), err
}

// InsertID implements sqlstore.Tx with RETURNING.
func (t pgTx) InsertID(sql, id string, args ...any) (int64, error) {
	var v int64
	err := t.tx.QueryRow(t.ctx, sql+` RETURNING `+id, args...).Scan(&v)
	if isNoRows(err) {
		return 0, nil
	}
	return v, err
}

// Invalidate implements sqlstore.Tx: a notification in the transaction,
// which every handle's listener hears when it commits.
func (t pgTx) Invalidate(inv store.Invalidation) error { return t.s.invalidate(t.ctx, t.tx, inv) }

// poolExec runs statements on the pool, each on its own.
type poolExec struct {
	ctx context.Context
	s   *Store
}

func (x poolExec) QueryRow(sql string, args ...any) sqlstore.Row {
	return x.s.pool.QueryRow(x.ctx, sql, args...)
}

func (x poolExec) Query(sql string, args []any, each func(sqlstore.Row) error) error {
	rows, err := x.s.pool.Query(x.ctx, sql, args...)
	return eachRow(rows, err, each)
}

func (x poolExec) Exec(sql string, args ...any) (int64, error) {
	tag, err := x.s.pool.Exec(x.ctx, sql, args...)
	return tag.RowsAffected(), err
}

// eachRow calls each for every row of a query that returned rows, err.
func eachRow(rows pgx.Rows, err error, each func(sqlstore.Row) error) error {
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		if err := each(rows); err != nil {
			return err
		}
	}
	return rows.Err()
}

// Peers implements store.Store: replicas share the database.
func (s *Store) Peers() bool { return true }
