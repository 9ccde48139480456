package sqlstore

import (
	"context"
	"encoding/base64"
	"fmt"

	"github.com/heraldstreams/herald/internal/secretbox"
	"github.com/heraldstreams/herald/store"
)

// SecretColumns are the columns that hold secrets. Each value is sealed
// with the store's secretbox.Box, bound to its table, its row's id and its
// column, so a value copied to another row or column does not open there.
// Callers of a store see plain values: sealing is the store's business.
var SecretColumns = []struct{ Table, Column string }{
	{"endpoints", "secret"},
	{"endpoints", "previous_secret"},
	// The custom headers' JSON object, sealed whole: their values are
	// often credentials of the receiver.
	{"endpoints", "headers"},
	// A broker destination's config, sealed whole: it holds the broker
	// credentials.
	{"endpoints", "destination"},
	{"subscriptions", "secret"},
	{"token_keys", "secret"},
	{"ds_signing_keys", "secret"},
}

// kekCheck is the secret_meta row holding the key-encryption key check.
const kekCheck = "kek_check"

// SecretStats reports what PrepareSecrets did to the secret columns.
func (s *Store) SecretStats() store.SecretStats { return s.stats }

// SealSecret seals a secret for its column; without a Box it is stored as
// given.
func (s *Store) SealSecret(plain, table, row, column string) (string, error) {
	if s.box == nil {
		return plain, nil
	}
	v, err := s.box.SealText(plain, table, row, column)
	if err != nil {
		return "", fmt.Errorf("%s: encrypt %s.%s: %w", s.d.Name, table, column, err)
	}
	return v, nil
}

// OpenSecret opens a stored secret (see SealSecret).
func (s *Store) OpenSecret(stored, table, row, column string) (string, error) {
	if s.box == nil {
		// PrepareSecrets refuses a store with sealed values and no Box,
		// so this is a plaintext.
		return stored, nil
	}
	v, err := s.box.OpenText(stored, table, row, column)
	if err != nil {
		return "", fmt.Errorf("%s: decrypt: %w", s.d.Name, err)
	}
	return v, nil
}

// PrepareSecrets runs when a store opens, in one transaction tx of the
// backend (which keeps other handles out of it meanwhile). With a Box it
// checks that the Box opens what was sealed before (the key check: a
// wrong key-encryption key is refused here, before any request needs a
// secret), seals every plaintext secret, rewraps every value sealed with
// an older key, and records the check under the current key: a store is
// never half on one key. Without a Box, a store whose secrets are sealed
// is refused.
func (s *Store) PrepareSecrets(tx Executor) error {
	s.stats = store.SecretStats{}
	var check string
	err := tx.QueryRow(`SELECT value FROM secret_meta WHERE name = $1`, kekCheck).Scan(&check)
	found := err == nil
	if err != nil && !s.d.IsNoRows(err) {
		return fmt.Errorf("read the key check: %w", err)
	}
	if s.box == nil {
		if found {
			return fmt.Errorf("%w: the secrets in the database are encrypted, and no key-encryption key was given", secretbox.ErrWrongKey)
		}
		return nil
	}
	s.stats.KeyID = s.box.CurrentKeyID()
	if found {
		if err := s.box.VerifyCheck(check); err != nil {
			return err
		}
	}
	for _, c := range SecretColumns {
		if err := s.resealColumn(tx, c.Table, c.Column); err != nil {
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
	_, err = tx.Exec(`INSERT INTO secret_meta (name, value) VALUES ($1, $2)
		ON CONFLICT (name) DO UPDATE SET value = excluded.value`, kekCheck, sealed)
	return err
}

// LogSecrets logs what PrepareSecrets changed, once its transaction
// committed.
func (s *Store) LogSecrets() {
	if st := s.stats; st.Sealed > 0 || st.Rewrapped > 0 {
		s.log.Info("secrets encrypted under the current key-encryption key", "sealed", st.Sealed, "rewrapped", st.Rewrapped, "key", st.KeyID)
	}
}

// resealColumn seals the plaintext values of one secret column and
// rewraps those sealed with another key than the current one. Values
// already under the current key are left unread: they are opened when
// used.
func (s *Store) resealColumn(tx Executor, table, column string) error {
	// The table and column names come from SecretColumns, never from
	// input.
	type change struct{ id, value string }
	var changes []change
	err := tx.Query(`SELECT id, `+column+` FROM `+table+` WHERE `+column+` <> '' `+s.d.ForUpdate, nil, func(r Row) error {
		var id, v string
		if err := r.Scan(&id, &v); err != nil {
			return err
		}
		out, did, err := s.box.Reseal(v, table, id, column)
		if err != nil {
			return err
		}
		switch did {
		case secretbox.Sealed:
			s.stats.Sealed++
		case secretbox.Rewrapped:
			s.stats.Rewrapped++
		default:
			return nil
		}
		changes = append(changes, change{id, out})
		return nil
	})
	if err != nil {
		return fmt.Errorf("read %s.%s: %w", table, column, err)
	}
	for _, c := range changes {
		if _, err := tx.Exec(`UPDATE `+table+` SET `+column+` = $1 WHERE id = $2`, c.value, c.id); err != nil {
			return fmt.Errorf("write %s.%s: %w", table, column, err)
		}
	}
	return nil
}

var _ store.TokenKeyStore = (*Store)(nil)

// TokenKeyInit implements store.TokenKeyStore. It is a durable write:
// tokens signed with the keys it returns verify after a crash. The first
// handle to store its keys wins, and every handle gets the keys stored.
func (s *Store) TokenKeyInit(ctx context.Context, params *store.TokenKeyInitParams) ([]store.TokenKey, error) {
	sealed := make([]string, len(params.Keys))
	for i, k := range params.Keys {
		var err error
		if sealed[i], err = s.SealSecret(base64.RawURLEncoding.EncodeToString(k.Secret), "token_keys", k.ID, "secret"); err != nil {
			return nil, err
		}
	}
	var out []store.TokenKey
	err := s.write(ctx, ChecksFirst, func(tx Tx) error {
		out = nil
		if lock := s.d.LockTable("token_keys"); lock != "" {
			if _, err := tx.Exec(lock); err != nil {
				return s.errorf("lock token keys", err)
			}
		}
		var n int
		if err := tx.QueryRow(`SELECT count(*) FROM token_keys`).Scan(&n); err != nil {
			return s.errorf("read token keys", err)
		}
		if n == 0 {
			for i, k := range params.Keys {
				if _, err := tx.Exec(`INSERT INTO token_keys (id, secret, ord, created_at) VALUES ($1, $2, $3, $4)`,
					k.ID, sealed[i], i, Nanos(params.Now)); err != nil {
					return s.errorf("insert token key", err)
				}
			}
		}
		return tx.Query(`SELECT id, secret, created_at FROM token_keys ORDER BY ord, id`, nil, func(r Row) error {
			k, err := s.scanTokenKey(r)
			out = append(out, k)
			return err
		})
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// scanTokenKey scans and opens one token key.
func (s *Store) scanTokenKey(r Row) (store.TokenKey, error) {
	var k store.TokenKey
	var stored string
	var created int64
	if err := r.Scan(&k.ID, &stored, &created); err != nil {
		return k, s.errorf("read token keys", err)
	}
	plain, err := s.OpenSecret(stored, "token_keys", k.ID, "secret")
	if err != nil {
		return k, err
	}
	if k.Secret, err = base64.RawURLEncoding.DecodeString(plain); err != nil {
		return k, fmt.Errorf("%s: token key %s: %w", s.d.Name, k.ID, err)
	}
	k.CreatedAt = FromNanos(created)
	return k, nil
}
