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

const subscriptionColumns = `id, pattern, webhook, secret, description, created_at`

func scanSubscription(row interface{ Scan(...any) error }) (store.Subscription, error) {
	var sub store.Subscription
	var created int64
	err := row.Scan(&sub.ID, &sub.Pattern, &sub.Webhook, &sub.Secret, &sub.Description, &created)
	sub.CreatedAt = fromNanos(created)
	return sub, err
}

// SubscriptionCreate implements store.SubscriptionStore.
func (s *Store) SubscriptionCreate(ctx context.Context, params *store.SubscriptionCreateParams) (*store.SubscriptionCreateResult, error) {
	var res *store.SubscriptionCreateResult
	err := s.write(ctx, func(b *batch) error {
		in := params.Subscription
		existing, err := scanSubscription(s.wconn.QueryRowContext(b.ctx, `SELECT `+subscriptionColumns+` FROM subscriptions WHERE id = ?`, in.ID))
		switch {
		case err == nil:
			if existing.Pattern != in.Pattern || existing.Webhook != in.Webhook || existing.Description != in.Description {
				return ruleError{store.ErrSubscriptionExists}
			}
			res = &store.SubscriptionCreateResult{Subscription: existing}
			return nil
		case !isNoRows(err):
			return fmt.Errorf("read subscription: %w", err)
		}
		in.CreatedAt = params.Now
		if _, err := b.exec(`INSERT INTO subscriptions (`+subscriptionColumns+`) VALUES (?, ?, ?, ?, ?, ?)`,
			in.ID, in.Pattern, in.Webhook, in.Secret, in.Description, nanos(in.CreatedAt)); err != nil {
			return fmt.Errorf("insert subscription: %w", err)
		}
		if err := b.spawnConsumers(params); err != nil {
			return err
		}
		res = &store.SubscriptionCreateResult{Subscription: in, Created: true}
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
	sub, err := scanSubscription(s.reader.QueryRowContext(ctx, `SELECT `+subscriptionColumns+` FROM subscriptions WHERE id = ?`, id))
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
	q := `SELECT ` + subscriptionColumns + ` FROM subscriptions`
	var args []any
	if params.Pattern != "" {
		q += ` WHERE pattern = ?`
		args = append(args, params.Pattern)
	}
	rows, err := s.reader.QueryContext(ctx, q+` ORDER BY id`, args...)
	if err != nil {
		return nil, fmt.Errorf("sqlite: list subscriptions: %w", err)
	}
	defer rows.Close()
	var out []store.Subscription
	for rows.Next() {
		sub, err := scanSubscription(rows)
		if err != nil {
			return nil, fmt.Errorf("sqlite: list subscriptions: %w", err)
		}
		out = append(out, sub)
	}
	return out, rows.Err()
}

// SubscriptionDelete implements store.SubscriptionStore.
func (s *Store) SubscriptionDelete(ctx context.Context, params *store.SubscriptionDeleteParams) error {
	return s.write(ctx, func(b *batch) error {
		res, err := b.exec(`DELETE FROM subscriptions WHERE id = ?`, params.ID)
		if err != nil {
			return fmt.Errorf("delete subscription: %w", err)
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n == 0 {
			return ruleError{store.ErrSubscriptionNotFound}
		}
		if _, err := b.exec(`DELETE FROM consumer_streams WHERE consumer_id IN (SELECT id FROM consumers WHERE subscription_id = ?)`, params.ID); err != nil {
			return fmt.Errorf("delete memberships: %w", err)
		}
		if _, err := b.exec(`DELETE FROM consumers WHERE subscription_id = ?`, params.ID); err != nil {
			return fmt.Errorf("delete consumers: %w", err)
		}
		return nil
	})
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
	res, err := b.exec(`INSERT INTO consumers (id, subscription_id, primary_stream, state, epoch, wake_id, attempts,
		waking_deadline, next_retry_at, liveness_deadline, failing_since, due_at, version)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 1) ON CONFLICT (id) DO NOTHING`,
		c.ID, c.SubscriptionID, c.PrimaryStream, c.State, c.Epoch, c.WakeID, c.Attempts,
		nanos(c.WakingDeadline), nanos(c.NextRetryAt), nanos(c.LivenessDeadline), nanos(c.FailingSince), nanos(c.DueAt))
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
	return true, b.insertMemberships(c)
}

// writeMemberships replaces the memberships of a stored consumer.
// writeMemberships makes the consumer's stored memberships c.Streams,
// writing only what changed: rewriting them all cost a delete and an
// insert per stream at every update.
func (b *batch) writeMemberships(c *store.Consumer) error {
	stmt, err := b.s.writerStmt(b.ctx, `SELECT path FROM consumer_streams WHERE consumer_id = ?`)
	if err != nil {
		return err
	}
	rows, err := stmt.QueryContext(b.ctx, c.ID)
	if err != nil {
		return fmt.Errorf("read memberships: %w", err)
	}
	var gone []string
	for rows.Next() {
		var path string
		if err := rows.Scan(&path); err != nil {
			return errors.Join(fmt.Errorf("read memberships: %w", err), rows.Close())
		}
		if !slices.ContainsFunc(c.Streams, func(m store.ConsumerStream) bool { return m.Path == path }) {
			gone = append(gone, path)
		}
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		return fmt.Errorf("read memberships: %w", err)
	}
	for _, path := range gone {
		if _, err := b.exec(`DELETE FROM consumer_streams WHERE consumer_id = ? AND path = ?`, c.ID, path); err != nil {
			return fmt.Errorf("delete membership: %w", err)
		}
	}
	return b.insertMemberships(c)
}

// insertMemberships inserts the consumer's memberships, or updates those
// that exist and differ.
func (b *batch) insertMemberships(c *store.Consumer) error {
	for i, m := range c.Streams {
		if _, err := b.exec(`INSERT INTO consumer_streams (consumer_id, path, acked, notified, ord) VALUES (?, ?, ?, ?, ?)
			ON CONFLICT (consumer_id, path) DO UPDATE SET acked = excluded.acked, notified = excluded.notified, ord = excluded.ord
			WHERE acked <> excluded.acked OR notified <> excluded.notified OR ord <> excluded.ord`,
			c.ID, m.Path, m.Acked, m.Notified, i); err != nil {
			return fmt.Errorf("insert membership: %w", err)
		}
	}
	return nil
}

// ConsumerUpdate implements store.SubscriptionStore.
func (s *Store) ConsumerUpdate(ctx context.Context, params *store.ConsumerUpdateParams) (int64, error) {
	c := params.Consumer
	err := s.writeChecked(ctx, func(b *batch) error {
		res, err := b.exec(`UPDATE consumers SET state = ?, epoch = ?, wake_id = ?, attempts = ?, waking_deadline = ?,
			next_retry_at = ?, liveness_deadline = ?, failing_since = ?, due_at = ?, version = version + 1
			WHERE id = ? AND version = ?`,
			c.State, c.Epoch, c.WakeID, c.Attempts, nanos(c.WakingDeadline), nanos(c.NextRetryAt),
			nanos(c.LivenessDeadline), nanos(c.FailingSince), nanos(c.DueAt), c.ID, params.ExpectVersion)
		if err != nil {
			return fmt.Errorf("update consumer: %w", err)
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n == 0 {
			return ruleError{b.missingOrChanged(c.ID)}
		}
		return b.writeMemberships(&c)
	})
	if err != nil {
		return 0, err
	}
	return params.ExpectVersion + 1, nil
}

// missingOrChanged tells why a compare-and-set matched no row.
func (b *batch) missingOrChanged(id string) error {
	var n int
	if err := b.s.wconn.QueryRowContext(b.ctx, `SELECT count(*) FROM consumers WHERE id = ?`, id).Scan(&n); err != nil || n == 0 {
		return store.ErrConsumerNotFound
	}
	return store.ErrConsumerConflict
}

// ConsumerDelete implements store.SubscriptionStore.
func (s *Store) ConsumerDelete(ctx context.Context, params *store.ConsumerDeleteParams) error {
	return s.writeChecked(ctx, func(b *batch) error {
		q, args := `DELETE FROM consumers WHERE id = ?`, []any{params.ID}
		if params.ExpectVersion != 0 {
			q += ` AND version = ?`
			args = append(args, params.ExpectVersion)
		}
		res, err := b.exec(q, args...)
		if err != nil {
			return fmt.Errorf("delete consumer: %w", err)
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n == 0 {
			return ruleError{b.missingOrChanged(params.ID)}
		}
		if _, err := b.exec(`DELETE FROM consumer_streams WHERE consumer_id = ?`, params.ID); err != nil {
			return fmt.Errorf("delete memberships: %w", err)
		}
		return nil
	})
}

const consumerColumns = `c.id, c.subscription_id, c.primary_stream, c.state, c.epoch, c.wake_id, c.attempts,
	c.waking_deadline, c.next_retry_at, c.liveness_deadline, c.failing_since, c.due_at, c.version`

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

// ConsumerListDue implements store.SubscriptionStore.
func (s *Store) ConsumerListDue(ctx context.Context, params *store.ConsumerListDueParams) ([]store.Consumer, error) {
	limit := params.Limit
	if limit <= 0 {
		limit = 1000
	}
	return s.queryConsumers(ctx, `c.id IN (SELECT id FROM consumers WHERE due_at > 0 AND due_at <= ? ORDER BY due_at LIMIT ?)`, `c.due_at, c.id`,
		nanos(params.Now), limit)
}

// ConsumerListByStream implements store.SubscriptionStore.
func (s *Store) ConsumerListByStream(ctx context.Context, params *store.ConsumerListByStreamParams) ([]store.Consumer, error) {
	return s.queryConsumers(ctx, `c.id IN (SELECT consumer_id FROM consumer_streams WHERE path = ?)`, `c.id`, params.Path)
}

// ConsumerListByPrimary implements store.SubscriptionStore.
func (s *Store) ConsumerListByPrimary(ctx context.Context, params *store.ConsumerListByStreamParams) ([]store.Consumer, error) {
	return s.queryConsumers(ctx, `c.primary_stream = ?`, `c.id`, params.Path)
}

// ConsumerPathList implements store.SubscriptionStore.
func (s *Store) ConsumerPathList(ctx context.Context, params *store.ConsumerPathListParams) ([]string, error) {
	limit := params.Limit
	if limit <= 0 {
		limit = -1 // SQLite: no limit
	}
	stmt, err := s.readerStmt(ctx, `SELECT DISTINCT path FROM consumer_streams WHERE path > ? ORDER BY path LIMIT ?`)
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

// queryConsumers reads the consumers that match where, ordered by order,
// with their memberships. One statement (a join) reads both, so they come
// from one snapshot without holding a transaction (and its connection)
// across statements.
func (s *Store) queryConsumers(ctx context.Context, where, order string, args ...any) ([]store.Consumer, error) {
	stmt, err := s.readerStmt(ctx, `SELECT `+consumerColumns+`, m.path, m.acked, m.notified
		FROM consumers c LEFT JOIN consumer_streams m ON m.consumer_id = c.id
		WHERE `+where+` ORDER BY `+order+`, m.ord`)
	if err != nil {
		return nil, err
	}
	rows, err := stmt.QueryContext(ctx, args...)
	if err != nil {
		return nil, fmt.Errorf("sqlite: read consumers: %w", err)
	}
	var out []store.Consumer
	for rows.Next() {
		var c store.Consumer
		var waking, retry, live, failing, due int64
		var path, acked, notified sql.NullString
		if err := rows.Scan(&c.ID, &c.SubscriptionID, &c.PrimaryStream, &c.State, &c.Epoch, &c.WakeID, &c.Attempts,
			&waking, &retry, &live, &failing, &due, &c.Version, &path, &acked, &notified); err != nil {
			return nil, errors.Join(fmt.Errorf("sqlite: read consumers: %w", err), rows.Close())
		}
		if n := len(out); n == 0 || out[n-1].ID != c.ID {
			c.WakingDeadline, c.NextRetryAt, c.LivenessDeadline = fromNanos(waking), fromNanos(retry), fromNanos(live)
			c.FailingSince, c.DueAt = fromNanos(failing), fromNanos(due)
			out = append(out, c)
		}
		if path.Valid {
			last := &out[len(out)-1]
			last.Streams = append(last.Streams, store.ConsumerStream{Path: path.String, Acked: acked.String, Notified: notified.String})
		}
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
		if strings.HasPrefix(path, params.Prefix) {
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
	return out, nil
}
