package sqlstore

import (
	"context"
	"fmt"

	"github.com/heraldstreams/herald/store"
)

var _ store.KeyStore = (*Store)(nil)

// KeyCreate implements store.KeyStore. It is a durable write: a key
// answered to its creator works after a crash.
func (s *Store) KeyCreate(ctx context.Context, params *store.KeyCreateParams) (*store.Key, error) {
	k := params.Key
	k.CreatedAt = params.Now
	k.Hash = append([]byte(nil), k.Hash...)
	values, err := KeyValues(&k)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", s.d.Name, err)
	}
	err = s.write(ctx, ChecksFirst, func(tx Tx) error {
		n, err := tx.Exec(`INSERT INTO api_keys (`+KeyColumns+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
			ON CONFLICT (id) DO NOTHING`, values...)
		if err != nil {
			return s.errorf("insert key", err)
		}
		if n == 0 {
			return rule(store.ErrKeyExists)
		}
		return tx.Invalidate(store.Invalidation{Kind: store.CacheKey, ID: k.ID})
	})
	if err != nil {
		return nil, err
	}
	return &k, nil
}

// KeyGet implements store.KeyStore.
func (s *Store) KeyGet(ctx context.Context, params *store.KeyGetParams) (*store.Key, error) {
	return get(ctx, s, &query{sql: `SELECT ` + KeyColumns + ` FROM api_keys WHERE id = $1`, args: []any{params.ID}},
		"read key", store.ErrKeyNotFound, ScanKey)
}

// KeyList implements store.KeyStore.
func (s *Store) KeyList(ctx context.Context, params *store.KeyListParams) ([]store.Key, error) {
	q := &query{sql: `SELECT ` + KeyColumns + ` FROM api_keys WHERE id > $1`, args: []any{params.After}}
	if params.Tenant != "" {
		q.add(` AND tenant = `, params.Tenant)
	}
	q.sql += ` ORDER BY id`
	if params.Limit > 0 {
		q.add(` LIMIT `, params.Limit)
	}
	return list(ctx, s, q, "list keys", ScanKey)
}

// KeyDelete implements store.KeyStore.
func (s *Store) KeyDelete(ctx context.Context, params *store.KeyDeleteParams) error {
	return s.write(ctx, ChecksFirst, func(tx Tx) error {
		n, err := tx.Exec(`DELETE FROM api_keys WHERE id = $1`, params.ID)
		if err != nil {
			return s.errorf("delete key", err)
		}
		if n == 0 {
			return rule(store.ErrKeyNotFound)
		}
		return tx.Invalidate(store.Invalidation{Kind: store.CacheKey, ID: params.ID})
	})
}
