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
