package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/heraldstreams/herald/store"
	"github.com/heraldstreams/herald/store/internal/codec"
	"github.com/jackc/pgx/v5"
)

var _ store.DeliveryStore = (*Store)(nil)

// DeliveryCursors implements store.DeliveryStore.
func (s *Store) DeliveryCursors(ctx context.Context, params *store.DeliveryCursorsParams) ([]store.DeliveryCursor, error) {
	return collect(ctx, s, &query{sql: `SELECT endpoint_id, stream, stream_id, position FROM delivery_cursors WHERE stream = $1`,
		args: []any{params.Stream}}, "read cursors", func(r codec.Row) (store.DeliveryCursor, error) {
		var c store.DeliveryCursor
		return c, r.Scan(&c.EndpointID, &c.Stream, &c.StreamID, &c.Position)
	})
}

// EventIDSpans implements store.DeliveryStore.
func (s *Store) EventIDSpans(ctx context.Context, params *store.EventIDSpansParams) ([]store.EventIDSpan, error) {
	return collect(ctx, s, &query{sql: `SELECT start_pos, end_pos, nonce, run FROM event_id_spans
		WHERE stream_id = $1 AND start_pos < $2 AND end_pos >= $3 ORDER BY start_pos`, args: []any{params.StreamID, params.To, params.From}},
		"read id spans", func(r codec.Row) (store.EventIDSpan, error) {
			sp := store.EventIDSpan{StreamID: params.StreamID}
			return sp, r.Scan(&sp.Start, &sp.End, &sp.Nonce, &sp.Run)
		})
}

// writeSpan stores one id span, or fails with ErrCursorConflict when it
// would overlap a stored span or the span to extend is not as read.
func writeSpan(ctx context.Context, tx pgx.Tx, w *store.EventIDSpanWrite) error {
	sp := w.Span
	from := sp.Start
	if w.ExtendFrom > 0 {
		from = w.ExtendFrom
	}
	var overlap int
	if err := tx.QueryRow(ctx, `SELECT count(*) FROM event_id_spans WHERE stream_id = $1 AND start_pos < $2 AND end_pos > $3`,
		sp.StreamID, sp.End, from).Scan(&overlap); err != nil {
		return fmt.Errorf("postgres: read id spans: %w", err)
	}
	if overlap > 0 || sp.End <= from {
		return store.ErrCursorConflict
	}
	var n int64
	if w.ExtendFrom > 0 {
		tag, err := tx.Exec(ctx, `UPDATE event_id_spans SET end_pos = $1 WHERE stream_id = $2 AND start_pos = $3 AND end_pos = $4 AND run = $5`,
			sp.End, sp.StreamID, sp.Start, w.ExtendFrom, sp.Run)
		if err != nil {
			return fmt.Errorf("postgres: write id span: %w", err)
		}
		n = tag.RowsAffected()
	} else {
		tag, err := tx.Exec(ctx, `INSERT INTO event_id_spans (stream_id, start_pos, end_pos, nonce, run) VALUES ($1, $2, $3, $4, $5)
			ON CONFLICT (stream_id, start_pos) DO NOTHING`, sp.StreamID, sp.Start, sp.End, sp.Nonce, sp.Run)
		if err != nil {
			return fmt.Errorf("postgres: write id span: %w", err)
		}
		n = tag.RowsAffected()
	}
	if n == 0 {
		return store.ErrCursorConflict
	}
	return nil
}

// DeliveryEnqueue implements store.DeliveryStore.
func (s *Store) DeliveryEnqueue(ctx context.Context, params *store.DeliveryEnqueueParams) (*store.DeliveryEnqueueResult, error) {
	res := &store.DeliveryEnqueueResult{}
	err := s.tx(ctx, func(tx *wtx) error {
		res.Queued, res.Leased = 0, nil
		for i := range params.Spans {
			if err := writeSpan(ctx, tx, &params.Spans[i]); err != nil {
				return err
			}
		}
		for _, c := range params.Cursors {
			var sql string
			args := []any{params.Stream, c.EndpointID, c.StreamID, c.Position}
			if c.Found {
				sql = `UPDATE delivery_cursors SET stream_id = $3, position = $4
					WHERE stream = $1 AND endpoint_id = $2 AND stream_id = $5 AND position = $6`
				args = append(args, c.ExpectStreamID, c.ExpectPosition)
			} else {
				sql = `INSERT INTO delivery_cursors (stream, endpoint_id, stream_id, position) VALUES ($1, $2, $3, $4)
					ON CONFLICT (stream, endpoint_id) DO NOTHING`
			}
			tag, err := tx.Exec(ctx, sql, args...)
			if err != nil {
				return fmt.Errorf("postgres: advance cursor: %w", err)
			}
			if tag.RowsAffected() == 0 {
				return store.ErrCursorConflict
			}
		}
		now := codec.Nanos(params.Now)
		grants, token, err := s.claims.Grants(pgTx{ctx, tx, s}, params)
		if err != nil {
			return fmt.Errorf("postgres: lease deliveries: %w", err)
		}
		for _, d := range params.Deliveries {
			owner, until, tok := "", int64(0), int64(0)
			leased := !d.LeaseUntil.IsZero() && grants[d.EndpointID] > 0
			if leased {
				owner, until, tok = s.owner, codec.Nanos(d.LeaseUntil), token
			}
			var seq int64
			err := tx.QueryRow(ctx, `INSERT INTO deliveries (endpoint_id, event_id, event_type, stream, position, body, status,
				next_attempt_at, created_at, updated_at, lease_until, lease_token, lease_owner, trace_parent, event_tenant)
				VALUES ($1, $2, $3, $4, $5, $6, 'pending', $7, $8, $8, $9, $10, $11, $12, $13)
				ON CONFLICT (endpoint_id, event_tenant, event_id) DO NOTHING RETURNING seq`,
				d.EndpointID, d.EventID, d.EventType, d.Stream, d.Position, d.Body, codec.Nanos(d.NextAttemptAt), now,
				until, tok, owner, d.TraceParent, d.EventTenant).Scan(&seq)
			switch {
			case err == nil:
				res.Queued++
				if leased {
					grants[d.EndpointID]--
					d.Seq, d.ID, d.Status, d.LeaseToken = seq, s.ids.ID(seq), store.DeliveryPending, token
					d.CreatedAt, d.UpdatedAt = codec.FromNanos(now), codec.FromNanos(now)
					res.Leased = append(res.Leased, d)
				}
				continue
			case !isNoRows(err):
				return fmt.Errorf("postgres: insert delivery: %w", err)
			case !params.Replay:
				continue
			}
			tag, err := tx.Exec(ctx, `UPDATE deliveries SET status = 'pending', round_attempts = 0, next_attempt_at = $1, finished_at = 0,
				updated_at = $2 WHERE endpoint_id = $3 AND event_tenant = $4 AND event_id = $5 AND status IN ('delivered', 'exhausted')`,
				codec.Nanos(d.NextAttemptAt), now, d.EndpointID, d.EventTenant, d.EventID)
			if err != nil {
				return fmt.Errorf("postgres: replay delivery: %w", err)
			}
			res.Queued += int(tag.RowsAffected())
		}
		for i := range params.Sightings {
			if err := writeSighting(ctx, tx, params.Stream, &params.Sightings[i], now); err != nil {
				return err
			}
		}
		if params.Job != nil {
			return stepJob(ctx, tx, params.Job, res.Queued, params.Now)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return res, nil
}

// DeliveryClaim implements store.DeliveryStore: codec's claim.
func (s *Store) DeliveryClaim(ctx context.Context, params *store.DeliveryClaimParams) (*store.DeliveryClaimResult, error) {
	var res *store.DeliveryClaimResult
	err := s.tx(ctx, func(tx *wtx) error {
		var err error
		res, err = s.claims.Claim(pgTx{ctx, tx, s}, params)
		if err != nil {
			return fmt.Errorf("postgres: claim: %w", err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return res, nil
}

// DeliveryComplete implements store.DeliveryStore. A result applies only
// while its lease token is the delivery's current one, and ends its lease.
func (s *Store) DeliveryComplete(ctx context.Context, params *store.DeliveryCompleteParams) (*store.DeliveryCompleteResult, error) {
	res := &store.DeliveryCompleteResult{}
	now := codec.Nanos(params.Now)
	h := params.Health
	err := s.tx(ctx, func(tx *wtx) error {
		res.Applied = 0
		tag, err := tx.Exec(ctx, `UPDATE endpoints SET consecutive_failures = $1, last_success_at = $2, last_failure_at = $3, last_error = $4,
			disabled_at = $5, disabled_reason = $6, health_version = health_version + 1 WHERE id = $7 AND health_version = $8`,
			h.ConsecutiveFailures, codec.Nanos(h.LastSuccessAt), codec.Nanos(h.LastFailureAt), h.LastError, codec.Nanos(h.DisabledAt),
			h.DisabledReason, params.EndpointID, params.ExpectHealthVersion)
		if err != nil {
			return fmt.Errorf("postgres: update endpoint health: %w", err)
		}
		if tag.RowsAffected() == 0 {
			return endpointMissOrConflict(ctx, tx, params.EndpointID)
		}
		res.HealthVersion = params.ExpectHealthVersion + 1
		if !h.DisabledAt.IsZero() {
			// The breaker is open: other replicas stop sending now.
			if err := s.invalidate(ctx, tx, store.Invalidation{Kind: store.CacheEndpoint, ID: params.EndpointID}); err != nil {
				return err
			}
		}
		for i := range params.Results {
			dr := &params.Results[i]
			seq, ok := s.ids.Seq(dr.DeliveryID)
			if !ok {
				continue
			}
			complete, attempt := codec.CompleteArgs(dr, seq, params.EndpointID, now)
			tag, err := tx.Exec(ctx, codec.CompleteSQL, complete...)
			if err != nil {
				return fmt.Errorf("postgres: complete delivery: %w", err)
			}
			if tag.RowsAffected() == 0 {
				continue // the lease ended and another claim holds it, or it finished meanwhile
			}
			if _, err := tx.Exec(ctx, codec.AttemptSQL, attempt...); err != nil {
				return fmt.Errorf("postgres: insert attempt: %w", err)
			}
			res.Applied++
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return res, nil
}

// DeliveryGet implements store.DeliveryStore.
func (s *Store) DeliveryGet(ctx context.Context, id string) (*store.Delivery, error) {
	seq, ok := s.ids.Seq(id)
	if !ok {
		return nil, store.ErrDeliveryNotFound
	}
	ds, err := collect(ctx, s, &query{sql: `SELECT ` + codec.DeliveryLeaseColumns + ` FROM deliveries WHERE seq = $1`, args: []any{seq}},
		"read delivery", s.claims.ScanLeased)
	if err != nil {
		return nil, err
	}
	if len(ds) == 0 {
		return nil, store.ErrDeliveryNotFound
	}
	return &ds[0], nil
}

// DeliveryList implements store.DeliveryStore.
func (s *Store) DeliveryList(ctx context.Context, params *store.DeliveryListParams) ([]store.Delivery, error) {
	q := deliveryFilter(`SELECT `+codec.DeliveryColumns+`, lease_until, lease_token FROM deliveries`, params)
	if params.Before != "" {
		seq, ok := s.ids.Seq(params.Before)
		if !ok {
			return nil, store.ErrInvalidCursor
		}
		q.add(` AND seq < `, seq)
	}
	q.sql += ` ORDER BY seq DESC`
	if params.Limit > 0 {
		q.add(` LIMIT `, params.Limit)
	}
	return collect(ctx, s, q, "list deliveries", func(r codec.Row) (store.Delivery, error) {
		var until, token int64
		d, err := codec.ScanDelivery(s.ids, r, &until, &token)
		d.LeaseUntil, d.LeaseToken = codec.FromNanos(until), token
		return d, err
	})
}

// DeliveryCount implements store.DeliveryStore.
func (s *Store) DeliveryCount(ctx context.Context, params *store.DeliveryListParams) (int, error) {
	n, err := collect(ctx, s, deliveryFilter(`SELECT count(*) FROM deliveries`, params), "count deliveries",
		func(r codec.Row) (int, error) {
			var n int
			err := r.Scan(&n)
			return n, err
		})
	if err != nil {
		return 0, err
	}
	return n[0], nil
}

// deliveryFilter is the query of the deliveries that DeliveryList and
// DeliveryCount consider (the cursor and the limit aside), selected by
// sel.
func deliveryFilter(sel string, params *store.DeliveryListParams) *query {
	q := &query{sql: sel + ` WHERE endpoint_id = $1`, args: []any{params.EndpointID}}
	if params.Status != "" {
		q.add(` AND status = `, params.Status)
	}
	if params.EventType != "" {
		q.add(` AND event_type = `, params.EventType)
	}
	if !params.Since.IsZero() {
		q.add(` AND created_at >= `, codec.Nanos(params.Since))
	}
	if !params.Until.IsZero() {
		q.add(` AND created_at < `, codec.Nanos(params.Until))
	}
	return q
}

// DeliveryAttempts implements store.DeliveryStore.
func (s *Store) DeliveryAttempts(ctx context.Context, deliveryID string) ([]store.DeliveryAttempt, error) {
	seq, ok := s.ids.Seq(deliveryID)
	if !ok {
		return nil, nil
	}
	return collect(ctx, s, &query{sql: `SELECT id, at, status_code, response_body, latency_ns, error, batch_id
		FROM delivery_attempts WHERE delivery_seq = $1 ORDER BY id`, args: []any{seq}}, "list attempts",
		func(r codec.Row) (store.DeliveryAttempt, error) {
			a := store.DeliveryAttempt{DeliveryID: deliveryID}
			var at, latency int64
			err := r.Scan(&a.ID, &at, &a.StatusCode, &a.ResponseBody, &latency, &a.Error, &a.BatchID)
			a.At, a.Latency = codec.FromNanos(at), time.Duration(latency)
			return a, err
		})
}

// DeliveryRecentAttempts implements store.DeliveryStore.
func (s *Store) DeliveryRecentAttempts(ctx context.Context, params *store.RecentAttemptsParams) ([]store.DeliveryAttempt, error) {
	return collect(ctx, s, &query{sql: `SELECT a.id, a.delivery_seq, a.at, a.status_code, a.latency_ns, a.error
		FROM delivery_attempts a WHERE a.delivery_seq IN
			(SELECT seq FROM deliveries WHERE endpoint_id = $1 ORDER BY seq DESC LIMIT $2)
		ORDER BY a.id DESC LIMIT $2`, args: []any{params.EndpointID, params.Limit}}, "recent attempts",
		func(r codec.Row) (store.DeliveryAttempt, error) {
			var a store.DeliveryAttempt
			var seq, at, latency int64
			err := r.Scan(&a.ID, &seq, &at, &a.StatusCode, &latency, &a.Error)
			a.DeliveryID, a.At, a.Latency = s.ids.ID(seq), codec.FromNanos(at), time.Duration(latency)
			return a, err
		})
}

// DeliveryRetry implements store.DeliveryStore.
func (s *Store) DeliveryRetry(ctx context.Context, params *store.DeliveryRetryParams) (*store.Delivery, error) {
	seq, ok := s.ids.Seq(params.ID)
	if !ok {
		return nil, store.ErrDeliveryNotFound
	}
	var out store.Delivery
	err := s.tx(ctx, func(tx *wtx) error {
		var until, token int64
		var err error
		out, err = codec.ScanDelivery(s.ids, tx.QueryRow(ctx, `UPDATE deliveries SET status = 'pending', round_attempts = 0,
			next_attempt_at = $1, finished_at = 0, updated_at = $1 WHERE seq = $2
			RETURNING `+codec.DeliveryColumns+`, lease_until, lease_token`, codec.Nanos(params.Now), seq), &until, &token)
		if isNoRows(err) {
			return store.ErrDeliveryNotFound
		}
		if err != nil {
			return fmt.Errorf("postgres: retry delivery: %w", err)
		}
		out.LeaseUntil, out.LeaseToken = codec.FromNanos(until), token
		return nil
	})
	if err != nil {
		return nil, err
	}
	return &out, nil
}

// DeliveryPrune implements store.DeliveryStore.
func (s *Store) DeliveryPrune(ctx context.Context, params *store.DeliveryPruneParams) (int, error) {
	limit := params.Limit
	if limit <= 0 {
		limit = 1000
	}
	var removed int
	err := s.tx(ctx, func(tx *wtx) error {
		before := codec.Nanos(params.Before)
		err := tx.QueryRow(ctx, `WITH gone AS (DELETE FROM deliveries WHERE seq IN
				(SELECT seq FROM deliveries WHERE finished_at > 0 AND finished_at < $1 ORDER BY finished_at LIMIT $2) RETURNING seq),
			attempts AS (DELETE FROM delivery_attempts WHERE delivery_seq IN (SELECT seq FROM gone))
			SELECT count(*) FROM gone`, before, limit).Scan(&removed)
		if err != nil {
			return fmt.Errorf("postgres: prune deliveries: %w", err)
		}
		if _, err := tx.Exec(ctx, `DELETE FROM published_events WHERE created_at < $1`, before); err != nil {
			return fmt.Errorf("postgres: prune event ids: %w", err)
		}
		if _, err := tx.Exec(ctx, `DELETE FROM replay_jobs WHERE finished_at > 0 AND finished_at < $1`, before); err != nil {
			return fmt.Errorf("postgres: prune replay jobs: %w", err)
		}
		// Id spans go with their stream (a stream id is never used again
		// in one database).
		if _, err := tx.Exec(ctx, `DELETE FROM event_id_spans WHERE stream_id IN (SELECT DISTINCT s.stream_id FROM event_id_spans s
			WHERE NOT EXISTS (SELECT 1 FROM streams t WHERE t.id = s.stream_id) LIMIT $1)`, limit); err != nil {
			return fmt.Errorf("postgres: prune id spans: %w", err)
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	return removed, nil
}

// DeliveryBacklog implements store.DeliveryStore.
func (s *Store) DeliveryBacklog(ctx context.Context) (map[string]int, error) {
	return s.countBy(ctx, `SELECT endpoint_id, count(*) FROM deliveries WHERE status IN ('pending', 'failed') GROUP BY endpoint_id`,
		"backlog", map[string]int{})
}

// EventPublish implements store.DeliveryStore: the append and the id are
// written in one transaction, so the id is recorded exactly when the
// event is.
func (s *Store) EventPublish(ctx context.Context, params *store.EventPublishParams) (*store.EventPublishResult, error) {
	var res *store.EventPublishResult
	err := s.tx(ctx, func(tx *wtx) error {
		res = &store.EventPublishResult{Stream: params.Stream}
		err := tx.QueryRow(ctx, codec.EventIDGet,
			params.Tenant, params.EventID).Scan(&res.Stream, &res.Position)
		switch {
		case err == nil:
			res.Duplicate = true
			return nil
		case !isNoRows(err):
			return fmt.Errorf("postgres: read event id: %w", err)
		}
		r, err := getRow(ctx, tx, params.Stream, false)
		if err != nil {
			return err
		}
		if r == nil {
			if _, err := s.create(ctx, tx, &store.StreamCreateParams{Path: params.Stream, ContentType: "application/json", Now: params.Now}); err != nil {
				return err
			}
		}
		a, err := s.append(ctx, tx, &store.StreamAppendParams{Path: params.Stream, ContentType: "application/json",
			Data: params.Data, Messages: 1, Now: params.Now})
		if err != nil {
			return err
		}
		res.Position = a.Start
		if _, err := tx.Exec(ctx, codec.EventIDInsert,
			params.Tenant, params.EventID, params.Stream, a.Start, codec.Nanos(params.Now)); err != nil {
			return fmt.Errorf("postgres: record event id: %w", err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return res, nil
}
