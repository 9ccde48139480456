package sqlite

import (
	"context"
	"fmt"

	"github.com/heraldstreams/herald/store"
	"github.com/heraldstreams/herald/store/internal/codec"
)

var _ store.KeyStore = (*Store)(nil)

const keyColumns = codec.KeyColumns

var scanKey = codec.ScanKey

// KeyCreate implements store.KeyStore. It is a durable write: a key
// answered to its creator works after a crash.
func (s *Store) KeyCreate(ctx context.Context, params *store.KeyCreateParams) (*store.Key, error) {
	k := params.Key
	k.CreatedAt = params.Now
	k.Hash = append([]byte(nil), k.Hash...)
	values, err := codec.KeyValues(&k)
	if err != nil {
		return nil, fmt.Errorf("sqlite: %w", err)
	}
	err = s.writeChecked(ctx, func(b *batch) error {
		var n int
		if err := s.wconn.QueryRowContext(b.ctx, `SELECT count(*) FROM api_keys WHERE id = ?`, k.ID).Scan(&n); err != nil {
			return fmt.Errorf("read key: %w", err)
		}
		if n > 0 {
			return ruleError{store.ErrKeyExists}
		}
		if _, err := b.exec(`INSERT INTO api_keys (`+keyColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`, values...); err != nil {
			return fmt.Errorf("insert key: %w", err)
		}
		b.invalidate(store.CacheKey, k.ID)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return &k, nil
}

// KeyGet implements store.KeyStore.
func (s *Store) KeyGet(ctx context.Context, params *store.KeyGetParams) (*store.Key, error) {
	k, err := scanKey(s.reader.QueryRowContext(ctx, `SELECT `+keyColumns+` FROM api_keys WHERE id = ?`, params.ID))
	if isNoRows(err) {
		return nil, store.ErrKeyNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("sqlite: read key: %w", err)
	}
	return &k, nil
}

// KeyList implements store.KeyStore.
func (s *Store) KeyList(ctx context.Context, params *store.KeyListParams) ([]store.Key, error) {
	q := `SELECT ` + keyColumns + ` FROM api_keys WHERE id > ?`
	args := []any{params.After}
	if params.Tenant != "" {
		q += ` AND tenant = ?`
		args = append(args, params.Tenant)
	}
	q += ` ORDER BY id`
	if params.Limit > 0 {
		q += ` LIMIT ?`
		args = append(args, params.Limit)
	}
	rows, err := s.reader.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("sqlite: list keys: %w", err)
	}
	defer rows.Close()
	var out []store.Key
	for rows.Next() {
		k, err := scanKey(rows)
		if err != nil {
			return nil, fmt.Errorf("sqlite: list keys: %w", err)
		}
		out = append(out, k)
	}
	return out, rows.Err()
}

// KeyDelete implements store.KeyStore.
func (s *Store) KeyDelete(ctx context.Context, params *store.KeyDeleteParams) error {
	return s.writeChecked(ctx, func(b *batch) error {
		res, err := b.exec(`DELETE FROM api_keys WHERE id = ?`, params.ID)
		if err != nil {
			return fmt.Errorf("delete key: %w", err)
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n == 0 {
			return ruleError{store.ErrKeyNotFound}
		}
		b.invalidate(store.CacheKey, params.ID)
		return nil
	})
}
