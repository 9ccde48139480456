package sqlstore

import (
	"context"
	"slices"

	"github.com/heraldstreams/herald/store"
)

// scanSubscription scans a subscription row and opens its secret.
func (s *Store) scanSubscription(row Row) (store.Subscription, error) {
	sub, err := ScanSubscription(row)
	if err != nil {
		return sub, err
	}
	sub.Secret, err = s.OpenSecret(sub.Secret, "subscriptions", sub.ID, "secret")
	return sub, err
}

// SubscriptionCreate implements store.SubscriptionStore: the
// subscription, and the consumers params.Spawn makes for the live streams
// under params.Prefix, in one write.
func (s *Store) SubscriptionCreate(ctx context.Context, params *store.SubscriptionCreateParams) (*store.SubscriptionCreateResult, error) {
	sealed, err := s.SealSecret(params.Subscription.Secret, "subscriptions", params.Subscription.ID, "secret")
	if err != nil {
		return nil, err
	}
	var res *store.SubscriptionCreateResult
	err = s.write(ctx, ChecksFirst, func(tx Tx) error {
		in := params.Subscription
		existing, err := s.scanSubscription(tx.QueryRow(`SELECT `+SubscriptionColumns+` FROM subscriptions WHERE id = $1`, in.ID))
		switch {
		case err == nil:
			if !store.SameSubscription(&existing, &in) {
				return rule(store.ErrSubscriptionExists)
			}
			res = &store.SubscriptionCreateResult{Subscription: existing}
			return nil
		case !s.d.IsNoRows(err):
			return s.errorf("read subscription", err)
		}
		in.CreatedAt = params.Now
		if _, err := tx.Exec(`INSERT INTO subscriptions (`+SubscriptionColumns+`) VALUES ($1, $2, $3, $4, $5, $6, $7)`,
			in.ID, in.Pattern, in.Webhook, sealed, in.Description, Nanos(in.CreatedAt), in.Tenant); err != nil {
			return s.errorf("insert subscription", err)
		}
		if params.Spawn != nil {
			err := s.b.EachStream(tx, params.Prefix, params.Now, func(st *store.Stream) error {
				c, ok := params.Spawn(st)
				if !ok {
					return nil
				}
				_, err := s.insertConsumer(tx, &c)
				return err
			})
			if err != nil {
				return err
			}
		}
		res = &store.SubscriptionCreateResult{Subscription: in, Created: true}
		return tx.Invalidate(store.Invalidation{Kind: store.CacheSubscription, ID: in.ID})
	})
	if err != nil {
		return nil, err
	}
	return res, nil
}

// SubscriptionGet implements store.SubscriptionStore.
func (s *Store) SubscriptionGet(ctx context.Context, id string) (*store.Subscription, error) {
	return get(ctx, s, &query{sql: `SELECT ` + SubscriptionColumns + ` FROM subscriptions WHERE id = $1`, args: []any{id}},
		"read subscription", store.ErrSubscriptionNotFound, s.scanSubscription)
}

// SubscriptionList implements store.SubscriptionStore.
func (s *Store) SubscriptionList(ctx context.Context, params *store.SubscriptionListParams) ([]store.Subscription, error) {
	q := &query{sql: `SELECT ` + SubscriptionColumns + ` FROM subscriptions WHERE true`}
	if params.Pattern != "" {
		q.add(` AND pattern = `, params.Pattern)
	}
	if params.Tenant != "" {
		q.add(` AND tenant = `, params.Tenant)
	}
	q.sql += ` ORDER BY id`
	return list(ctx, s, q, "list subscriptions", s.scanSubscription)
}

// SubscriptionDelete implements store.SubscriptionStore: the
// subscription goes with its consumers and their memberships.
func (s *Store) SubscriptionDelete(ctx context.Context, params *store.SubscriptionDeleteParams) (int, error) {
	var removed int64
	err := s.write(ctx, ChecksFirst, func(tx Tx) error {
		n, err := tx.Exec(`DELETE FROM subscriptions WHERE id = $1 AND ($2 = '' OR tenant = $2)`, params.ID, params.Tenant)
		if err != nil {
			return s.errorf("delete subscription", err)
		}
		if n == 0 {
			return rule(store.ErrSubscriptionNotFound)
		}
		// By the memberships each consumer lists: each is a key of the
		// index.
		if _, err := tx.Exec(`DELETE FROM consumer_paths WHERE (path, consumer_id) IN
			(SELECT j.value, c.id FROM consumers c, `+s.d.EachJSON("c.paths", "j")+` WHERE c.subscription_id = $1)`, params.ID); err != nil {
			return s.errorf("delete memberships", err)
		}
		if removed, err = tx.Exec(`DELETE FROM consumers WHERE subscription_id = $1`, params.ID); err != nil {
			return s.errorf("delete consumers", err)
		}
		return tx.Invalidate(store.Invalidation{Kind: store.CacheSubscription, ID: params.ID})
	})
	return int(removed), err
}

// ConsumerInsert implements store.SubscriptionStore.
func (s *Store) ConsumerInsert(ctx context.Context, params *store.ConsumerInsertParams) ([]string, error) {
	var ids []string
	err := s.write(ctx, Durable, func(tx Tx) error {
		ids = nil
		for i := range params.Consumers {
			inserted, err := s.insertConsumer(tx, &params.Consumers[i])
			if err != nil {
				return err
			}
			if inserted {
				ids = append(ids, params.Consumers[i].ID)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return ids, nil
}

// insertConsumer inserts c with its memberships unless its id exists.
func (s *Store) insertConsumer(tx Tx, c *store.Consumer) (bool, error) {
	args := append(make([]any, 0, 25), c.ID, c.Kind, c.SubscriptionID, c.Incarnation, c.PrimaryStream,
		c.Tenant, c.Config, c.ConfigHash, c.Pattern, Nanos(c.CreatedAt))
	args = AppendConsumerValues(args, c)
	n, err := tx.Exec(`INSERT INTO consumers (id, kind, subscription_id, incarnation, primary_stream,
		tenant, config, config_hash, pattern, created_at, state, epoch, wake_id, attempts,
		waking_deadline, next_retry_at, liveness_deadline, failing_since, due_at, paths, cursors, stalled_wakes, stalled_since,
		holder, wake_written, version)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22, $23, $24, $25, 1)
		ON CONFLICT (id) DO NOTHING`, args...)
	if err != nil {
		return false, s.errorf("insert consumer", err)
	}
	if n == 0 {
		return false, nil
	}
	// A new consumer has no memberships yet: every removal of a consumer
	// removes them too.
	return true, s.writePaths(tx, c.ID, nil, c.Streams)
}

// writePaths makes the index of a consumer's memberships go from the
// streams in was to those in now.
func (s *Store) writePaths(tx Tx, id string, was, now []store.ConsumerStream) error {
	has := func(list []store.ConsumerStream, path string) bool {
		return slices.ContainsFunc(list, func(m store.ConsumerStream) bool { return m.Path == path })
	}
	for _, m := range was {
		if has(now, m.Path) {
			continue
		}
		if _, err := tx.Exec(`DELETE FROM consumer_paths WHERE path = $1 AND consumer_id = $2`, m.Path, id); err != nil {
			return s.errorf("delete membership", err)
		}
	}
	for _, m := range now {
		if has(was, m.Path) {
			continue
		}
		if _, err := tx.Exec(`INSERT INTO consumer_paths (path, consumer_id) VALUES ($1, $2) ON CONFLICT DO NOTHING`, m.Path, id); err != nil {
			return s.errorf("insert membership", err)
		}
	}
	return nil
}

// consumerUpdateSQL writes a consumer's state ($1 to $15, in
// ConsumerValues order) by id ($16) and ends its timer lease.
const consumerUpdateSQL = `UPDATE consumers SET state = $1, epoch = $2, wake_id = $3, attempts = $4, waking_deadline = $5,
	next_retry_at = $6, liveness_deadline = $7, failing_since = $8, due_at = $9, paths = $10, cursors = $11,
	stalled_wakes = $12, stalled_since = $13, holder = $14, wake_written = $15, version = version + 1,
	timer_until = 0, timer_owner = '' WHERE id = $16`

// ConsumerUpdate implements store.SubscriptionStore. The common update
// (a wake: states, deadlines and offsets change, the streams do not) is
// one statement, whose compare-and-set also expects the stored paths;
// when it matches nothing, the stored row tells whether the consumer is
// gone, changed, or changed its streams, whose index is then written too.
func (s *Store) ConsumerUpdate(ctx context.Context, params *store.ConsumerUpdateParams) (int64, error) {
	c := params.Consumer
	// Room for the compare-and-set arguments, so appending them does
	// not copy the list.
	args := append(AppendConsumerValues(make([]any, 0, 18), &c), c.ID)
	paths := args[9]
	err := s.write(ctx, ChecksFirst, func(tx Tx) error {
		n, err := tx.Exec(consumerUpdateSQL+` AND version = $17 AND paths = $18`, append(args, params.ExpectVersion, paths)...)
		if err != nil {
			return s.errorf("update consumer", err)
		}
		if n == 1 {
			return nil
		}
		was, _, err := s.storedMemberships(tx, c.ID, params.ExpectVersion, "")
		if err != nil {
			return err
		}
		if _, err := tx.Exec(consumerUpdateSQL, args...); err != nil {
			return s.errorf("update consumer", err)
		}
		return s.writePaths(tx, c.ID, was, c.Streams)
	})
	if err != nil {
		return 0, err
	}
	return params.ExpectVersion + 1, nil
}

// storedMemberships locks consumer id and returns its memberships, or
// the rule error of a compare-and-set expecting version: the consumer is
// gone (or not tenant's, when tenant is not ""), or another write changed
// it (version 0 expects any).
func (s *Store) storedMemberships(tx Tx, id string, version int64, tenant string) ([]store.ConsumerStream, string, error) {
	var stored int64
	var paths, cursors, owner, kind string
	switch err := tx.QueryRow(`SELECT version, paths, cursors, tenant, kind FROM consumers WHERE id = $1 `+s.d.ForUpdate, id).Scan(&stored, &paths, &cursors, &owner, &kind); {
	case s.d.IsNoRows(err), err == nil && tenant != "" && owner != tenant:
		return nil, "", rule(store.ErrConsumerNotFound)
	case err != nil:
		return nil, "", s.errorf("read consumer", err)
	case version != 0 && stored != version:
		return nil, "", rule(store.ErrConsumerConflict)
	}
	was, err := DecodeMemberships(paths, cursors)
	return was, kind, err
}

// ConsumerDelete implements store.SubscriptionStore.
func (s *Store) ConsumerDelete(ctx context.Context, params *store.ConsumerDeleteParams) error {
	return s.write(ctx, ChecksFirst, func(tx Tx) error {
		was, kind, err := s.storedMemberships(tx, params.ID, params.ExpectVersion, params.Tenant)
		if err != nil {
			return err
		}
		if _, err := tx.Exec(`DELETE FROM consumers WHERE id = $1`, params.ID); err != nil {
			return s.errorf("delete consumer", err)
		}
		if kind == string(store.ConsumerReserved) {
			// Every replica stops linking new streams to it.
			if err := tx.Invalidate(store.Invalidation{Kind: store.CacheReservedSubscription, ID: params.ID}); err != nil {
				return err
			}
		}
		return s.writePaths(tx, params.ID, was, nil)
	})
}

// ConsumerGet implements store.SubscriptionStore.
func (s *Store) ConsumerGet(ctx context.Context, id string) (*store.Consumer, error) {
	return get(ctx, s, consumersWhere(`c.id = $1`, id), "read consumer", store.ErrConsumerNotFound, ScanConsumer)
}

// ConsumerListByStream implements store.SubscriptionStore.
func (s *Store) ConsumerListByStream(ctx context.Context, params *store.ConsumerListByStreamParams) ([]store.Consumer, error) {
	return list(ctx, s, consumersWhere(`c.id IN (SELECT consumer_id FROM consumer_paths WHERE path = $1)`, params.Path),
		"read consumers", ScanConsumer)
}

// ConsumerListByPrimary implements store.SubscriptionStore.
func (s *Store) ConsumerListByPrimary(ctx context.Context, params *store.ConsumerListByStreamParams) ([]store.Consumer, error) {
	return list(ctx, s, consumersWhere(`c.primary_stream = $1`, params.Path), "read consumers", ScanConsumer)
}

// ConsumerListBySubscription implements store.SubscriptionStore. The
// owner is checked in the same statement, so the consumers are never
// those of another owner's subscription of the same id.
func (s *Store) ConsumerListBySubscription(ctx context.Context, params *store.ConsumerListBySubscriptionParams) ([]store.Consumer, error) {
	sel := &query{sql: `SELECT id FROM consumers WHERE subscription_id = $1 AND id > $2
		AND ($3 = '' OR EXISTS (SELECT 1 FROM subscriptions s WHERE s.id = $1 AND s.tenant = $3)) ORDER BY id`,
		args: []any{params.SubscriptionID, params.After, params.Tenant}}
	if params.Limit > 0 {
		sel.add(` LIMIT `, params.Limit)
	}
	return list(ctx, s, consumersWhere(`c.id IN (`+sel.sql+`)`, sel.args...), "read consumers", ScanConsumer)
}

// consumersWhere is the query of the consumers that match where, by id.
func consumersWhere(where string, args ...any) *query {
	return &query{sql: `SELECT ` + ConsumerColumns + ` FROM consumers c WHERE ` + where + ` ORDER BY c.id`, args: args}
}

// ConsumerPathList implements store.SubscriptionStore.
func (s *Store) ConsumerPathList(ctx context.Context, params *store.ConsumerPathListParams) ([]string, error) {
	q := &query{sql: `SELECT DISTINCT path FROM consumer_paths WHERE path > $1 ORDER BY path`, args: []any{params.After}}
	if params.Limit > 0 {
		q.add(` LIMIT `, params.Limit)
	}
	return list(ctx, s, q, "list consumer paths", func(r Row) (string, error) {
		var p string
		return p, r.Scan(&p)
	})
}

// ConsumerCount implements store.SubscriptionStore.
func (s *Store) ConsumerCount(ctx context.Context) (map[string]int, error) {
	return s.countBy(ctx, `SELECT state, count(*) FROM consumers GROUP BY state`, "count consumers", map[string]int{})
}

// ConsumerCountStalled implements store.SubscriptionStore.
func (s *Store) ConsumerCountStalled(ctx context.Context, atLeast int) (int, error) {
	n, err := get(ctx, s, &query{sql: ConsumerCountStalled, args: []any{atLeast}}, "count stalled consumers", nil,
		func(r Row) (int, error) {
			var n int
			return n, r.Scan(&n)
		})
	if err != nil {
		return 0, err
	}
	return *n, nil
}
