package sqlstore

import (
	"context"
	"fmt"
)

// query is a statement built piece by piece, its placeholders numbered as
// arguments are added.
type query struct {
	sql  string
	args []any
}

// add appends a clause ending in a placeholder for v.
func (q *query) add(clause string, v any) {
	q.args = append(q.args, v)
	q.sql += fmt.Sprintf("%s$%d", clause, len(q.args))
}

// collect runs q on x and scans every row with scan.
func collect[T any](x Executor, q *query, scan func(Row) (T, error)) ([]T, error) {
	var out []T
	err := x.Query(q.sql, q.args, func(r Row) error {
		v, err := scan(r)
		if err != nil {
			return err
		}
		out = append(out, v)
		return nil
	})
	return out, err
}

// list reads the rows of q with scan, naming a failure with what.
func list[T any](ctx context.Context, s *Store, q *query, what string, scan func(Row) (T, error)) ([]T, error) {
	var out []T
	err := s.b.Read(ctx, func(x Executor) error {
		var err error
		out, err = collect(x, q, scan)
		return err
	})
	if err != nil {
		return nil, s.errorf(what, err)
	}
	return out, nil
}

// countBy reads a statement of (key, count) rows into out, which holds
// the keys that count 0 when no row names them.
func (s *Store) countBy(ctx context.Context, sql, what string, out map[string]int) (map[string]int, error) {
	type kv struct {
		k string
		n int
	}
	rows, err := list(ctx, s, &query{sql: sql}, what, func(r Row) (kv, error) {
		var v kv
		return v, r.Scan(&v.k, &v.n)
	})
	if err != nil {
		return nil, err
	}
	for _, v := range rows {
		out[v.k] = v.n
	}
	return out, nil
}

// get reads one row of q with scan; missing is the contract's error when
// there is none.
func get[T any](ctx context.Context, s *Store, q *query, what string, missing error, scan func(Row) (T, error)) (*T, error) {
	rows, err := list(ctx, s, q, what, scan)
	if err != nil {
		return nil, err
	}
	if len(rows) == 0 {
		return nil, missing
	}
	return &rows[0], nil
}
