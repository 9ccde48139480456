package sqlstore

import (
	"context"
	"encoding/base64"
	"fmt"
	"time"

	"github.com/heraldstreams/herald/store"
)

// dsColumns are the columns of a reserved-API subscription, in
// scanDSSubscription's order.
const dsColumns = `id, tenant, incarnation, config, config_hash, pattern, created_at, state, due_at, version`

func scanDSSubscription(r Row) (store.DSSubscription, error) {
	var d store.DSSubscription
	var created, due int64
	err := r.Scan(&d.ID, &d.Tenant, &d.Incarnation, &d.Config, &d.ConfigHash, &d.Pattern, &created, &d.State, &due, &d.Version)
	d.CreatedAt = FromNanos(created)
	if due != 0 {
		d.DueAt = FromNanos(due)
	}
	return d, err
}

func scanDSLink(r Row) (store.DSLink, error) {
	var l store.DSLink
	var glob, explicit int
	err := r.Scan(&l.Path, &glob, &explicit, &l.Acked, &l.Notified)
	l.Glob, l.Explicit = glob != 0, explicit != 0
	return l, err
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

func dueNanos(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return Nanos(t)
}

// readDSLinks reads a subscription's links, by path.
func (s *Store) readDSLinks(x Executor, id string) ([]store.DSLink, error) {
	links, err := collect(x, &query{sql: `SELECT path, glob, explicit, acked, notified FROM ds_links WHERE subscription_id = $1 ORDER BY path`, args: []any{id}}, scanDSLink)
	if err != nil {
		return nil, s.errorf("read subscription links", err)
	}
	return links, nil
}

// writeDSLinks replaces a subscription's links.
func (s *Store) writeDSLinks(tx Tx, id string, links []store.DSLink) error {
	if _, err := tx.Exec(`DELETE FROM ds_links WHERE subscription_id = $1`, id); err != nil {
		return s.errorf("delete subscription links", err)
	}
	for _, l := range links {
		if _, err := tx.Exec(`INSERT INTO ds_links (subscription_id, path, glob, explicit, acked, notified) VALUES ($1, $2, $3, $4, $5, $6)`,
			id, l.Path, boolInt(l.Glob), boolInt(l.Explicit), l.Acked, l.Notified); err != nil {
			return s.errorf("insert subscription link", err)
		}
	}
	return nil
}

// DSSubscriptionCreate implements store.DSSubscriptionStore: the
// subscription, its explicit links and the glob links of the backfill,
// in one write.
func (s *Store) DSSubscriptionCreate(ctx context.Context, params *store.DSSubscriptionCreateParams) (*store.DSSubscriptionCreateResult, error) {
	var res *store.DSSubscriptionCreateResult
	err := s.write(ctx, ChecksFirst, func(tx Tx) error {
		in := params.Subscription
		existing, err := scanDSSubscription(tx.QueryRow(`SELECT `+dsColumns+` FROM ds_subscriptions WHERE id = $1 `+s.d.ForUpdate, in.ID))
		switch {
		case err == nil:
			if existing.Tenant != in.Tenant || existing.ConfigHash != in.ConfigHash {
				return rule(store.ErrSubscriptionExists)
			}
			if existing.Links, err = s.readDSLinks(tx, in.ID); err != nil {
				return err
			}
			res = &store.DSSubscriptionCreateResult{Subscription: existing}
			return nil
		case !s.d.IsNoRows(err):
			return s.errorf("read subscription", err)
		}
		in.CreatedAt = params.Now
		in.Version = 1
		if _, err := tx.Exec(`INSERT INTO ds_subscriptions (`+dsColumns+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
			in.ID, in.Tenant, in.Incarnation, in.Config, in.ConfigHash, in.Pattern, Nanos(in.CreatedAt), in.State, dueNanos(in.DueAt), in.Version); err != nil {
			return s.errorf("insert subscription", err)
		}
		links := append([]store.DSLink(nil), in.Links...)
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
				if len(links) >= maxDSLinks {
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
		if err := s.writeDSLinks(tx, in.ID, links); err != nil {
			return err
		}
		in.Links = links
		res = &store.DSSubscriptionCreateResult{Subscription: in, Created: true}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return res, nil
}

// maxDSLinks bounds the links of one subscription (the backfill
// included), as subscription.DSMaxStreams does the requests'.
const maxDSLinks = 1024

// DSSubscriptionGet implements store.DSSubscriptionStore.
func (s *Store) DSSubscriptionGet(ctx context.Context, id string) (*store.DSSubscription, error) {
	var out *store.DSSubscription
	err := s.b.Read(ctx, func(x Executor) error {
		d, err := scanDSSubscription(x.QueryRow(`SELECT `+dsColumns+` FROM ds_subscriptions WHERE id = $1`, id))
		switch {
		case s.d.IsNoRows(err):
			return store.ErrSubscriptionNotFound
		case err != nil:
			return s.errorf("read subscription", err)
		}
		if d.Links, err = s.readDSLinks(x, id); err != nil {
			return err
		}
		out = &d
		return nil
	})
	return out, err
}

// DSSubscriptionList implements store.DSSubscriptionStore.
func (s *Store) DSSubscriptionList(ctx context.Context) ([]store.DSSubscription, error) {
	return list(ctx, s, &query{sql: `SELECT ` + dsColumns + ` FROM ds_subscriptions ORDER BY id`}, "list subscriptions", scanDSSubscription)
}

// DSSubscriptionDelete implements store.DSSubscriptionStore.
func (s *Store) DSSubscriptionDelete(ctx context.Context, id, tenant string) error {
	return s.write(ctx, ChecksFirst, func(tx Tx) error {
		n, err := tx.Exec(`DELETE FROM ds_subscriptions WHERE id = $1 AND ($2 = '' OR tenant = $2)`, id, tenant)
		if err != nil {
			return s.errorf("delete subscription", err)
		}
		if n == 0 {
			return rule(store.ErrSubscriptionNotFound)
		}
		if _, err := tx.Exec(`DELETE FROM ds_links WHERE subscription_id = $1`, id); err != nil {
			return s.errorf("delete subscription links", err)
		}
		return nil
	})
}

// DSSubscriptionUpdate implements store.DSSubscriptionStore: a
// compare-and-set on the version, which also ends the timer claim.
func (s *Store) DSSubscriptionUpdate(ctx context.Context, params *store.DSSubscriptionUpdateParams) (int64, error) {
	if len(params.Links) > maxDSLinks {
		return 0, store.ErrTooManyLinks
	}
	err := s.write(ctx, ChecksFirst, func(tx Tx) error {
		var version int64
		switch err := tx.QueryRow(`SELECT version FROM ds_subscriptions WHERE id = $1 `+s.d.ForUpdate, params.ID).Scan(&version); {
		case s.d.IsNoRows(err):
			return rule(store.ErrSubscriptionNotFound)
		case err != nil:
			return s.errorf("read subscription", err)
		case version != params.ExpectVersion:
			return rule(store.ErrConsumerConflict)
		}
		if _, err := tx.Exec(`UPDATE ds_subscriptions SET state = $1, due_at = $2, version = version + 1, timer_until = 0, timer_owner = ''
			WHERE id = $3`, params.State, dueNanos(params.DueAt), params.ID); err != nil {
			return s.errorf("update subscription", err)
		}
		return s.writeDSLinks(tx, params.ID, params.Links)
	})
	if err != nil {
		return 0, err
	}
	return params.ExpectVersion + 1, nil
}

// DSSubscriptionClaimDue implements store.DSSubscriptionStore. Each
// claim is a conditional update of its row, so two handles never both
// take one timer, on either backend.
func (s *Store) DSSubscriptionClaimDue(ctx context.Context, now time.Time, lease time.Duration, limit int) ([]string, time.Time, error) {
	if limit <= 0 {
		limit = 1000
	}
	var ids []string
	var next time.Time
	n := Nanos(now)
	err := s.write(ctx, Relaxed, func(tx Tx) error {
		ids, next = nil, time.Time{}
		due, err := collect(tx, &query{sql: `SELECT id FROM ds_subscriptions WHERE due_at > 0 AND due_at <= $1 AND timer_until < $1 ORDER BY due_at LIMIT $2`,
			args: []any{n, limit}}, func(r Row) (string, error) {
			var id string
			return id, r.Scan(&id)
		})
		if err != nil {
			return s.errorf("read due subscriptions", err)
		}
		for _, id := range due {
			c, err := tx.Exec(`UPDATE ds_subscriptions SET timer_until = $1, timer_owner = $2 WHERE id = $3 AND due_at > 0 AND due_at <= $4 AND timer_until < $4`,
				Nanos(now.Add(lease)), s.owner, id, n)
			if err != nil {
				return s.errorf("claim subscription timer", err)
			}
			if c == 1 {
				ids = append(ids, id)
			}
		}
		var nd *int64
		if err := tx.QueryRow(`SELECT min(due_at) FROM ds_subscriptions WHERE due_at > $1`, n).Scan(&nd); err != nil {
			return s.errorf("read next due subscription", err)
		}
		if nd != nil {
			next = FromNanos(*nd)
		}
		return nil
	})
	return ids, next, err
}

// DSSubscriptionsLinking implements store.DSSubscriptionStore.
func (s *Store) DSSubscriptionsLinking(ctx context.Context, path string) ([]string, error) {
	return list(ctx, s, &query{sql: `SELECT subscription_id FROM ds_links WHERE path = $1 ORDER BY subscription_id`, args: []any{path}},
		"read subscription links", func(r Row) (string, error) {
			var id string
			return id, r.Scan(&id)
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
