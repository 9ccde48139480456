package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/heraldstreams/herald/store"
	"github.com/heraldstreams/herald/store/internal/codec"
)

const deliveryColumns = codec.DeliveryColumns

// DeliveryCursors implements store.DeliveryStore.
func (s *Store) DeliveryCursors(ctx context.Context, params *store.DeliveryCursorsParams) ([]store.DeliveryCursor, error) {
	rows, err := s.reader.QueryContext(ctx, `SELECT endpoint_id, stream, stream_id, position FROM delivery_cursors WHERE stream = ?`, params.Stream)
	if err != nil {
		return nil, fmt.Errorf("sqlite: read cursors: %w", err)
	}
	defer rows.Close()
	var out []store.DeliveryCursor
	for rows.Next() {
		var c store.DeliveryCursor
		if err := rows.Scan(&c.EndpointID, &c.Stream, &c.StreamID, &c.Position); err != nil {
			return nil, fmt.Errorf("sqlite: read cursors: %w", err)
		}
		out = append(out, c)
	}
	return out, rows.Err()
}

// EventIDSpans implements store.DeliveryStore.
func (s *Store) EventIDSpans(ctx context.Context, params *store.EventIDSpansParams) ([]store.EventIDSpan, error) {
	stmt, err := s.readerStmt(ctx, `SELECT start_pos, end_pos, nonce, run FROM event_id_spans
		WHERE stream_id = ? AND start_pos < ? AND end_pos >= ? ORDER BY start_pos`)
	if err != nil {
		return nil, err
	}
	rows, err := stmt.QueryContext(ctx, params.StreamID, params.To, params.From)
	if err != nil {
		return nil, fmt.Errorf("sqlite: read id spans: %w", err)
	}
	var out []store.EventIDSpan
	for rows.Next() {
		sp := store.EventIDSpan{StreamID: params.StreamID}
		if err := rows.Scan(&sp.Start, &sp.End, &sp.Nonce, &sp.Run); err != nil {
			return nil, errors.Join(fmt.Errorf("sqlite: read id spans: %w", err), rows.Close())
		}
		out = append(out, sp)
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		return nil, fmt.Errorf("sqlite: read id spans: %w", err)
	}
	return out, nil
}

// writeSpan stores one id span, or fails with ErrCursorConflict when it
// would overlap a stored span or the span to extend is not as read.
func (s *Store) writeSpan(b *batch, w *store.EventIDSpanWrite) error {
	sp := w.Span
	from := sp.Start
	if w.ExtendFrom > 0 {
		from = w.ExtendFrom
	}
	var overlap int
	err := s.wconn.QueryRowContext(b.ctx, `SELECT count(*) FROM event_id_spans
		WHERE stream_id = ? AND start_pos < ? AND end_pos > ?`, sp.StreamID, sp.End, from).Scan(&overlap)
	if err != nil {
		return fmt.Errorf("read id spans: %w", err)
	}
	if overlap > 0 || sp.End <= from {
		return ruleError{store.ErrCursorConflict}
	}
	var r sql.Result
	if w.ExtendFrom > 0 {
		r, err = b.exec(`UPDATE event_id_spans SET end_pos = ? WHERE stream_id = ? AND start_pos = ? AND end_pos = ? AND run = ?`,
			sp.End, sp.StreamID, sp.Start, w.ExtendFrom, sp.Run)
	} else {
		r, err = b.exec(`INSERT INTO event_id_spans (stream_id, start_pos, end_pos, nonce, run) VALUES (?, ?, ?, ?, ?)
			ON CONFLICT (stream_id, start_pos) DO NOTHING`, sp.StreamID, sp.Start, sp.End, sp.Nonce, sp.Run)
	}
	if err != nil {
		return fmt.Errorf("write id span: %w", err)
	}
	if n, err := r.RowsAffected(); err != nil {
		return err
	} else if n == 0 {
		return ruleError{store.ErrCursorConflict}
	}
	return nil
}

// DeliveryEnqueue implements store.DeliveryStore.
func (s *Store) DeliveryEnqueue(ctx context.Context, params *store.DeliveryEnqueueParams) (*store.DeliveryEnqueueResult, error) {
	res := &store.DeliveryEnqueueResult{}
	write := s.writeRelaxed // redone from the cursors if lost
	if params.Replay || params.Job != nil {
		write = s.write // acknowledged to the caller of the replay
	}
	err := write(ctx, func(b *batch) error {
		res.Queued = 0
		for i := range params.Spans {
			if err := s.writeSpan(b, &params.Spans[i]); err != nil {
				return err
			}
		}
		for _, c := range params.Cursors {
			var r sql.Result
			var err error
			if c.Found {
				r, err = b.exec(`UPDATE delivery_cursors SET stream_id = ?, position = ?
					WHERE stream = ? AND endpoint_id = ? AND stream_id = ? AND position = ?`,
					c.StreamID, c.Position, params.Stream, c.EndpointID, c.ExpectStreamID, c.ExpectPosition)
			} else {
				r, err = b.exec(`INSERT INTO delivery_cursors (endpoint_id, stream, stream_id, position) VALUES (?, ?, ?, ?)
					ON CONFLICT (stream, endpoint_id) DO NOTHING`, c.EndpointID, params.Stream, c.StreamID, c.Position)
			}
			if err != nil {
				return fmt.Errorf("advance cursor: %w", err)
			}
			if n, err := r.RowsAffected(); err != nil {
				return err
			} else if n == 0 {
				return ruleError{store.ErrCursorConflict}
			}
		}
		now := codec.Nanos(params.Now)
		res.Leased = res.Leased[:0]
		grants, token, err := s.claims.Grants(txOf(b), params)
		if err != nil {
			return fmt.Errorf("lease deliveries: %w", err)
		}
		for _, d := range params.Deliveries {
			leased := !d.LeaseUntil.IsZero() && grants[d.EndpointID] > 0
			seq, err := b.insertDelivery(&d, leased, token, s.owner, now)
			if err != nil {
				return err
			}
			n := int64(0)
			if seq > 0 {
				n = 1
				if leased {
					grants[d.EndpointID]--
					d.Seq, d.ID, d.Status, d.LeaseToken = seq, s.ids.ID(seq), store.DeliveryPending, token
					d.CreatedAt, d.UpdatedAt = codec.FromNanos(now), codec.FromNanos(now)
					res.Leased = append(res.Leased, d)
				}
			}
			if n == 0 && params.Replay {
				r, err := b.exec(`UPDATE deliveries SET status = 'pending', round_attempts = 0, next_attempt_at = ?, finished_at = 0,
					updated_at = ? WHERE endpoint_id = ? AND event_tenant = ? AND event_id = ? AND status IN ('delivered', 'exhausted')`,
					codec.Nanos(d.NextAttemptAt), now, d.EndpointID, d.EventTenant, d.EventID)
				if err != nil {
					return fmt.Errorf("replay delivery: %w", err)
				}
				if n, err = r.RowsAffected(); err != nil {
					return err
				}
			}
			res.Queued += int(n)
		}
		for i := range params.Sightings {
			if err := b.writeSighting(params.Stream, &params.Sightings[i], now); err != nil {
				return err
			}
		}
		if params.Job != nil {
			return b.stepJob(params.Job, res.Queued, now)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return res, nil
}

// insertDelivery inserts a pending delivery unless its (endpoint, event
// tenant, event id) exists, leased with token when asked, and returns its
// seq (0 when it existed). (No RETURNING: that makes SQLite keep a statement journal,
// truncated at every statement.)
func (b *batch) insertDelivery(d *store.Delivery, leased bool, token int64, owner string, now int64) (int64, error) {
	var until int64
	if leased {
		until = codec.Nanos(d.LeaseUntil)
	} else {
		token, owner = 0, ""
	}
	r, err := b.exec(`INSERT INTO deliveries (endpoint_id, event_id, event_type, stream, position, body, status,
		next_attempt_at, created_at, updated_at, lease_until, lease_token, lease_owner, trace_parent, event_tenant)
		VALUES (?, ?, ?, ?, ?, ?, 'pending', ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (endpoint_id, event_tenant, event_id) DO NOTHING`,
		d.EndpointID, d.EventID, d.EventType, d.Stream, d.Position, d.Body, codec.Nanos(d.NextAttemptAt), now, now, until, token, owner,
		d.TraceParent, d.EventTenant)
	if err != nil {
		return 0, fmt.Errorf("insert delivery: %w", err)
	}
	if n, err := r.RowsAffected(); err != nil || n == 0 {
		return 0, err
	}
	return r.LastInsertId()
}

// DeliveryClaim implements store.DeliveryStore: codec's claim, in the
// rows, on the writer.
func (s *Store) DeliveryClaim(ctx context.Context, params *store.DeliveryClaimParams) (*store.DeliveryClaimResult, error) {
	var res *store.DeliveryClaimResult
	err := s.writeRelaxed(ctx, func(b *batch) error {
		var err error
		res, err = s.claims.Claim(txOf(b), params)
		if err != nil {
			return fmt.Errorf("claim: %w", err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return res, nil
}

// DeliveryComplete implements store.DeliveryStore.
func (s *Store) DeliveryComplete(ctx context.Context, params *store.DeliveryCompleteParams) (*store.DeliveryCompleteResult, error) {
	res := &store.DeliveryCompleteResult{}
	now := codec.Nanos(params.Now)
	h := params.Health
	err := s.writeRelaxed(ctx, func(b *batch) error {
		res.Applied = 0
		r, err := b.exec(`UPDATE endpoints SET consecutive_failures = ?, last_success_at = ?, last_failure_at = ?, last_error = ?,
			disabled_at = ?, disabled_reason = ?, health_version = health_version + 1 WHERE id = ? AND health_version = ?`,
			h.ConsecutiveFailures, codec.Nanos(h.LastSuccessAt), codec.Nanos(h.LastFailureAt), h.LastError, codec.Nanos(h.DisabledAt), h.DisabledReason,
			params.EndpointID, params.ExpectHealthVersion)
		if err != nil {
			return fmt.Errorf("update endpoint health: %w", err)
		}
		if n, err := r.RowsAffected(); err != nil {
			return err
		} else if n == 0 {
			return b.endpointMissOrConflict(params.EndpointID)
		}
		res.HealthVersion = params.ExpectHealthVersion + 1
		if !h.DisabledAt.IsZero() {
			b.invalidate(store.CacheEndpoint, params.EndpointID)
		}
		for i := range params.Results {
			dr := &params.Results[i]
			seq, ok := s.ids.Seq(dr.DeliveryID)
			if !ok {
				continue
			}
			complete, attempt := codec.CompleteArgs(dr, seq, params.EndpointID, now)
			r, err := b.exec(codec.Numbered(codec.CompleteSQL), complete...)
			if err != nil {
				return fmt.Errorf("complete delivery: %w", err)
			}
			if n, err := r.RowsAffected(); err != nil {
				return err
			} else if n == 0 {
				continue // the lease ended and another claim holds it, or it finished meanwhile
			}
			if _, err := b.exec(codec.Numbered(codec.AttemptSQL), attempt...); err != nil {
				return fmt.Errorf("insert attempt: %w", err)
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
	d, err := s.claims.ScanLeased(s.reader.QueryRowContext(ctx, `SELECT `+codec.DeliveryLeaseColumns+` FROM deliveries WHERE seq = ?`, seq))
	if isNoRows(err) {
		return nil, store.ErrDeliveryNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("sqlite: read delivery: %w", err)
	}
	return &d, nil
}

// DeliveryList implements store.DeliveryStore.
func (s *Store) DeliveryList(ctx context.Context, params *store.DeliveryListParams) ([]store.Delivery, error) {
	where, args := deliveryFilter(params)
	q := `SELECT ` + deliveryColumns + `, lease_until, lease_token FROM deliveries WHERE ` + where
	if params.Before != "" {
		seq, ok := s.ids.Seq(params.Before)
		if !ok {
			return nil, store.ErrInvalidCursor
		}
		q += ` AND seq < ?`
		args = append(args, seq)
	}
	q += ` ORDER BY seq DESC`
	if params.Limit > 0 {
		q += ` LIMIT ?`
		args = append(args, params.Limit)
	}
	rows, err := s.reader.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("sqlite: list deliveries: %w", err)
	}
	defer rows.Close()
	var out []store.Delivery
	for rows.Next() {
		var until, token int64
		d, err := codec.ScanDelivery(s.ids, rows, &until, &token)
		if err != nil {
			return nil, fmt.Errorf("sqlite: list deliveries: %w", err)
		}
		d.LeaseUntil, d.LeaseToken = codec.FromNanos(until), token
		out = append(out, d)
	}
	return out, rows.Err()
}

// DeliveryCount implements store.DeliveryStore.
func (s *Store) DeliveryCount(ctx context.Context, params *store.DeliveryListParams) (int, error) {
	where, args := deliveryFilter(params)
	var n int
	if err := s.reader.QueryRowContext(ctx, `SELECT count(*) FROM deliveries WHERE `+where, args...).Scan(&n); err != nil {
		return 0, fmt.Errorf("sqlite: count deliveries: %w", err)
	}
	return n, nil
}

// deliveryFilter is the WHERE clause, with its arguments, of the
// deliveries that DeliveryList and DeliveryCount consider (the cursor
// and the limit aside).
func deliveryFilter(params *store.DeliveryListParams) (string, []any) {
	where := `endpoint_id = ?`
	args := []any{params.EndpointID}
	if params.Status != "" {
		where += ` AND status = ?`
		args = append(args, params.Status)
	}
	if params.EventType != "" {
		where += ` AND event_type = ?`
		args = append(args, params.EventType)
	}
	if !params.Since.IsZero() {
		where += ` AND created_at >= ?`
		args = append(args, codec.Nanos(params.Since))
	}
	if !params.Until.IsZero() {
		where += ` AND created_at < ?`
		args = append(args, codec.Nanos(params.Until))
	}
	return where, args
}

// DeliveryAttempts implements store.DeliveryStore.
func (s *Store) DeliveryAttempts(ctx context.Context, deliveryID string) ([]store.DeliveryAttempt, error) {
	seq, ok := s.ids.Seq(deliveryID)
	if !ok {
		return nil, nil
	}
	rows, err := s.reader.QueryContext(ctx, `SELECT id, at, status_code, response_body, latency_ns, error, batch_id
		FROM delivery_attempts WHERE delivery_seq = ? ORDER BY id`, seq)
	if err != nil {
		return nil, fmt.Errorf("sqlite: list attempts: %w", err)
	}
	defer rows.Close()
	var out []store.DeliveryAttempt
	for rows.Next() {
		var a store.DeliveryAttempt
		var at, latency int64
		a.DeliveryID = deliveryID
		if err := rows.Scan(&a.ID, &at, &a.StatusCode, &a.ResponseBody, &latency, &a.Error, &a.BatchID); err != nil {
			return nil, fmt.Errorf("sqlite: list attempts: %w", err)
		}
		a.At, a.Latency = codec.FromNanos(at), time.Duration(latency)
		out = append(out, a)
	}
	return out, rows.Err()
}

// DeliveryRecentAttempts implements store.DeliveryStore.
func (s *Store) DeliveryRecentAttempts(ctx context.Context, params *store.RecentAttemptsParams) ([]store.DeliveryAttempt, error) {
	rows, err := s.reader.QueryContext(ctx, `SELECT a.id, a.delivery_seq, a.at, a.status_code, a.latency_ns, a.error
		FROM delivery_attempts a WHERE a.delivery_seq IN
			(SELECT seq FROM deliveries WHERE endpoint_id = ?1 ORDER BY seq DESC LIMIT ?2)
		ORDER BY a.id DESC LIMIT ?2`, params.EndpointID, params.Limit)
	if err != nil {
		return nil, fmt.Errorf("sqlite: recent attempts: %w", err)
	}
	defer rows.Close()
	var out []store.DeliveryAttempt
	for rows.Next() {
		var a store.DeliveryAttempt
		var seq, at, latency int64
		if err := rows.Scan(&a.ID, &seq, &at, &a.StatusCode, &latency, &a.Error); err != nil {
			return nil, fmt.Errorf("sqlite: recent attempts: %w", err)
		}
		a.DeliveryID, a.At, a.Latency = s.ids.ID(seq), codec.FromNanos(at), time.Duration(latency)
		out = append(out, a)
	}
	return out, rows.Err()
}

// DeliveryRetry implements store.DeliveryStore.
func (s *Store) DeliveryRetry(ctx context.Context, params *store.DeliveryRetryParams) (*store.Delivery, error) {
	var out store.Delivery
	seq, ok := s.ids.Seq(params.ID)
	if !ok {
		return nil, store.ErrDeliveryNotFound
	}
	err := s.write(ctx, func(b *batch) error {
		var err error
		out, err = codec.ScanDelivery(s.ids, s.wconn.QueryRowContext(b.ctx, `UPDATE deliveries SET status = 'pending', round_attempts = 0,
			next_attempt_at = ?1, finished_at = 0, updated_at = ?1 WHERE seq = ?2 RETURNING `+deliveryColumns,
			codec.Nanos(params.Now), seq))
		if isNoRows(err) {
			return ruleError{store.ErrDeliveryNotFound}
		}
		if err != nil {
			return fmt.Errorf("retry delivery: %w", err)
		}
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
	err := s.write(ctx, func(b *batch) error {
		before := codec.Nanos(params.Before)
		if _, err := b.exec(`DELETE FROM delivery_attempts WHERE delivery_seq IN
			(SELECT seq FROM deliveries WHERE finished_at > 0 AND finished_at < ? ORDER BY finished_at LIMIT ?)`, before, limit); err != nil {
			return fmt.Errorf("prune attempts: %w", err)
		}
		r, err := b.exec(`DELETE FROM deliveries WHERE seq IN
			(SELECT seq FROM deliveries WHERE finished_at > 0 AND finished_at < ? ORDER BY finished_at LIMIT ?)`, before, limit)
		if err != nil {
			return fmt.Errorf("prune deliveries: %w", err)
		}
		n, err := r.RowsAffected()
		if err != nil {
			return err
		}
		removed = int(n)
		if _, err := b.exec(`DELETE FROM published_events WHERE created_at < ?`, before); err != nil {
			return fmt.Errorf("prune event ids: %w", err)
		}
		if _, err := b.exec(`DELETE FROM replay_jobs WHERE finished_at > 0 AND finished_at < ?`, before); err != nil {
			return fmt.Errorf("prune replay jobs: %w", err)
		}
		// Id spans go with their stream (a stream id is never used again
		// in one database).
		if _, err := b.exec(`DELETE FROM event_id_spans WHERE stream_id IN (SELECT DISTINCT s.stream_id FROM event_id_spans s
			WHERE NOT EXISTS (SELECT 1 FROM streams t WHERE t.id = s.stream_id) LIMIT ?)`, limit); err != nil {
			return fmt.Errorf("prune id spans: %w", err)
		}
		return nil
	})
	return removed, err
}

// DeliveryBacklog implements store.DeliveryStore.
func (s *Store) DeliveryBacklog(ctx context.Context) (map[string]int, error) {
	rows, err := s.reader.QueryContext(ctx, `SELECT endpoint_id, count(*) FROM deliveries WHERE status IN ('pending', 'failed') GROUP BY endpoint_id`)
	if err != nil {
		return nil, fmt.Errorf("sqlite: backlog: %w", err)
	}
	defer rows.Close()
	out := make(map[string]int)
	for rows.Next() {
		var id string
		var n int
		if err := rows.Scan(&id, &n); err != nil {
			return nil, fmt.Errorf("sqlite: backlog: %w", err)
		}
		out[id] = n
	}
	return out, rows.Err()
}

// EventPublish implements store.DeliveryStore: the append and the id are
// written in one savepoint of one batch, so the id is recorded exactly
// when the event is.
func (s *Store) EventPublish(ctx context.Context, params *store.EventPublishParams) (*store.EventPublishResult, error) {
	var res *store.EventPublishResult
	sc := trace.SpanContextFromContext(ctx) // the publish's: its match joins its trace
	err := s.write(ctx, func(b *batch) error {
		res = nil
		var stream string
		var pos int64
		err := s.wconn.QueryRowContext(b.ctx, eventIDGet,
			params.Tenant, params.EventID).Scan(&stream, &pos)
		switch {
		case err == nil:
			res = &store.EventPublishResult{Stream: stream, Position: pos, Duplicate: true}
			return nil
		case !isNoRows(err):
			return fmt.Errorf("read event id: %w", err)
		}
		if b.get(params.Stream) == nil {
			c := &createOp{p: &store.StreamCreateParams{Path: params.Stream, ContentType: "application/json", Now: params.Now}, trace: sc}
			if err := c.apply(b); err != nil {
				return err
			}
			if c.err != nil {
				return ruleError{c.err}
			}
		}
		a := &appendOp{p: &store.StreamAppendParams{Path: params.Stream, ContentType: "application/json",
			Data: params.Data, Messages: 1, Now: params.Now}, trace: sc}
		if err := a.apply(b); err != nil {
			return err
		}
		if a.err != nil {
			return ruleError{a.err}
		}
		if _, err := b.exec(eventIDInsert,
			params.Tenant, params.EventID, params.Stream, a.res.Start, codec.Nanos(params.Now)); err != nil {
			return fmt.Errorf("record event id: %w", err)
		}
		res = &store.EventPublishResult{Stream: params.Stream, Position: a.res.Start}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return res, nil
}

// The shared statements in SQLite's placeholders, converted once.
var (
	eventIDGet           = codec.Numbered(codec.EventIDGet)
	eventIDInsert        = codec.Numbered(codec.EventIDInsert)
	eventIDInsertNew     = codec.Numbered(codec.EventIDInsertNew)
	consumerCountStalled = codec.Numbered(codec.ConsumerCountStalled)
)
