package postgres

import (
	"context"
	"fmt"
	"slices"
	"strconv"

	"github.com/heraldstreams/herald/store"
	"github.com/heraldstreams/herald/store/internal/codec"
	"github.com/jackc/pgx/v5"
)

var _ store.SubscriptionStore = (*Store)(nil)

func (s *Store) scanSubscription(row codec.Row) (store.Subscription, error) {
	sub, err := codec.ScanSubscription(row)
	if err != nil {
		return sub, err
	}
	sub.Secret, err = s.OpenSecret(sub.Secret, "subscriptions", sub.ID, "secret")
	return sub, err
}

// SubscriptionCreate implements store.SubscriptionStore.
func (s *Store) SubscriptionCreate(ctx context.Context, params *store.SubscriptionCreateParams) (*store.SubscriptionCreateResult, error) {
	sealed, err := s.SealSecret(params.Subscription.Secret, "subscriptions", params.Subscription.ID, "secret")
	if err != nil {
		return nil, err
	}
	var res *store.SubscriptionCreateResult
	err = s.tx(ctx, func(tx *wtx) error {
		in := params.Subscription
		existing, err := s.scanSubscription(tx.QueryRow(ctx, `SELECT `+codec.SubscriptionColumns+` FROM subscriptions WHERE id = $1`, in.ID))
		switch {
		case err == nil:
			if !store.SameSubscription(&existing, &in) {
				return store.ErrSubscriptionExists
			}
			res = &store.SubscriptionCreateResult{Subscription: existing}
			return nil
		case !isNoRows(err):
			return fmt.Errorf("postgres: read subscription: %w", err)
		}
		in.CreatedAt = params.Now
		if _, err := tx.Exec(ctx, `INSERT INTO subscriptions (`+codec.SubscriptionColumns+`) VALUES ($1, $2, $3, $4, $5, $6, $7)`,
			in.ID, in.Pattern, in.Webhook, sealed, in.Description, codec.Nanos(in.CreatedAt), in.Tenant); err != nil {
			return fmt.Errorf("postgres: insert subscription: %w", err)
		}
		if err := spawnConsumers(ctx, tx, params); err != nil {
			return err
		}
		res = &store.SubscriptionCreateResult{Subscription: in, Created: true}
		return s.invalidate(ctx, tx, store.Invalidation{Kind: store.CacheSubscription, ID: in.ID})
	})
	if err != nil {
		return nil, err
	}
	return res, nil
}

// spawnPage is how many streams spawnConsumers reads at a time.
const spawnPage = 500

// spawnConsumers inserts the consumers params.Spawn makes for the live
// streams under params.Prefix, a page of streams at a time, in path order.
func spawnConsumers(ctx context.Context, tx pgx.Tx, params *store.SubscriptionCreateParams) error {
	if params.Spawn == nil {
		return nil
	}
	after := ""
	for {
		page, err := streamPage(ctx, tx, params.Prefix, after, spawnPage)
		if err != nil {
			return err
		}
		for _, r := range page {
			st, err := view(r, params.Now)
			if err != nil {
				continue // soft-deleted or expired
			}
			c, ok := params.Spawn(&st)
			if !ok {
				continue
			}
			if _, err := insertConsumer(ctx, tx, &c); err != nil {
				return err
			}
		}
		if len(page) < spawnPage {
			return nil
		}
		after = page[len(page)-1].Path
	}
}

// streamPage reads up to limit streams whose path starts with prefix and
// comes after after, in path order.
func streamPage(ctx context.Context, q querier, prefix, after string, limit int) ([]*row, error) {
	rows, err := q.Query(ctx, `SELECT `+codec.StreamColumns+` FROM streams WHERE starts_with(path, $1) AND path > $2
		ORDER BY path LIMIT $3`, prefix, after, limit)
	if err != nil {
		return nil, fmt.Errorf("postgres: list streams: %w", err)
	}
	defer rows.Close()
	var out []*row
	for rows.Next() {
		r, err := scanRow(rows)
		if err != nil {
			return nil, fmt.Errorf("postgres: list streams: %w", err)
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// SubscriptionGet implements store.SubscriptionStore.
func (s *Store) SubscriptionGet(ctx context.Context, id string) (*store.Subscription, error) {
	subs, err := collect(ctx, s, &query{sql: `SELECT ` + codec.SubscriptionColumns + ` FROM subscriptions WHERE id = $1`, args: []any{id}},
		"read subscription", s.scanSubscription)
	if err != nil {
		return nil, err
	}
	if len(subs) == 0 {
		return nil, store.ErrSubscriptionNotFound
	}
	return &subs[0], nil
}

// SubscriptionList implements store.SubscriptionStore.
func (s *Store) SubscriptionList(ctx context.Context, params *store.SubscriptionListParams) ([]store.Subscription, error) {
	q := &query{sql: `SELECT ` + codec.SubscriptionColumns + ` FROM subscriptions WHERE true`}
	if params.Pattern != "" {
		q.add(` AND pattern = `, params.Pattern)
	}
	if params.Tenant != "" {
		q.add(` AND tenant = `, params.Tenant)
	}
	q.sql += ` ORDER BY id`
	return collect(ctx, s, q, "list subscriptions", s.scanSubscription)
}

// SubscriptionDelete implements store.SubscriptionStore.
func (s *Store) SubscriptionDelete(ctx context.Context, params *store.SubscriptionDeleteParams) (int, error) {
	var removed int64
	err := s.tx(ctx, func(tx *wtx) error {
		tag, err := tx.Exec(ctx, `DELETE FROM subscriptions WHERE id = $1 AND ($2 = '' OR tenant = $2)`, params.ID, params.Tenant)
		if err != nil {
			return fmt.Errorf("postgres: delete subscription: %w", err)
		}
		if tag.RowsAffected() == 0 {
			return store.ErrSubscriptionNotFound
		}
		if _, err := tx.Exec(ctx, `DELETE FROM consumer_paths WHERE consumer_id IN
			(SELECT id FROM consumers WHERE subscription_id = $1)`, params.ID); err != nil {
			return fmt.Errorf("postgres: delete memberships: %w", err)
		}
		tag, err = tx.Exec(ctx, `DELETE FROM consumers WHERE subscription_id = $1`, params.ID)
		if err != nil {
			return fmt.Errorf("postgres: delete consumers: %w", err)
		}
		removed = tag.RowsAffected()
		return s.invalidate(ctx, tx, store.Invalidation{Kind: store.CacheSubscription, ID: params.ID})
	})
	return int(removed), err
}

// ConsumerInsert implements store.SubscriptionStore.
func (s *Store) ConsumerInsert(ctx context.Context, params *store.ConsumerInsertParams) ([]string, error) {
	var ids []string
	err := s.tx(ctx, func(tx *wtx) error {
		ids = nil
		for i := range params.Consumers {
			inserted, err := insertConsumer(ctx, tx, &params.Consumers[i])
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
func insertConsumer(ctx context.Context, tx pgx.Tx, c *store.Consumer) (bool, error) {
	args := append([]any{c.ID, c.SubscriptionID, c.Incarnation, c.PrimaryStream}, codec.ConsumerValues(c)...)
	tag, err := tx.Exec(ctx, `INSERT INTO consumers (id, subscription_id, incarnation, primary_stream, state, epoch, wake_id, attempts,
		waking_deadline, next_retry_at, liveness_deadline, failing_since, due_at, paths, cursors, stalled_wakes, stalled_since, version)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, 1) ON CONFLICT (id) DO NOTHING`, args...)
	if err != nil {
		return false, fmt.Errorf("postgres: insert consumer: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return false, nil
	}
	return true, writePaths(ctx, tx, c.ID, nil, c.Streams)
}

// writePaths makes the index of a consumer's memberships go from the
// streams in was to those in now.
func writePaths(ctx context.Context, tx pgx.Tx, id string, was, now []store.ConsumerStream) error {
	has := func(list []store.ConsumerStream, path string) bool {
		return slices.ContainsFunc(list, func(m store.ConsumerStream) bool { return m.Path == path })
	}
	for _, m := range was {
		if has(now, m.Path) {
			continue
		}
		if _, err := tx.Exec(ctx, `DELETE FROM consumer_paths WHERE path = $1 AND consumer_id = $2`, m.Path, id); err != nil {
			return fmt.Errorf("postgres: delete membership: %w", err)
		}
	}
	for _, m := range now {
		if has(was, m.Path) {
			continue
		}
		if _, err := tx.Exec(ctx, `INSERT INTO consumer_paths (path, consumer_id) VALUES ($1, $2) ON CONFLICT DO NOTHING`, m.Path, id); err != nil {
			return fmt.Errorf("postgres: insert membership: %w", err)
		}
	}
	return nil
}

// ConsumerUpdate implements store.SubscriptionStore: a compare-and-set on
// the version, which also writes the membership index when the streams
// changed.
func (s *Store) ConsumerUpdate(ctx context.Context, params *store.ConsumerUpdateParams) (int64, error) {
	c := params.Consumer
	args := append(codec.ConsumerValues(&c), c.ID)
	err := s.tx(ctx, func(tx *wtx) error {
		was, err := storedMemberships(ctx, tx, c.ID, params.ExpectVersion)
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `UPDATE consumers SET state = $1, epoch = $2, wake_id = $3, attempts = $4, waking_deadline = $5,
			next_retry_at = $6, liveness_deadline = $7, failing_since = $8, due_at = $9, paths = $10, cursors = $11,
			stalled_wakes = $12, stalled_since = $13, version = version + 1,
			timer_until = 0, timer_owner = '' WHERE id = $14`, args...); err != nil {
			return fmt.Errorf("postgres: update consumer: %w", err)
		}
		return writePaths(ctx, tx, c.ID, was, c.Streams)
	})
	if err != nil {
		return 0, err
	}
	return params.ExpectVersion + 1, nil
}

// storedMemberships locks consumer id and returns its memberships, or
// the error of a compare-and-set expecting version: the consumer is gone,
// or another write changed it (version 0 expects any).
func storedMemberships(ctx context.Context, tx pgx.Tx, id string, version int64) ([]store.ConsumerStream, error) {
	var stored int64
	var paths, cursors string
	switch err := tx.QueryRow(ctx, `SELECT version, paths, cursors FROM consumers WHERE id = $1 FOR UPDATE`, id).Scan(&stored, &paths, &cursors); {
	case isNoRows(err):
		return nil, store.ErrConsumerNotFound
	case err != nil:
		return nil, fmt.Errorf("postgres: read consumer: %w", err)
	case version != 0 && stored != version:
		return nil, store.ErrConsumerConflict
	}
	return codec.DecodeMemberships(paths, cursors)
}

// ConsumerDelete implements store.SubscriptionStore.
func (s *Store) ConsumerDelete(ctx context.Context, params *store.ConsumerDeleteParams) error {
	return s.tx(ctx, func(tx *wtx) error {
		was, err := storedMemberships(ctx, tx, params.ID, params.ExpectVersion)
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `DELETE FROM consumers WHERE id = $1`, params.ID); err != nil {
			return fmt.Errorf("postgres: delete consumer: %w", err)
		}
		return writePaths(ctx, tx, params.ID, was, nil)
	})
}

// ConsumerGet implements store.SubscriptionStore.
func (s *Store) ConsumerGet(ctx context.Context, id string) (*store.Consumer, error) {
	cs, err := s.queryConsumers(ctx, `c.id = $1`, `c.id`, id)
	if err != nil {
		return nil, err
	}
	if len(cs) == 0 {
		return nil, store.ErrConsumerNotFound
	}
	return &cs[0], nil
}

// ConsumerListByStream implements store.SubscriptionStore.
func (s *Store) ConsumerListByStream(ctx context.Context, params *store.ConsumerListByStreamParams) ([]store.Consumer, error) {
	return s.queryConsumers(ctx, `c.id IN (SELECT consumer_id FROM consumer_paths WHERE path = $1)`, `c.id`, params.Path)
}

// ConsumerListByPrimary implements store.SubscriptionStore.
func (s *Store) ConsumerListByPrimary(ctx context.Context, params *store.ConsumerListByStreamParams) ([]store.Consumer, error) {
	return s.queryConsumers(ctx, `c.primary_stream = $1`, `c.id`, params.Path)
}

// ConsumerListBySubscription implements store.SubscriptionStore.
func (s *Store) ConsumerListBySubscription(ctx context.Context, params *store.ConsumerListBySubscriptionParams) ([]store.Consumer, error) {
	limit := "ALL"
	if params.Limit > 0 {
		limit = strconv.Itoa(params.Limit)
	}
	// The owner is checked in the same statement, so the consumers are
	// never those of another owner's subscription of the same id.
	return s.queryConsumers(ctx, `c.id IN (SELECT id FROM consumers WHERE subscription_id = $1 AND id > $2
		AND ($3 = '' OR EXISTS (SELECT 1 FROM subscriptions s WHERE s.id = $1 AND s.tenant = $3)) ORDER BY id LIMIT `+limit+`)`, `c.id`,
		params.SubscriptionID, params.After, params.Tenant)
}

// queryConsumers reads the consumers that match where, ordered by order.
func (s *Store) queryConsumers(ctx context.Context, where, order string, args ...any) ([]store.Consumer, error) {
	return collect(ctx, s, &query{sql: `SELECT ` + codec.ConsumerColumns + ` FROM consumers c WHERE ` + where + ` ORDER BY ` + order, args: args},
		"read consumers", codec.ScanConsumer)
}

// ConsumerPathList implements store.SubscriptionStore.
func (s *Store) ConsumerPathList(ctx context.Context, params *store.ConsumerPathListParams) ([]string, error) {
	q := &query{sql: `SELECT DISTINCT path FROM consumer_paths WHERE path > $1 ORDER BY path`, args: []any{params.After}}
	if params.Limit > 0 {
		q.add(` LIMIT `, params.Limit)
	}
	return collect(ctx, s, q, "list consumer paths", func(r codec.Row) (string, error) {
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
	var n int
	if err := s.pool.QueryRow(ctx, codec.ConsumerCountStalled, atLeast).Scan(&n); err != nil {
		return 0, fmt.Errorf("postgres: count stalled consumers: %w", err)
	}
	return n, nil
}

// countBy runs a query of (key, count) rows into out.
func (s *Store) countBy(ctx context.Context, sql, what string, out map[string]int) (map[string]int, error) {
	type kv struct {
		k string
		n int
	}
	rows, err := collect(ctx, s, &query{sql: sql}, what, func(r codec.Row) (kv, error) {
		var v kv
		return v, r.Scan(&v.k, &v.n)
	})
	if err != nil {
		return nil, err
	}
	for _, v := range rows {
		out[v.k] = v.n
	}
	return out, nil
}

// StreamList implements store.SubscriptionStore.
func (s *Store) StreamList(ctx context.Context, params *store.StreamListParams) ([]store.Stream, error) {
	if err := s.usable(); err != nil {
		return nil, err
	}
	var out []store.Stream
	after := params.After
	for {
		page, err := streamPage(ctx, s.pool, params.Prefix, after, spawnPage)
		if err != nil {
			return nil, err
		}
		for _, r := range page {
			if st, err := view(r, params.Now); err == nil {
				out = append(out, st)
				if params.Limit > 0 && len(out) == params.Limit {
					return out, nil
				}
			}
		}
		if len(page) < spawnPage {
			return out, nil
		}
		after = page[len(page)-1].Path
	}
}
