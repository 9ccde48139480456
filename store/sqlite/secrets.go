package sqlite

import (
	"context"
	"encoding/base64"
	"fmt"

	"github.com/heraldstreams/herald/internal/secretbox"
	"github.com/heraldstreams/herald/store"
	"github.com/heraldstreams/herald/store/internal/codec"
)

// secretColumns are the columns that hold secrets (see
// codec.SecretColumns), sealed with Config.Box.
var secretColumns = codec.SecretColumns

// kekCheck is the secret_meta row holding the key-encryption key check.
const kekCheck = codec.KEKCheck

// SecretStats says what Open did to the secret columns.
type SecretStats = codec.SecretStats

// SecretStats reports what Open did to the secret columns.
func (s *Store) SecretStats() SecretStats { return s.secretStats }

// sealText seals a secret for its column; without a Box it is stored as
// given.
func (s *Store) sealText(plain, table, row, column string) (string, error) {
	if s.cfg.Box == nil {
		return plain, nil
	}
	v, err := s.cfg.Box.SealText(plain, table, row, column)
	if err != nil {
		return "", fmt.Errorf("sqlite: encrypt %s.%s: %w", table, column, err)
	}
	return v, nil
}

// openText opens a stored secret (see sealText).
func (s *Store) openText(stored, table, row, column string) (string, error) {
	if s.cfg.Box == nil {
		// Open refuses a store with sealed values and no Box, so this is
		// a plaintext.
		return stored, nil
	}
	v, err := s.cfg.Box.OpenText(stored, table, row, column)
	if err != nil {
		return "", fmt.Errorf("sqlite: decrypt: %w", err)
	}
	return v, nil
}

// prepareSecrets runs at Open, before the committer starts. With a Box it
// checks that the Box opens what was sealed before (the key check: a
// wrong key-encryption key is refused here, before any request needs a
// secret), then, in one transaction, seals every plaintext secret and
// rewraps every value sealed with an older key, and records the check
// under the current key. A crash midway changes nothing, and a store is
// never half on one key. Without a Box, a store whose secrets are sealed
// is refused.
func (s *Store) prepareSecrets(ctx context.Context) error {
	var check string
	err := s.wconn.QueryRowContext(ctx, `SELECT value FROM secret_meta WHERE name = ?`, kekCheck).Scan(&check)
	found := err == nil
	if err != nil && !isNoRows(err) {
		return fmt.Errorf("sqlite: read the key check: %w", err)
	}
	box := s.cfg.Box
	if box == nil {
		if found {
			return fmt.Errorf("sqlite: %w: the secrets in %s are encrypted, and no key-encryption key was given", secretbox.ErrWrongKey, s.cfg.Dir)
		}
		return nil
	}
	s.secretStats.KeyID = box.CurrentKeyID()
	if found {
		if err := box.VerifyCheck(check); err != nil {
			return fmt.Errorf("sqlite: %w", err)
		}
	}
	// The values replaced are overwritten where they lay (secure_delete),
	// and the WAL that holds their old pages is emptied once the new ones
	// are in the database file: a plaintext, or a value under a retired
	// key, is not left behind in free space.
	var secureDelete int
	if err := s.wconn.QueryRowContext(ctx, `PRAGMA secure_delete`).Scan(&secureDelete); err != nil {
		return fmt.Errorf("sqlite: read secure delete: %w", err)
	}
	if _, err := s.wconn.ExecContext(ctx, `PRAGMA secure_delete = ON`); err != nil {
		return fmt.Errorf("sqlite: configure secure delete: %w", err)
	}
	err = execTx(ctx, s.wconn, func() error {
		for _, c := range secretColumns {
			if err := s.resealColumn(ctx, box, c.Table, c.Column); err != nil {
				return err
			}
		}
		if id, err := secretbox.KeyID(check); found && err == nil && id == box.CurrentKeyID() {
			return nil
		}
		sealed, err := box.SealCheck()
		if err != nil {
			return err
		}
		_, err = s.wconn.ExecContext(ctx, `INSERT INTO secret_meta (name, value) VALUES (?, ?)
			ON CONFLICT (name) DO UPDATE SET value = excluded.value`, kekCheck, sealed)
		return err
	})
	if err != nil {
		return fmt.Errorf("sqlite: encrypt secrets: %w", err)
	}
	if _, err := s.wconn.ExecContext(ctx, fmt.Sprintf(`PRAGMA secure_delete = %d`, secureDelete)); err != nil {
		return fmt.Errorf("sqlite: configure secure delete: %w", err)
	}
	if st := s.secretStats; st.Sealed > 0 || st.Rewrapped > 0 {
		// Only this connection is open yet: the checkpoint copies every
		// frame and truncates the WAL.
		var busy, frames, done int
		if err := s.wconn.QueryRowContext(ctx, `PRAGMA wal_checkpoint(TRUNCATE)`).Scan(&busy, &frames, &done); err != nil {
			return fmt.Errorf("sqlite: checkpoint after encrypting secrets: %w", err)
		}
		if busy != 0 {
			return fmt.Errorf("sqlite: checkpoint after encrypting secrets: the database is busy")
		}
		s.log.Info("secrets encrypted under the current key-encryption key", "sealed", st.Sealed, "rewrapped", st.Rewrapped, "key", st.KeyID)
	}
	return nil
}

// resealColumn seals the plaintext values of one secret column and
// rewraps those sealed with another key than the current one. Values
// already under the current key are left unread: they are opened when
// used.
func (s *Store) resealColumn(ctx context.Context, box *secretbox.Box, table, column string) error {
	// The table and column names come from secretColumns, never from
	// input.
	rows, err := s.wconn.QueryContext(ctx, `SELECT id, `+column+` FROM `+table+` WHERE `+column+` != ''`)
	if err != nil {
		return fmt.Errorf("read %s.%s: %w", table, column, err)
	}
	type change struct{ id, value string }
	var changes []change
	err = func() error {
		defer rows.Close()
		for rows.Next() {
			var id, v string
			if err := rows.Scan(&id, &v); err != nil {
				return err
			}
			out, did, err := box.Reseal(v, table, id, column)
			if err != nil {
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
		return rows.Err()
	}()
	if err != nil {
		return fmt.Errorf("read %s.%s: %w", table, column, err)
	}
	for _, c := range changes {
		if _, err := s.wconn.ExecContext(ctx, `UPDATE `+table+` SET `+column+` = ? WHERE id = ?`, c.value, c.id); err != nil {
			return fmt.Errorf("write %s.%s: %w", table, column, err)
		}
	}
	return nil
}

var _ store.TokenKeyStore = (*Store)(nil)

// TokenKeyInit implements store.TokenKeyStore. It is a durable write:
// tokens signed with the keys it returns verify after a crash.
func (s *Store) TokenKeyInit(ctx context.Context, params *store.TokenKeyInitParams) ([]store.TokenKey, error) {
	sealed := make([]string, len(params.Keys))
	for i, k := range params.Keys {
		var err error
		if sealed[i], err = s.sealText(base64.RawURLEncoding.EncodeToString(k.Secret), "token_keys", k.ID, "secret"); err != nil {
			return nil, err
		}
	}
	err := s.writeChecked(ctx, func(b *batch) error {
		var n int
		if err := s.wconn.QueryRowContext(b.ctx, `SELECT count(*) FROM token_keys`).Scan(&n); err != nil {
			return fmt.Errorf("read token keys: %w", err)
		}
		if n > 0 {
			return nil
		}
		for i, k := range params.Keys {
			if _, err := b.exec(`INSERT INTO token_keys (id, secret, ord, created_at) VALUES (?, ?, ?, ?)`,
				k.ID, sealed[i], i, codec.Nanos(params.Now)); err != nil {
				return fmt.Errorf("insert token key: %w", err)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return s.tokenKeys(ctx)
}

func (s *Store) tokenKeys(ctx context.Context) ([]store.TokenKey, error) {
	rows, err := s.reader.QueryContext(ctx, `SELECT id, secret, created_at FROM token_keys ORDER BY ord, id`)
	if err != nil {
		return nil, fmt.Errorf("sqlite: read token keys: %w", err)
	}
	defer rows.Close()
	var out []store.TokenKey
	for rows.Next() {
		var k store.TokenKey
		var stored string
		var created int64
		if err := rows.Scan(&k.ID, &stored, &created); err != nil {
			return nil, fmt.Errorf("sqlite: read token keys: %w", err)
		}
		plain, err := s.openText(stored, "token_keys", k.ID, "secret")
		if err != nil {
			return nil, err
		}
		if k.Secret, err = base64.RawURLEncoding.DecodeString(plain); err != nil {
			return nil, fmt.Errorf("sqlite: token key %s: %w", k.ID, err)
		}
		k.CreatedAt = codec.FromNanos(created)
		out = append(out, k)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: read token keys: %w", err)
	}
	return out, nil
}
