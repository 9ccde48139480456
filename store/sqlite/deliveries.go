package sqlite

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/heraldstreams/herald/store"
	"github.com/heraldstreams/herald/store/internal/codec"
)

const deliveryColumns = codec.DeliveryColumns

// scanDelivery scans a row of deliveryColumns, and the body after them
// when asked.
func (s *Store) scanDelivery(row codec.Row, body bool) (store.Delivery, error) {
	if !body {
		return codec.ScanDelivery(s.ids, row)
	}
	var b []byte
	d, err := codec.ScanDelivery(s.ids, row, &b)
	d.Body = b
	return d, err
}

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
		for _, d := range params.Deliveries {
			seq, err := b.insertDelivery(&d, now)
			if err != nil {
				return err
			}
			n := int64(0)
			if seq > 0 {
				n = 1
				if !d.LeaseUntil.IsZero() {
					// Leased before the commit makes the row visible, so
					// no claim can take it first; undone if the batch fails
					// (its seq would be used again).
					d.Seq, d.ID, d.Status = seq, s.ids.ID(seq), store.DeliveryPending
					d.CreatedAt, d.UpdatedAt = codec.FromNanos(now), codec.FromNanos(now)
					d.LeaseToken = s.leases.add(d.EndpointID, seq, codec.Nanos(d.LeaseUntil))
					res.Leased = append(res.Leased, d)
					b.onAbort = append(b.onAbort, func() { s.leases.release(d.EndpointID, seq, d.LeaseToken) })
				}
			}
			if n == 0 && params.Replay {
				r, err := b.exec(`UPDATE deliveries SET status = 'pending', round_attempts = 0, next_attempt_at = ?, finished_at = 0,
					updated_at = ? WHERE endpoint_id = ? AND event_id = ? AND status IN ('delivered', 'exhausted')`,
					codec.Nanos(d.NextAttemptAt), now, d.EndpointID, d.EventID)
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

// insertDelivery inserts a pending delivery unless its (endpoint, event)
// exists, and returns its seq (0 when it existed). (No RETURNING: that
// makes SQLite keep a statement journal, truncated at every statement.)
func (b *batch) insertDelivery(d *store.Delivery, now int64) (int64, error) {
	r, err := b.exec(`INSERT INTO deliveries (endpoint_id, event_id, event_type, stream, position, body, status,
		next_attempt_at, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, 'pending', ?, ?, ?)
		ON CONFLICT (endpoint_id, event_id) DO NOTHING`,
		d.EndpointID, d.EventID, d.EventType, d.Stream, d.Position, d.Body, codec.Nanos(d.NextAttemptAt), now, now)
	if err != nil {
		return 0, fmt.Errorf("insert delivery: %w", err)
	}
	if n, err := r.RowsAffected(); err != nil || n == 0 {
		return 0, err
	}
	return r.LastInsertId()
}

// claimSQL lists an endpoint's due deliveries, earliest first; the claim
// leases those no running lease holds. (A shared backend would lease in
// the rows, with FOR UPDATE SKIP LOCKED; here one process owns the
// database and leases live in memory, see leaseBook.)
const claimSQL = `SELECT d.seq FROM deliveries d JOIN endpoints e ON e.id = d.endpoint_id
	WHERE d.endpoint_id = ?1 AND d.status IN ('pending', 'failed') AND d.next_attempt_at <= ?2
		AND e.active AND e.disabled_at = 0 AND (NOT e.verify OR e.verified_at > 0)
		AND (e.ordering <> 'stream' OR NOT EXISTS (
			SELECT 1 FROM deliveries p WHERE p.endpoint_id = d.endpoint_id AND p.stream = d.stream
				AND p.status IN ('pending', 'failed') AND p.position < d.position))
	ORDER BY d.next_attempt_at, d.seq
	LIMIT ?3 + 0`

// claimedSQL reads claimed deliveries (a JSON array of seqs), unless they
// finished meanwhile.
const claimedSQL = `SELECT ` + deliveryColumns + `, body FROM deliveries
	WHERE seq IN (SELECT value FROM json_each(?)) AND status IN ('pending', 'failed')`

// readClaimed reads the deliveries of a claim (seq → token) that are
// still unfinished.
func (s *Store) readClaimed(ctx context.Context, taken map[int64]int64) ([]store.Delivery, error) {
	seqs := make([]int64, 0, len(taken))
	for seq := range taken {
		seqs = append(seqs, seq)
	}
	list, err := json.Marshal(seqs)
	if err != nil {
		return nil, err
	}
	stmt, err := s.readerStmt(ctx, claimedSQL)
	if err != nil {
		return nil, err
	}
	rows, err := stmt.QueryContext(ctx, string(list))
	if err != nil {
		return nil, fmt.Errorf("sqlite: claim: %w", err)
	}
	var out []store.Delivery
	for rows.Next() {
		d, err := s.scanDelivery(rows, true)
		if err != nil {
			return nil, errors.Join(fmt.Errorf("sqlite: claim: %w", err), rows.Close())
		}
		out = append(out, d)
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		return nil, fmt.Errorf("sqlite: claim: %w", err)
	}
	return out, nil
}

// nextDueSQL is the earliest future due time of an endpoint's deliveries.
const nextDueSQL = `SELECT min(next_attempt_at) FROM deliveries
	WHERE endpoint_id = ? AND status IN ('pending', 'failed') AND next_attempt_at > ?`

// DeliveryClaim implements store.DeliveryStore. It only reads: the leases
// are in memory.
func (s *Store) DeliveryClaim(ctx context.Context, params *store.DeliveryClaimParams) (*store.DeliveryClaimResult, error) {
	now := codec.Nanos(params.Now)
	res := &store.DeliveryClaimResult{}
	n, leaseEnd := s.leases.active(params.EndpointID, now)
	if params.Limit > 0 {
		stmt, err := s.readerStmt(ctx, claimSQL)
		if err != nil {
			return nil, err
		}
		// Deliveries in flight are due too: read past them (index only).
		rows, err := stmt.QueryContext(ctx, params.EndpointID, now, params.Limit+n)
		if err != nil {
			return nil, fmt.Errorf("sqlite: claim: %w", err)
		}
		var seqs []int64
		for rows.Next() {
			var seq int64
			if err := rows.Scan(&seq); err != nil {
				return nil, errors.Join(fmt.Errorf("sqlite: claim: %w", err), rows.Close())
			}
			seqs = append(seqs, seq)
		}
		if err := errors.Join(rows.Err(), rows.Close()); err != nil {
			return nil, fmt.Errorf("sqlite: claim: %w", err)
		}
		until := codec.Nanos(params.Now.Add(params.Lease))
		taken := s.leases.take(params.EndpointID, seqs, params.Limit, until, now)
		if len(taken) > 0 {
			ds, err := s.readClaimed(ctx, taken)
			if err != nil {
				s.leases.drop(params.EndpointID, taken)
				return nil, err
			}
			for _, d := range ds {
				d.LeaseToken, d.LeaseUntil = taken[d.Seq], codec.FromNanos(until)
				res.Deliveries = append(res.Deliveries, d)
				delete(taken, d.Seq)
			}
			s.leases.drop(params.EndpointID, taken) // finished meanwhile
			if leaseEnd == 0 || until < leaseEnd {
				leaseEnd = until
			}
		}
	}
	stmt, err := s.readerStmt(ctx, nextDueSQL)
	if err != nil {
		return nil, err
	}
	var next sql.NullInt64
	if err := stmt.QueryRowContext(ctx, params.EndpointID, now).Scan(&next); err != nil {
		return nil, fmt.Errorf("sqlite: next due: %w", err)
	}
	switch {
	case next.Valid && (leaseEnd == 0 || next.Int64 < leaseEnd):
		res.NextDueAt = codec.FromNanos(next.Int64)
	case leaseEnd != 0:
		res.NextDueAt = codec.FromNanos(leaseEnd)
	}
	slices.SortFunc(res.Deliveries, func(a, b store.Delivery) int { return cmp.Compare(a.Seq, b.Seq) })
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
		var recorded []store.DeliveryResult
		for _, dr := range params.Results {
			seq, ok := s.ids.Seq(dr.DeliveryID)
			if !ok || !s.leases.holds(params.EndpointID, seq, dr.LeaseToken) {
				continue // the lease ended: another claim may own it now
			}
			finished := int64(0)
			if dr.Status == store.DeliveryDelivered || dr.Status == store.DeliveryExhausted {
				finished = now
			}
			r, err := b.exec(`UPDATE deliveries SET status = ?, attempts = attempts + 1, round_attempts = round_attempts + 1,
				next_attempt_at = ?, last_status_code = ?, last_error = ?, updated_at = ?, finished_at = ?
				WHERE seq = ? AND endpoint_id = ? AND status IN ('pending', 'failed')`,
				dr.Status, codec.Nanos(dr.NextAttemptAt), dr.Attempt.StatusCode, dr.Attempt.Error, now, finished,
				seq, params.EndpointID)
			if err != nil {
				return fmt.Errorf("complete delivery: %w", err)
			}
			if n, err := r.RowsAffected(); err != nil {
				return err
			} else if n == 0 {
				continue // gone (endpoint deleted) or finished meanwhile
			}
			recorded = append(recorded, dr)
			a := dr.Attempt
			body := a.ResponseBody
			if body == nil {
				body = []byte{}
			}
			if _, err := b.exec(`INSERT INTO delivery_attempts (delivery_seq, at, status_code, response_body, latency_ns, error)
				VALUES (?, ?, ?, ?, ?, ?)`, seq, codec.Nanos(a.At), a.StatusCode, body, int64(a.Latency), a.Error); err != nil {
				return fmt.Errorf("insert attempt: %w", err)
			}
			res.Applied++
		}
		b.afterRun = append(b.afterRun, func() {
			for _, dr := range recorded {
				seq, _ := s.ids.Seq(dr.DeliveryID)
				s.leases.release(params.EndpointID, seq, dr.LeaseToken)
			}
		})
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
	d, err := s.scanDelivery(s.reader.QueryRowContext(ctx, `SELECT `+deliveryColumns+`, body FROM deliveries WHERE seq = ?`, seq), true)
	if isNoRows(err) {
		return nil, store.ErrDeliveryNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("sqlite: read delivery: %w", err)
	}
	s.withLease(&d)
	return &d, nil
}

// withLease sets a delivery's lease from the lease book (the columns are
// not used).
func (s *Store) withLease(d *store.Delivery) {
	if l, ok := s.leases.get(d.EndpointID, d.Seq); ok {
		d.LeaseToken, d.LeaseUntil = l.token, codec.FromNanos(l.until)
	}
}

// DeliveryList implements store.DeliveryStore.
func (s *Store) DeliveryList(ctx context.Context, params *store.DeliveryListParams) ([]store.Delivery, error) {
	q := `SELECT ` + deliveryColumns + ` FROM deliveries WHERE endpoint_id = ?`
	args := []any{params.EndpointID}
	if params.Before != "" {
		seq, ok := s.ids.Seq(params.Before)
		if !ok {
			return nil, store.ErrInvalidCursor
		}
		q += ` AND seq < ?`
		args = append(args, seq)
	}
	if params.Status != "" {
		q += ` AND status = ?`
		args = append(args, params.Status)
	}
	if params.EventType != "" {
		q += ` AND event_type = ?`
		args = append(args, params.EventType)
	}
	if !params.Since.IsZero() {
		q += ` AND created_at >= ?`
		args = append(args, codec.Nanos(params.Since))
	}
	if !params.Until.IsZero() {
		q += ` AND created_at < ?`
		args = append(args, codec.Nanos(params.Until))
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
		d, err := s.scanDelivery(rows, false)
		if err != nil {
			return nil, fmt.Errorf("sqlite: list deliveries: %w", err)
		}
		s.withLease(&d)
		out = append(out, d)
	}
	return out, rows.Err()
}

// DeliveryAttempts implements store.DeliveryStore.
func (s *Store) DeliveryAttempts(ctx context.Context, deliveryID string) ([]store.DeliveryAttempt, error) {
	seq, ok := s.ids.Seq(deliveryID)
	if !ok {
		return nil, nil
	}
	rows, err := s.reader.QueryContext(ctx, `SELECT id, at, status_code, response_body, latency_ns, error
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
		if err := rows.Scan(&a.ID, &at, &a.StatusCode, &a.ResponseBody, &latency, &a.Error); err != nil {
			return nil, fmt.Errorf("sqlite: list attempts: %w", err)
		}
		a.At, a.Latency = codec.FromNanos(at), time.Duration(latency)
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
		out, err = s.scanDelivery(s.wconn.QueryRowContext(b.ctx, `UPDATE deliveries SET status = 'pending', round_attempts = 0,
			next_attempt_at = ?1, finished_at = 0, updated_at = ?1 WHERE seq = ?2 RETURNING `+deliveryColumns,
			codec.Nanos(params.Now), seq), false)
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
		err := s.wconn.QueryRowContext(b.ctx, `SELECT stream, position FROM published_events WHERE event_id = ?`, params.EventID).Scan(&stream, &pos)
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
		if _, err := b.exec(`INSERT INTO published_events (event_id, stream, position, created_at) VALUES (?, ?, ?, ?)`,
			params.EventID, params.Stream, a.res.Start, codec.Nanos(params.Now)); err != nil {
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
