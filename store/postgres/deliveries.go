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

// deliveryLeaseColumns follow codec.DeliveryColumns where a delivery is
// read with its body and lease.
const deliveryLeaseColumns = codec.DeliveryColumns + `, body, lease_until, lease_token`

// s.scanLeased scans a row of deliveryLeaseColumns.
func (s *Store) scanLeased(row codec.Row) (store.Delivery, error) {
	var body []byte
	var until, token int64
	d, err := codec.ScanDelivery(s.ids, row, &body, &until, &token)
	d.Body, d.LeaseUntil, d.LeaseToken = body, codec.FromNanos(until), token
	return d, err
}

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
		for _, d := range params.Deliveries {
			owner := ""
			if !d.LeaseUntil.IsZero() {
				owner = s.owner
			}
			var seq, token int64
			err := tx.QueryRow(ctx, `INSERT INTO deliveries (endpoint_id, event_id, event_type, stream, position, body, status,
				next_attempt_at, created_at, updated_at, lease_until, lease_token, lease_owner)
				VALUES ($1, $2, $3, $4, $5, $6, 'pending', $7, $8, $8, $9::bigint,
					CASE WHEN $9::bigint > 0 THEN nextval('delivery_lease_tokens') ELSE 0 END, $10)
				ON CONFLICT (endpoint_id, event_id) DO NOTHING RETURNING seq, lease_token`,
				d.EndpointID, d.EventID, d.EventType, d.Stream, d.Position, d.Body, codec.Nanos(d.NextAttemptAt), now,
				codec.Nanos(d.LeaseUntil), owner).Scan(&seq, &token)
			switch {
			case err == nil:
				res.Queued++
				if token != 0 {
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
				updated_at = $2 WHERE endpoint_id = $3 AND event_id = $4 AND status IN ('delivered', 'exhausted')`,
				codec.Nanos(d.NextAttemptAt), now, d.EndpointID, d.EventID)
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

// claimSQL leases, in the rows, up to $5 of an endpoint's due deliveries
// that no running lease holds, earliest first. SKIP LOCKED lets handles
// claiming at once take different deliveries instead of waiting.
const claimSQL = `UPDATE deliveries SET lease_until = $3, lease_token = nextval('delivery_lease_tokens'), lease_owner = $4
	WHERE seq IN (
		SELECT d.seq FROM deliveries d JOIN endpoints e ON e.id = d.endpoint_id
		WHERE d.endpoint_id = $1 AND d.status IN ('pending', 'failed') AND d.next_attempt_at <= $2 AND d.lease_until <= $2
			AND e.active AND e.disabled_at = 0 AND (NOT e.verify OR e.verified_at > 0)
			AND (e.ordering <> 'stream' OR NOT EXISTS (
				SELECT 1 FROM deliveries p WHERE p.endpoint_id = d.endpoint_id AND p.stream = d.stream
					AND p.status IN ('pending', 'failed') AND p.position < d.position))
		ORDER BY d.next_attempt_at, d.seq
		LIMIT $5
		FOR UPDATE OF d SKIP LOCKED)
	RETURNING ` + deliveryLeaseColumns

// nextDueSQL is the earliest time after now at which an unfinished
// delivery of an endpoint falls due or its lease ends.
const nextDueSQL = `SELECT min(CASE WHEN lease_until > $2 THEN lease_until ELSE next_attempt_at END) FROM deliveries
	WHERE endpoint_id = $1 AND status IN ('pending', 'failed') AND (next_attempt_at > $2 OR lease_until > $2)`

// DeliveryClaim implements store.DeliveryStore.
func (s *Store) DeliveryClaim(ctx context.Context, params *store.DeliveryClaimParams) (*store.DeliveryClaimResult, error) {
	now := codec.Nanos(params.Now)
	res := &store.DeliveryClaimResult{}
	err := s.tx(ctx, func(tx *wtx) error {
		res.Deliveries = nil
		if params.Limit > 0 {
			rows, err := tx.Query(ctx, `WITH claimed AS (`+claimSQL+`) SELECT * FROM claimed ORDER BY seq`,
				params.EndpointID, now, codec.Nanos(params.Now.Add(params.Lease)), s.owner, params.Limit)
			if err != nil {
				return fmt.Errorf("postgres: claim: %w", err)
			}
			defer rows.Close()
			for rows.Next() {
				d, err := s.scanLeased(rows)
				if err != nil {
					return fmt.Errorf("postgres: claim: %w", err)
				}
				res.Deliveries = append(res.Deliveries, d)
			}
			if err := rows.Err(); err != nil {
				return fmt.Errorf("postgres: claim: %w", err)
			}
		}
		var next *int64
		if err := tx.QueryRow(ctx, nextDueSQL, params.EndpointID, now).Scan(&next); err != nil {
			return fmt.Errorf("postgres: next due: %w", err)
		}
		res.NextDueAt = time.Time{}
		if next != nil {
			res.NextDueAt = codec.FromNanos(*next)
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
		for _, dr := range params.Results {
			seq, ok := s.ids.Seq(dr.DeliveryID)
			if !ok || dr.LeaseToken == 0 {
				continue
			}
			finished := int64(0)
			if dr.Status == store.DeliveryDelivered || dr.Status == store.DeliveryExhausted {
				finished = now
			}
			tag, err := tx.Exec(ctx, `UPDATE deliveries SET status = $1, attempts = attempts + 1, round_attempts = round_attempts + 1,
				next_attempt_at = $2, last_status_code = $3, last_error = $4, updated_at = $5, finished_at = $6,
				lease_until = 0, lease_token = 0, lease_owner = ''
				WHERE seq = $7 AND endpoint_id = $8 AND status IN ('pending', 'failed') AND lease_token = $9`,
				dr.Status, codec.Nanos(dr.NextAttemptAt), dr.Attempt.StatusCode, dr.Attempt.Error, now, finished,
				seq, params.EndpointID, dr.LeaseToken)
			if err != nil {
				return fmt.Errorf("postgres: complete delivery: %w", err)
			}
			if tag.RowsAffected() == 0 {
				continue // the lease ended and another claim holds it, or it finished meanwhile
			}
			a := dr.Attempt
			body := a.ResponseBody
			if body == nil {
				body = []byte{}
			}
			if _, err := tx.Exec(ctx, `INSERT INTO delivery_attempts (delivery_seq, at, status_code, response_body, latency_ns, error)
				VALUES ($1, $2, $3, $4, $5, $6)`, seq, codec.Nanos(a.At), a.StatusCode, body, int64(a.Latency), a.Error); err != nil {
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
	ds, err := collect(ctx, s, &query{sql: `SELECT ` + deliveryLeaseColumns + ` FROM deliveries WHERE seq = $1`, args: []any{seq}},
		"read delivery", s.scanLeased)
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
	q := &query{sql: `SELECT ` + codec.DeliveryColumns + `, lease_until, lease_token FROM deliveries WHERE endpoint_id = $1`,
		args: []any{params.EndpointID}}
	if params.Before != "" {
		seq, ok := s.ids.Seq(params.Before)
		if !ok {
			return nil, store.ErrInvalidCursor
		}
		q.add(` AND seq < `, seq)
	}
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

// DeliveryAttempts implements store.DeliveryStore.
func (s *Store) DeliveryAttempts(ctx context.Context, deliveryID string) ([]store.DeliveryAttempt, error) {
	seq, ok := s.ids.Seq(deliveryID)
	if !ok {
		return nil, nil
	}
	return collect(ctx, s, &query{sql: `SELECT id, at, status_code, response_body, latency_ns, error
		FROM delivery_attempts WHERE delivery_seq = $1 ORDER BY id`, args: []any{seq}}, "list attempts",
		func(r codec.Row) (store.DeliveryAttempt, error) {
			a := store.DeliveryAttempt{DeliveryID: deliveryID}
			var at, latency int64
			err := r.Scan(&a.ID, &at, &a.StatusCode, &a.ResponseBody, &latency, &a.Error)
			a.At, a.Latency = codec.FromNanos(at), time.Duration(latency)
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
		err := tx.QueryRow(ctx, `SELECT stream, position FROM published_events WHERE event_id = $1`, params.EventID).Scan(&res.Stream, &res.Position)
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
		if _, err := tx.Exec(ctx, `INSERT INTO published_events (event_id, stream, position, created_at) VALUES ($1, $2, $3, $4)`,
			params.EventID, params.Stream, a.Start, codec.Nanos(params.Now)); err != nil {
			return fmt.Errorf("postgres: record event id: %w", err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return res, nil
}
