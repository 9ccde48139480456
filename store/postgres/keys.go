package postgres

import (
	"context"
	"fmt"

	"github.com/heraldstreams/herald/store"
	"github.com/heraldstreams/herald/store/internal/codec"
)

var _ store.KeyStore = (*Store)(nil)

// KeyCreate implements store.KeyStore.
func (s *Store) KeyCreate(ctx context.Context, params *store.KeyCreateParams) (*store.Key, error) {
	k := params.Key
	k.CreatedAt = params.Now
	k.Hash = append([]byte(nil), k.Hash...)
	values, err := codec.KeyValues(&k)
	if err != nil {
		return nil, fmt.Errorf("postgres: %w", err)
	}
	err = s.tx(ctx, func(tx *wtx) error {
		tag, err := tx.Exec(ctx, `INSERT INTO api_keys (`+codec.KeyColumns+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
			ON CONFLICT (id) DO NOTHING`, values...)
		if err != nil {
			return fmt.Errorf("postgres: insert key: %w", err)
		}
		if tag.RowsAffected() == 0 {
			return store.ErrKeyExists
		}
		return s.invalidate(ctx, tx, store.Invalidation{Kind: store.CacheKey, ID: k.ID})
	})
	if err != nil {
		return nil, err
	}
	return &k, nil
}

// KeyGet implements store.KeyStore.
func (s *Store) KeyGet(ctx context.Context, params *store.KeyGetParams) (*store.Key, error) {
	if err := s.usable(); err != nil {
		return nil, err
	}
	k, err := codec.ScanKey(s.pool.QueryRow(ctx, `SELECT `+codec.KeyColumns+` FROM api_keys WHERE id = $1`, params.ID))
	if isNoRows(err) {
		return nil, store.ErrKeyNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("postgres: read key: %w", err)
	}
	return &k, nil
}

// KeyList implements store.KeyStore.
func (s *Store) KeyList(ctx context.Context, params *store.KeyListParams) ([]store.Key, error) {
	q := &query{sql: `SELECT ` + codec.KeyColumns + ` FROM api_keys WHERE id > $1`, args: []any{params.After}}
	if params.Tenant != "" {
		q.add(` AND tenant = `, params.Tenant)
	}
	q.sql += ` ORDER BY id`
	if params.Limit > 0 {
		q.add(` LIMIT `, params.Limit)
	}
	return collect(ctx, s, q, "list keys", codec.ScanKey)
}

// KeyDelete implements store.KeyStore.
func (s *Store) KeyDelete(ctx context.Context, params *store.KeyDeleteParams) error {
	return s.tx(ctx, func(tx *wtx) error {
		tag, err := tx.Exec(ctx, `DELETE FROM api_keys WHERE id = $1`, params.ID)
		if err != nil {
			return fmt.Errorf("postgres: delete key: %w", err)
		}
		if tag.RowsAffected() == 0 {
			return store.ErrKeyNotFound
		}
		return s.invalidate(ctx, tx, store.Invalidation{Kind: store.CacheKey, ID: params.ID})
	})
}

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
