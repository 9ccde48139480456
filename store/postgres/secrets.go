package postgres

import (
	"context"
	"fmt"

	"github.com/heraldstreams/herald/store"
)

// SecretStats says what Open did to the secret columns.
type SecretStats = store.SecretStats

// prepareSecrets runs at Open: the core checks the key and seals or
// rewraps the secret columns (sqlstore.Store.PrepareSecrets) in one
// transaction, under an advisory lock of the schema, so replicas starting
// together do it once.
func (s *Store) prepareSecrets(ctx context.Context) error {
	err := s.tx(ctx, func(tx *wtx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtext('herald secrets ' || current_schema()))`); err != nil {
			return fmt.Errorf("lock: %w", err)
		}
		return s.PrepareSecrets(pgTx{ctx, tx, s})
	})
	if err != nil {
		return fmt.Errorf("postgres: encrypt secrets: %w", err)
	}
	s.LogSecrets()
	return nil
}
