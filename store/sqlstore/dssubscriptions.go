package sqlstore

import (
	"context"
	"encoding/base64"
	"fmt"

	"github.com/heraldstreams/herald/store"
)

// DSSubscriptionCreate implements store.DSSubscriptionStore: the
// subscription's consumer row, its explicit links and the glob links of
// the backfill, in one write.
func (s *Store) DSSubscriptionCreate(ctx context.Context, params *store.DSSubscriptionCreateParams) (*store.DSSubscriptionCreateResult, error) {
	var res *store.DSSubscriptionCreateResult
	err := s.write(ctx, ChecksFirst, func(tx Tx) error {
		in := params.Consumer
		existing, err := ScanConsumer(tx.QueryRow(`SELECT `+ConsumerColumns+` FROM consumers c WHERE c.id = $1 `+s.d.ForUpdate, in.ID))
		switch {
		case err == nil:
			if existing.Kind != in.Kind || existing.Tenant != in.Tenant || existing.ConfigHash != in.ConfigHash {
				return rule(store.ErrSubscriptionExists)
			}
			res = &store.DSSubscriptionCreateResult{Consumer: existing}
			return nil
		case !s.d.IsNoRows(err):
			return s.errorf("read subscription", err)
		}
		in.CreatedAt = params.Now
		in.Version = 1
		links := append([]store.ConsumerStream(nil), in.Streams...)
		if params.Match != nil {
			index := make(map[string]int, len(links))
			for i, l := range links {
				index[l.Path] = i
			}
			err := s.b.EachStream(tx, params.Prefix, params.Now, func(st *store.Stream) error {
				l, ok := params.Match(st)
				if !ok {
					return nil
				}
				if i, dup := index[l.Path]; dup {
					links[i].Glob = true
					return nil
				}
				if len(links) >= store.MaxLinks {
					return rule(store.ErrTooManyLinks)
				}
				index[l.Path] = len(links)
				links = append(links, l)
				return nil
			})
			if err != nil {
				return err
			}
		}
		in.Streams = links
		if _, err := s.insertConsumer(tx, &in); err != nil {
			return err
		}
		res = &store.DSSubscriptionCreateResult{Consumer: in, Created: true}
		return tx.Invalidate(store.Invalidation{Kind: store.CacheReservedSubscription, ID: in.ID})
	})
	if err != nil {
		return nil, err
	}
	return res, nil
}

// DSSubscriptionList implements store.DSSubscriptionStore.
func (s *Store) DSSubscriptionList(ctx context.Context) ([]store.Consumer, error) {
	return list(ctx, s, &query{sql: `SELECT ` + ConsumerColumns + ` FROM consumers c WHERE c.kind = $1 ORDER BY c.id`,
		args: []any{store.ConsumerReserved}}, "list subscriptions", func(r Row) (store.Consumer, error) {
		c, err := ScanConsumer(r)
		c.Streams = nil
		return c, err
	})
}

// SigningKeyInit implements store.SigningKeyStore: a durable write, so
// a webhook signed with the key it returns verifies after a crash. The
// first handle to store a key wins.
func (s *Store) SigningKeyInit(ctx context.Context, key store.SigningKey) ([]store.SigningKey, error) {
	return s.signingKeyWrite(ctx, key, false)
}

// SigningKeyRotate implements store.SigningKeyStore.
func (s *Store) SigningKeyRotate(ctx context.Context, key store.SigningKey) ([]store.SigningKey, error) {
	return s.signingKeyWrite(ctx, key, true)
}

func (s *Store) signingKeyWrite(ctx context.Context, key store.SigningKey, rotate bool) ([]store.SigningKey, error) {
	sealed, err := s.SealSecret(base64.RawURLEncoding.EncodeToString(key.Seed), "ds_signing_keys", key.Kid, "secret")
	if err != nil {
		return nil, err
	}
	var out []store.SigningKey
	err = s.write(ctx, ChecksFirst, func(tx Tx) error {
		if lock := s.d.LockTable("ds_signing_keys"); lock != "" {
			if _, err := tx.Exec(lock); err != nil {
				return s.errorf("lock signing keys", err)
			}
		}
		var active int
		if err := tx.QueryRow(`SELECT count(*) FROM ds_signing_keys WHERE retired_at = 0`).Scan(&active); err != nil {
			return s.errorf("read signing keys", err)
		}
		if active == 0 || rotate {
			if _, err := tx.Exec(`UPDATE ds_signing_keys SET retired_at = $1 WHERE retired_at = 0`, Nanos(key.CreatedAt)); err != nil {
				return s.errorf("retire signing key", err)
			}
			if _, err := tx.Exec(`INSERT INTO ds_signing_keys (id, secret, created_at, retired_at) VALUES ($1, $2, $3, 0)`,
				key.Kid, sealed, Nanos(key.CreatedAt)); err != nil {
				return s.errorf("insert signing key", err)
			}
			if err := tx.Invalidate(store.Invalidation{Kind: store.CacheSigningKey, ID: key.Kid}); err != nil {
				return err
			}
		}
		out, err = s.readSigningKeys(tx)
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// SigningKeyList implements store.SigningKeyStore.
func (s *Store) SigningKeyList(ctx context.Context) ([]store.SigningKey, error) {
	var out []store.SigningKey
	err := s.b.Read(ctx, func(x Executor) error {
		var err error
		out, err = s.readSigningKeys(x)
		return err
	})
	return out, err
}

// readSigningKeys reads and opens every signing key, the active one
// first, then the most recently retired.
func (s *Store) readSigningKeys(x Executor) ([]store.SigningKey, error) {
	keys, err := collect(x, &query{sql: `SELECT id, secret, created_at, retired_at FROM ds_signing_keys
		ORDER BY CASE WHEN retired_at = 0 THEN 0 ELSE 1 END, retired_at DESC, id`}, func(r Row) (store.SigningKey, error) {
		var k store.SigningKey
		var stored string
		var created, retired int64
		if err := r.Scan(&k.Kid, &stored, &created, &retired); err != nil {
			return k, err
		}
		plain, err := s.OpenSecret(stored, "ds_signing_keys", k.Kid, "secret")
		if err != nil {
			return k, err
		}
		if k.Seed, err = base64.RawURLEncoding.DecodeString(plain); err != nil {
			return k, fmt.Errorf("%s: signing key %s: %w", s.d.Name, k.Kid, err)
		}
		k.CreatedAt = FromNanos(created)
		if retired != 0 {
			k.RetiredAt = FromNanos(retired)
		}
		return k, nil
	})
	if err != nil {
		return nil, s.errorf("read signing keys", err)
	}
	return keys, nil
}
