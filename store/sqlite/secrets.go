package sqlite

import (
	"context"
	"fmt"

	"github.com/heraldstreams/herald/store"
)

// SecretStats says what Open did to the secret columns.
type SecretStats = store.SecretStats

// prepareSecrets runs at Open, before the committer starts: the core
// checks the key and seals or rewraps the secret columns in one
// transaction (sqlstore.Store.PrepareSecrets). What is SQLite's is
// around it: the values replaced are overwritten where they lay
// (secure_delete), and the WAL that holds their old pages is emptied once
// the new ones are in the database file, so a plaintext, or a value under
// a retired key, is not left behind in free space.
func (s *Store) prepareSecrets(ctx context.Context) error {
	var secureDelete int
	if err := s.wconn.QueryRowContext(ctx, `PRAGMA secure_delete`).Scan(&secureDelete); err != nil {
		return fmt.Errorf("sqlite: read secure delete: %w", err)
	}
	if _, err := s.wconn.ExecContext(ctx, `PRAGMA secure_delete = ON`); err != nil {
		return fmt.Errorf("sqlite: configure secure delete: %w", err)
	}
	if err := execTx(ctx, s.wconn, func() error { return s.PrepareSecrets(s.writerExec(ctx)) }); err != nil {
		return fmt.Errorf("sqlite: encrypt secrets: %w", err)
	}
	if _, err := s.wconn.ExecContext(ctx, fmt.Sprintf(`PRAGMA secure_delete = %d`, secureDelete)); err != nil {
		return fmt.Errorf("sqlite: configure secure delete: %w", err)
	}
	if st := s.SecretStats(); st.Sealed > 0 || st.Rewrapped > 0 {
		// Only this connection is open yet: the checkpoint copies every
		// frame and truncates the WAL.
		var busy, frames, done int
		if err := s.wconn.QueryRowContext(ctx, `PRAGMA wal_checkpoint(TRUNCATE)`).Scan(&busy, &frames, &done); err != nil {
			return fmt.Errorf("sqlite: checkpoint after encrypting secrets: %w", err)
		}
		if busy != 0 {
			return fmt.Errorf("sqlite: checkpoint after encrypting secrets: the database is busy")
		}
		s.LogSecrets()
	}
	return nil
}
