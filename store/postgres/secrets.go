package postgres

import (
	"context"
	"encoding/base64"
	"fmt"

	"github.com/heraldstreams/herald/internal/secretbox"
	"github.com/heraldstreams/herald/store"
	"github.com/heraldstreams/herald/store/internal/codec"
	"github.com/jackc/pgx/v5"
)

// SecretStats says what Open did to the secret columns.
type SecretStats = codec.SecretStats

// sealText seals a secret for its column; without a Box it is stored as
// given.
func (s *Store) sealText(plain, table, row, column string) (string, error) {
	if s.box == nil {
		return plain, nil
	}
	v, err := s.box.SealText(plain, table, row, column)
	if err != nil {
		return "", fmt.Errorf("postgres: encrypt %s.%s: %w", table, column, err)
	}
	return v, nil
}

// openText opens a stored secret (see sealText).
func (s *Store) openText(stored, table, row, column string) (string, error) {
	if s.box == nil {
		// Open refuses a database with sealed values and no Box, so this
		// is a plaintext.
		return stored, nil
	}
	v, err := s.box.OpenText(stored, table, row, column)
	if err != nil {
		return "", fmt.Errorf("postgres: decrypt: %w", err)
	}
	return v, nil
}

// prepareSecrets runs at Open, in one transaction under an advisory lock
// (replicas starting together do it once): with a Box it checks that the
// Box opens what was sealed before, seals every plaintext secret, rewraps
// every value sealed with an older key and records the check under the
// current key. Without a Box, a database whose secrets are sealed is
// refused.
func (s *Store) prepareSecrets(ctx context.Context) error {
	err := s.tx(ctx, func(tx *wtx) error {
		s.secretStats = SecretStats{}
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtext('herald secrets ' || current_schema()))`); err != nil {
			return fmt.Errorf("lock: %w", err)
		}
		var check string
		err := tx.QueryRow(ctx, `SELECT value FROM secret_meta WHERE name = $1`, codec.KEKCheck).Scan(&check)
		found := err == nil
		if err != nil && !isNoRows(err) {
			return fmt.Errorf("read the key check: %w", err)
		}
		if s.box == nil {
			if found {
				return fmt.Errorf("%w: the secrets in the database are encrypted, and no key-encryption key was given", secretbox.ErrWrongKey)
			}
			return nil
		}
		s.secretStats.KeyID = s.box.CurrentKeyID()
		if found {
			if err := s.box.VerifyCheck(check); err != nil {
				return err
			}
		}
		for _, c := range codec.SecretColumns {
			if err := s.resealColumn(ctx, tx, c.Table, c.Column); err != nil {
				return err
			}
		}
		if id, err := secretbox.KeyID(check); found && err == nil && id == s.box.CurrentKeyID() {
			return nil
		}
		sealed, err := s.box.SealCheck()
		if err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `INSERT INTO secret_meta (name, value) VALUES ($1, $2)
			ON CONFLICT (name) DO UPDATE SET value = excluded.value`, codec.KEKCheck, sealed)
		return err
	})
	if err != nil {
		return fmt.Errorf("postgres: encrypt secrets: %w", err)
	}
	if st := s.secretStats; st.Sealed > 0 || st.Rewrapped > 0 {
		s.log.Info("secrets encrypted under the current key-encryption key", "sealed", st.Sealed, "rewrapped", st.Rewrapped, "key", st.KeyID)
	}
	return nil
}

// resealColumn brings the values of one secret column to the current key
// (see secretbox.Box.Reseal).
func (s *Store) resealColumn(ctx context.Context, tx pgx.Tx, table, column string) error {
	// The table and column names come from codec.SecretColumns, never
	// from input.
	rows, err := tx.Query(ctx, `SELECT id, `+column+` FROM `+table+` WHERE `+column+` <> '' FOR UPDATE`)
	if err != nil {
		return fmt.Errorf("read %s.%s: %w", table, column, err)
	}
	type change struct{ id, value string }
	var changes []change
	for rows.Next() {
		var id, v string
		if err := rows.Scan(&id, &v); err != nil {
			rows.Close()
			return fmt.Errorf("read %s.%s: %w", table, column, err)
		}
		out, did, err := s.box.Reseal(v, table, id, column)
		if err != nil {
			rows.Close()
			return err
		}
		switch did {
		case secretbox.Sealed:
			s.secretStats.Sealed++
		case secretbox.Rewrapped:
			s.secretStats.Rewrapped++
		default:
			continue
		}
		changes = append(changes, change{id, out})
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read %s.%s: %w", table, column, err)
	}
	for _, c := range changes {
		if _, err := tx.Exec(ctx, `UPDATE `+table+` SET `+column+` = $1 WHERE id = $2`, c.value, c.id); err != nil {
			return fmt.Errorf("write %s.%s: %w", table, column, err)
		}
	}
	return nil
}

var _ store.TokenKeyStore = (*Store)(nil)

// TokenKeyInit implements store.TokenKeyStore: the first replica to
// store its keys wins, and every replica gets the keys stored.
func (s *Store) TokenKeyInit(ctx context.Context, params *store.TokenKeyInitParams) ([]store.TokenKey, error) {
	sealed := make([]string, len(params.Keys))
	for i, k := range params.Keys {
		var err error
		if sealed[i], err = s.sealText(base64.RawURLEncoding.EncodeToString(k.Secret), "token_keys", k.ID, "secret"); err != nil {
			return nil, err
		}
	}
	var out []store.TokenKey
	err := s.tx(ctx, func(tx *wtx) error {
		out = nil
		if _, err := tx.Exec(ctx, `LOCK TABLE token_keys IN EXCLUSIVE MODE`); err != nil {
			return fmt.Errorf("lock token keys: %w", err)
		}
		var n int
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM token_keys`).Scan(&n); err != nil {
			return fmt.Errorf("read token keys: %w", err)
		}
		if n == 0 {
			for i, k := range params.Keys {
				if _, err := tx.Exec(ctx, `INSERT INTO token_keys (id, secret, ord, created_at) VALUES ($1, $2, $3, $4)`,
					k.ID, sealed[i], i, codec.Nanos(params.Now)); err != nil {
					return fmt.Errorf("insert token key: %w", err)
				}
			}
		}
		rows, err := tx.Query(ctx, `SELECT id, secret, created_at FROM token_keys ORDER BY ord, id`)
		if err != nil {
			return fmt.Errorf("read token keys: %w", err)
		}
		defer rows.Close()
		for rows.Next() {
			var k store.TokenKey
			var stored string
			var created int64
			if err := rows.Scan(&k.ID, &stored, &created); err != nil {
				return fmt.Errorf("read token keys: %w", err)
			}
			plain, err := s.openText(stored, "token_keys", k.ID, "secret")
			if err != nil {
				return err
			}
			if k.Secret, err = base64.RawURLEncoding.DecodeString(plain); err != nil {
				return fmt.Errorf("token key %s: %w", k.ID, err)
			}
			k.CreatedAt = codec.FromNanos(created)
			out = append(out, k)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
