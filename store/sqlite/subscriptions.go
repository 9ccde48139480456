package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/heraldstreams/herald/store"
	"github.com/heraldstreams/herald/store/internal/codec"
)

var _ store.SubscriptionStore = (*Store)(nil)

// exec runs a statement on the writer connection inside the batch,
// preparing it once.
func (b *batch) exec(query string, args ...any) (sql.Result, error) {
	stmt, err := b.s.writerStmt(b.ctx, query)
	if err != nil {
		return nil, err
	}
	return stmt.ExecContext(b.ctx, args...)
}

// writerStmt returns query prepared on the writer connection. Only the
// committer goroutine (and Close, after it stopped) touches the cache.
func (s *Store) writerStmt(ctx context.Context, query string) (*sql.Stmt, error) {
	if st, ok := s.wprepared[query]; ok {
		return st, nil
	}
	st, err := s.wconn.PrepareContext(ctx, query)
	if err != nil {
		return nil, fmt.Errorf("prepare: %w", err)
	}
	s.wprepared[query] = st
	return st, nil
}

const subscriptionColumns = codec.SubscriptionColumns

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
	var res *store.SubscriptionCreateResult
	sealed, err := s.SealSecret(params.Subscription.Secret, "subscriptions", params.Subscription.ID, "secret")
	if err != nil {
		return nil, err
	}
	err = s.write(ctx, func(b *batch) error {
		in := params.Subscription
		existing, err := s.scanSubscription(s.wconn.QueryRowContext(b.ctx, `SELECT `+subscriptionColumns+` FROM subscriptions WHERE id = ?`, in.ID))
		switch {
		case err == nil:
			if !store.SameSubscription(&existing, &in) {
				return ruleError{store.ErrSubscriptionExists}
			}
			res = &store.SubscriptionCreateResult{Subscription: existing}
			return nil
		case !isNoRows(err):
			return fmt.Errorf("read subscription: %w", err)
		}
		in.CreatedAt = params.Now
		if _, err := b.exec(`INSERT INTO subscriptions (`+subscriptionColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?)`,
			in.ID, in.Pattern, in.Webhook, sealed, in.Description, codec.Nanos(in.CreatedAt), in.Tenant); err != nil {
			return fmt.Errorf("insert subscription: %w", err)
		}
		if err := b.spawnConsumers(params); err != nil {
			return err
		}
		res = &store.SubscriptionCreateResult{Subscription: in, Created: true}
		b.invalidate(store.CacheSubscription, in.ID)
		return nil
	})
	return res, err
}

// spawnConsumers inserts the consumers params.Spawn makes for the live
// streams under params.Prefix as of this batch (earlier ops' streams
// included). Only the entries are collected up front; each consumer is
// made, inserted and dropped in turn.
func (b *batch) spawnConsumers(params *store.SubscriptionCreateParams) error {
	if params.Spawn == nil {
		return nil
	}
	var entries []*entry
	for path, e := range b.overlay {
		if e != nil && strings.HasPrefix(path, params.Prefix) {
			entries = append(entries, e)
		}
	}
	// The committer is the only writer of byPath: reading it here is safe.
	for path, e := range b.s.byPath {
		if _, staged := b.overlay[path]; !staged && strings.HasPrefix(path, params.Prefix) {
			entries = append(entries, e)
		}
	}
	// In path order, which is nearly consumer id order: the inserts then
	// land in neighbouring pages.
	slices.SortFunc(entries, func(x, y *entry) int { return strings.Compare(x.path, y.path) })
	for i, e := range entries {
		entries[i] = nil // let the collector have what was inserted
		st, err := b.s.view(e, params.Now)
		if err != nil {
			continue // soft-deleted or expired
		}
		c, ok := params.Spawn(&st)
		if !ok {
			continue
		}
		if _, err := b.insertConsumer(&c); err != nil {
			return err
		}
	}
	return nil
}

// SubscriptionGet implements store.SubscriptionStore.
func (s *Store) SubscriptionGet(ctx context.Context, id string) (*store.Subscription, error) {
	sub, err := s.scanSubscription(s.reader.QueryRowContext(ctx, `SELECT `+subscriptionColumns+` FROM subscriptions WHERE id = ?`, id))
	if isNoRows(err) {
		return nil, store.ErrSubscriptionNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("sqlite: read subscription: %w", err)
	}
	return &sub, nil
}

// SubscriptionList implements store.SubscriptionStore.
func (s *Store) SubscriptionList(ctx context.Context, params *store.SubscriptionListParams) ([]store.Subscription, error) {
	q := `SELECT ` + subscriptionColumns + ` FROM subscriptions WHERE true`
	var args []any
	if params.Pattern != "" {
		q += ` AND pattern = ?`
		args = append(args, params.Pattern)
	}
	if params.Tenant != "" {
		q += ` AND tenant = ?`
		args = append(args, params.Tenant)
	}
	rows, err := s.reader.QueryContext(ctx, q+` ORDER BY id`, args...)
	if err != nil {
		return nil, fmt.Errorf("sqlite: list subscriptions: %w", err)
	}
	defer rows.Close()
	var out []store.Subscription
	for rows.Next() {
		sub, err := s.scanSubscription(rows)
		if err != nil {
			return nil, fmt.Errorf("sqlite: list subscriptions: %w", err)
		}
		out = append(out, sub)
	}
	return out, rows.Err()
}

// SubscriptionDelete implements store.SubscriptionStore.
func (s *Store) SubscriptionDelete(ctx context.Context, params *store.SubscriptionDeleteParams) (int, error) {
	var removed int64
	err := s.write(ctx, func(b *batch) error {
		res, err := b.exec(`DELETE FROM subscriptions WHERE id = ? AND (? = '' OR tenant = ?)`, params.ID, params.Tenant, params.Tenant)
		if err != nil {
			return fmt.Errorf("delete subscription: %w", err)
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n == 0 {
			return ruleError{store.ErrSubscriptionNotFound}
		}
		if _, err := b.exec(`DELETE FROM consumer_paths WHERE (path, consumer_id) IN
			(SELECT j.value, c.id FROM consumers c, json_each(c.paths) j WHERE c.subscription_id = ?)`, params.ID); err != nil {
			return fmt.Errorf("delete memberships: %w", err)
		}
		res, err = b.exec(`DELETE FROM consumers WHERE subscription_id = ?`, params.ID)
		if err != nil {
			return fmt.Errorf("delete consumers: %w", err)
		}
		b.invalidate(store.CacheSubscription, params.ID)
		removed, err = res.RowsAffected()
		return err
	})
	return int(removed), err
}

// ConsumerInsert implements store.SubscriptionStore.
func (s *Store) ConsumerInsert(ctx context.Context, params *store.ConsumerInsertParams) ([]string, error) {
	var ids []string
	err := s.write(ctx, func(b *batch) error {
		var err error
		ids, err = b.insertConsumers(params.Consumers)
		return err
	})
	return ids, err
}

func (b *batch) insertConsumers(cs []store.Consumer) ([]string, error) {
	var ids []string
	for i := range cs {
		inserted, err := b.insertConsumer(&cs[i])
		if err != nil {
			return nil, err
		}
		if inserted {
			ids = append(ids, cs[i].ID)
		}
	}
	return ids, nil
}

// insertConsumer inserts c with its memberships unless its id exists.
func (b *batch) insertConsumer(c *store.Consumer) (bool, error) {
	paths, cursors := codec.EncodeMemberships(c.Streams)
	res, err := b.exec(`INSERT INTO consumers (id, subscription_id, incarnation, primary_stream, state, epoch, wake_id, attempts,
		waking_deadline, next_retry_at, liveness_deadline, failing_since, due_at, paths, cursors, stalled_wakes, stalled_since, version)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 1) ON CONFLICT (id) DO NOTHING`,
		c.ID, c.SubscriptionID, c.Incarnation, c.PrimaryStream, c.State, c.Epoch, c.WakeID, c.Attempts,
		codec.Nanos(c.WakingDeadline), codec.Nanos(c.NextRetryAt), codec.Nanos(c.LivenessDeadline), codec.Nanos(c.FailingSince), codec.Nanos(c.DueAt), paths, cursors,
		c.StalledWakes, codec.Nanos(c.StalledSince))
	if err != nil {
		return false, fmt.Errorf("insert consumer: %w", err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return false, err
	} else if n == 0 {
		return false, nil
	}
	// A new consumer has no memberships yet: every removal of a consumer
	// removes them too.
	return true, b.writePaths(c.ID, nil, c.Streams)
}

// writePaths makes the index of a consumer's memberships go from the
// streams in was to those in now.
func (b *batch) writePaths(id string, was, now []store.ConsumerStream) error {
	has := func(list []store.ConsumerStream, path string) bool {
		return slices.ContainsFunc(list, func(m store.ConsumerStream) bool { return m.Path == path })
	}
	for _, m := range was {
		if has(now, m.Path) {
			continue
		}
		if _, err := b.exec(`DELETE FROM consumer_paths WHERE path = ? AND consumer_id = ?`, m.Path, id); err != nil {
			return fmt.Errorf("delete membership: %w", err)
		}
	}
	for _, m := range now {
		if has(was, m.Path) {
			continue
		}
		if _, err := b.exec(`INSERT INTO consumer_paths (path, consumer_id) VALUES (?, ?) ON CONFLICT DO NOTHING`, m.Path, id); err != nil {
			return fmt.Errorf("insert membership: %w", err)
		}
	}
	return nil
}

// ConsumerUpdate implements store.SubscriptionStore. The common update
// (a wake: states, deadlines and offsets change, the streams do not) is
// one statement, whose compare-and-set also expects the stored paths; when
// it matches nothing, the stored row tells whether the consumer is gone,
// changed, or changed its streams, whose index is then written too.
func (s *Store) ConsumerUpdate(ctx context.Context, params *store.ConsumerUpdateParams) (int64, error) {
	c := params.Consumer
	paths, cursors := codec.EncodeMemberships(c.Streams)
	const update = `UPDATE consumers SET state = ?, epoch = ?, wake_id = ?, attempts = ?, waking_deadline = ?,
		next_retry_at = ?, liveness_deadline = ?, failing_since = ?, due_at = ?, paths = ?, cursors = ?,
		stalled_wakes = ?, stalled_since = ?, version = version + 1,
		timer_until = 0, timer_owner = '' WHERE id = ?`
	// Room for the two compare-and-set arguments, so appending them does
	// not copy the list.
	args := append(make([]any, 0, 16), c.State, c.Epoch, c.WakeID, c.Attempts, codec.Nanos(c.WakingDeadline), codec.Nanos(c.NextRetryAt),
		codec.Nanos(c.LivenessDeadline), codec.Nanos(c.FailingSince), codec.Nanos(c.DueAt), paths, cursors,
		c.StalledWakes, codec.Nanos(c.StalledSince), c.ID)
	err := s.writeChecked(ctx, func(b *batch) error {
		res, err := b.exec(update+` AND version = ? AND paths = ?`, append(args, params.ExpectVersion, paths)...)
		if err != nil {
			return fmt.Errorf("update consumer: %w", err)
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n == 1 {
			return nil
		}
		was, err := b.storedMemberships(c.ID, params.ExpectVersion)
		if err != nil {
			return err
		}
		if _, err := b.exec(update, args...); err != nil {
			return fmt.Errorf("update consumer: %w", err)
		}
		return b.writePaths(c.ID, was, c.Streams)
	})
	if err != nil {
		return 0, err
	}
	return params.ExpectVersion + 1, nil
}

// storedMemberships returns the memberships of consumer id as stored in
// this batch, or the rule error of a compare-and-set expecting version:
// the consumer is gone, or another write changed it (version 0 expects
// any).
func (b *batch) storedMemberships(id string, version int64) ([]store.ConsumerStream, error) {
	stmt, err := b.s.writerStmt(b.ctx, `SELECT version, paths, cursors FROM consumers WHERE id = ?`)
	if err != nil {
		return nil, err
	}
	var stored int64
	var paths, cursors string
	switch err := stmt.QueryRowContext(b.ctx, id).Scan(&stored, &paths, &cursors); {
	case isNoRows(err):
		return nil, ruleError{store.ErrConsumerNotFound}
	case err != nil:
		return nil, fmt.Errorf("read consumer: %w", err)
	case version != 0 && stored != version:
		return nil, ruleError{store.ErrConsumerConflict}
	}
	return codec.DecodeMemberships(paths, cursors)
}

// ConsumerDelete implements store.SubscriptionStore.
func (s *Store) ConsumerDelete(ctx context.Context, params *store.ConsumerDeleteParams) error {
	return s.writeChecked(ctx, func(b *batch) error {
		was, err := b.storedMemberships(params.ID, params.ExpectVersion)
		if err != nil {
			return err
		}
		if _, err := b.exec(`DELETE FROM consumers WHERE id = ?`, params.ID); err != nil {
			return fmt.Errorf("delete consumer: %w", err)
		}
		return b.writePaths(params.ID, was, nil)
	})
}

const consumerColumns = codec.ConsumerColumns

// ConsumerGet implements store.SubscriptionStore.
func (s *Store) ConsumerGet(ctx context.Context, id string) (*store.Consumer, error) {
	cs, err := s.queryConsumers(ctx, `c.id = ?`, `c.id`, id)
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
	return s.queryConsumers(ctx, `c.id IN (SELECT consumer_id FROM consumer_paths WHERE path = ?)`, `c.id`, params.Path)
}

// ConsumerListByPrimary implements store.SubscriptionStore.
func (s *Store) ConsumerListByPrimary(ctx context.Context, params *store.ConsumerListByStreamParams) ([]store.Consumer, error) {
	return s.queryConsumers(ctx, `c.primary_stream = ?`, `c.id`, params.Path)
}

// ConsumerListBySubscription implements store.SubscriptionStore.
func (s *Store) ConsumerListBySubscription(ctx context.Context, params *store.ConsumerListBySubscriptionParams) ([]store.Consumer, error) {
	limit := params.Limit
	if limit <= 0 {
		limit = -1 // SQLite: no limit
	}
	// The owner is checked in the same statement, so the consumers are
	// never those of another owner's subscription of the same id.
	return s.queryConsumers(ctx, `c.id IN (SELECT id FROM consumers WHERE subscription_id = ? AND id > ?
		AND (? = '' OR EXISTS (SELECT 1 FROM subscriptions s WHERE s.id = ? AND s.tenant = ?)) ORDER BY id LIMIT ?)`, `c.id`,
		params.SubscriptionID, params.After, params.Tenant, params.SubscriptionID, params.Tenant, limit)
}

// ConsumerPathList implements store.SubscriptionStore.
func (s *Store) ConsumerPathList(ctx context.Context, params *store.ConsumerPathListParams) ([]string, error) {
	limit := params.Limit
	if limit <= 0 {
		limit = -1 // SQLite: no limit
	}
	stmt, err := s.readerStmt(ctx, `SELECT DISTINCT path FROM consumer_paths WHERE path > ? ORDER BY path LIMIT ?`)
	if err != nil {
		return nil, err
	}
	rows, err := stmt.QueryContext(ctx, params.After, limit)
	if err != nil {
		return nil, fmt.Errorf("sqlite: list consumer paths: %w", err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var p string
		if err := rows.Scan(&p); err != nil {
			return nil, fmt.Errorf("sqlite: list consumer paths: %w", err)
		}
		out = append(out, p)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: list consumer paths: %w", err)
	}
	return out, nil
}

// ConsumerCountStalled implements store.SubscriptionStore.
func (s *Store) ConsumerCountStalled(ctx context.Context, atLeast int) (int, error) {
	var n int
	if err := s.reader.QueryRowContext(ctx, consumerCountStalled, atLeast).Scan(&n); err != nil {
		return 0, fmt.Errorf("sqlite: count stalled consumers: %w", err)
	}
	return n, nil
}

// ConsumerCount implements store.SubscriptionStore.
func (s *Store) ConsumerCount(ctx context.Context) (map[string]int, error) {
	rows, err := s.reader.QueryContext(ctx, `SELECT state, count(*) FROM consumers GROUP BY state`)
	if err != nil {
		return nil, fmt.Errorf("sqlite: count consumers: %w", err)
	}
	defer rows.Close()
	out := make(map[string]int)
	for rows.Next() {
		var state string
		var n int
		if err := rows.Scan(&state, &n); err != nil {
			return nil, fmt.Errorf("sqlite: count consumers: %w", err)
		}
		out[state] = n
	}
	return out, rows.Err()
}

// queryConsumers reads the consumers that match where, ordered by order.
func (s *Store) queryConsumers(ctx context.Context, where, order string, args ...any) ([]store.Consumer, error) {
	stmt, err := s.readerStmt(ctx, `SELECT `+consumerColumns+` FROM consumers c WHERE `+where+` ORDER BY `+order)
	if err != nil {
		return nil, err
	}
	rows, err := stmt.QueryContext(ctx, args...)
	if err != nil {
		return nil, fmt.Errorf("sqlite: read consumers: %w", err)
	}
	var out []store.Consumer
	for rows.Next() {
		c, err := codec.ScanConsumer(rows)
		if err != nil {
			return nil, errors.Join(fmt.Errorf("sqlite: read consumers: %w", err), rows.Close())
		}
		out = append(out, c)
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		return nil, fmt.Errorf("sqlite: read consumers: %w", err)
	}
	return out, nil
}

// readerStmt returns query prepared on the read pool, preparing it once
// (database/sql prepares it again on each pooled connection as needed).
func (s *Store) readerStmt(ctx context.Context, query string) (*sql.Stmt, error) {
	s.rprepMu.Lock()
	st, ok := s.rprepared[query]
	s.rprepMu.Unlock()
	if ok {
		return st, nil
	}
	// Prepared without the lock: preparing takes a pooled connection,
	// and nobody may wait for a connection while holding the lock.
	st, err := s.reader.PrepareContext(ctx, query)
	if err != nil {
		return nil, fmt.Errorf("sqlite: prepare read: %w", err)
	}
	s.rprepMu.Lock()
	defer s.rprepMu.Unlock()
	if prev, ok := s.rprepared[query]; ok {
		return prev, st.Close() // another caller prepared it first
	}
	s.rprepared[query] = st
	return st, nil
}

// StreamList implements store.SubscriptionStore.
func (s *Store) StreamList(ctx context.Context, params *store.StreamListParams) ([]store.Stream, error) {
	s.cacheMu.RLock()
	entries := make([]*entry, 0, len(s.byPath))
	for path, e := range s.byPath {
		if strings.HasPrefix(path, params.Prefix) && path > params.After {
			entries = append(entries, e)
		}
	}
	s.cacheMu.RUnlock()
	out := make([]store.Stream, 0, len(entries))
	for _, e := range entries {
		if st, err := s.view(e, params.Now); err == nil {
			out = append(out, st)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	if params.Limit > 0 && len(out) > params.Limit {
		out = out[:params.Limit]
	}
	return out, nil
}
