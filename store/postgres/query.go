package postgres

import (
	"context"
	"fmt"

	"github.com/heraldstreams/herald/store/internal/codec"
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

// collect runs q and scans every row with scan.
func collect[T any](ctx context.Context, s *Store, q *query, what string, scan func(codec.Row) (T, error)) ([]T, error) {
	if err := s.usable(); err != nil {
		return nil, err
	}
	rows, err := s.pool.Query(ctx, q.sql, q.args...)
	if err != nil {
		return nil, fmt.Errorf("postgres: %s: %w", what, err)
	}
	defer rows.Close()
	var out []T
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, fmt.Errorf("postgres: %s: %w", what, err)
		}
		out = append(out, v)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("postgres: %s: %w", what, err)
	}
	return out, nil
}
