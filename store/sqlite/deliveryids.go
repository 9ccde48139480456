package sqlite

import (
	"context"
	"crypto/rand"
	"fmt"

	"github.com/heraldstreams/herald/store/internal/codec"
)

// loadDeliveryIDs reads the delivery id key, making it at the first start
// that finds none. It runs at Open, before the committer starts.
func (s *Store) loadDeliveryIDs(ctx context.Context) error {
	var key []byte
	err := execTx(ctx, s.wconn, func() error {
		err := s.wconn.QueryRowContext(ctx, `SELECT key FROM id_keys WHERE name = ?`, codec.DeliveryIDKeyName).Scan(&key)
		if !isNoRows(err) {
			return err
		}
		key = make([]byte, codec.DeliveryIDKeySize)
		if _, err := rand.Read(key); err != nil {
			return err
		}
		_, err = s.wconn.ExecContext(ctx, `INSERT INTO id_keys (name, key) VALUES (?, ?)`, codec.DeliveryIDKeyName, key)
		return err
	})
	if err != nil {
		return fmt.Errorf("sqlite: delivery id key: %w", err)
	}
	if s.ids, err = codec.NewDeliveryIDs(key); err != nil {
		return fmt.Errorf("sqlite: %w", err)
	}
	return nil
}
