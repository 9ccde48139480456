package sqlstore

import (
	"context"
	"time"

	"github.com/heraldstreams/herald/store"
)

// DeliveryCursors implements store.DeliveryStore.
func (s *Store) DeliveryCursors(ctx context.Context, params *store.DeliveryCursorsParams) ([]store.DeliveryCursor, error) {
	return list(ctx, s, &query{sql: `SELECT endpoint_id, stream, stream_id, position FROM delivery_cursors WHERE stream = $1`,
		args: []any{params.Stream}}, "read cursors", func(r Row) (store.DeliveryCursor, error) {
		var c store.DeliveryCursor
		return c, r.Scan(&c.EndpointID, &c.Stream, &c.StreamID, &c.Position)
	})
}

// EventIDSpans implements store.DeliveryStore.
func (s *Store) EventIDSpans(ctx context.Context, params *store.EventIDSpansParams) ([]store.EventIDSpan, error) {
	return list(ctx, s, &query{sql: `SELECT start_pos, end_pos, nonce, run FROM event_id_spans
		WHERE stream_id = $1 AND start_pos < $2 AND end_pos >= $3 ORDER BY start_pos`, args: []any{params.StreamID, params.To, params.From}},
		"read id spans", func(r Row) (store.EventIDSpan, error) {
			sp := store.EventIDSpan{StreamID: params.StreamID}
			return sp, r.Scan(&sp.Start, &sp.End, &sp.Nonce, &sp.Run)
		})
}

// writeSpan stores one id span, or fails with ErrCursorConflict when it
// would overlap a stored span or the span to extend is not as read.
func (s *Store) writeSpan(tx Tx, w *store.EventIDSpanWrite) error {
	sp := w.Span
	from := sp.Start
	if w.ExtendFrom > 0 {
		from = w.ExtendFrom
	}
	var overlap int
	if err := tx.QueryRow(`SELECT count(*) FROM event_id_spans WHERE stream_id = $1 AND start_pos < $2 AND end_pos > $3`,
		sp.StreamID, sp.End, from).Scan(&overlap); err != nil {
		return s.errorf("read id spans", err)
	}
	if overlap > 0 || sp.End <= from {
		return rule(store.ErrCursorConflict)
	}
	var n int64
	var err error
	if w.ExtendFrom > 0 {
		n, err = tx.Exec(`UPDATE event_id_spans SET end_pos = $1 WHERE stream_id = $2 AND start_pos = $3 AND end_pos = $4 AND run = $5`,
			sp.End, sp.StreamID, sp.Start, w.ExtendFrom, sp.Run)
	} else {
		n, err = tx.Exec(`INSERT INTO event_id_spans (stream_id, start_pos, end_pos, nonce, run) VALUES ($1, $2, $3, $4, $5)
			ON CONFLICT (stream_id, start_pos) DO NOTHING`, sp.StreamID, sp.Start, sp.End, sp.Nonce, sp.Run)
	}
	if err != nil {
		return s.errorf("write id span", err)
	}
	if n == 0 {
		return rule(store.ErrCursorConflict)
	}
	return nil
}

// DeliveryEnqueue implements store.DeliveryStore. The engine's enqueue is
// relaxed (redone from the cursors if lost); a replay's is durable, as it
// is acknowledged to the one who asked for it.
func (s *Store) DeliveryEnqueue(ctx context.Context, params *store.DeliveryEnqueueParams) (*store.DeliveryEnqueueResult, error) {
	res := &store.DeliveryEnqueueResult{}
	mode := Relaxed
	if params.Replay || params.Job != nil {
		mode = Durable
	}
	err := s.write(ctx, mode, func(tx Tx) error {
		res.Queued, res.Leased = 0, nil
		for i := range params.Spans {
			if err := s.writeSpan(tx, &params.Spans[i]); err != nil {
				return err
			}
		}
		for _, c := range params.Cursors {
			if err := s.advanceCursor(tx, params.Stream, &c); err != nil {
				return err
			}
		}
		now := Nanos(params.Now)
		grants, token, err := s.claims.Grants(tx, params)
		if err != nil {
			return s.errorf("lease deliveries", err)
		}
		for _, d := range params.Deliveries {
			leased := !d.LeaseUntil.IsZero() && grants[d.EndpointID] > 0
			seq, err := s.insertDelivery(tx, &d, leased, token, now)
			if err != nil {
				return err
			}
			if seq > 0 {
				res.Queued++
				if leased {
					grants[d.EndpointID]--
					d.Seq, d.ID, d.Status, d.LeaseToken = seq, s.ids.ID(seq), store.DeliveryPending, token
					d.CreatedAt, d.UpdatedAt = FromNanos(now), FromNanos(now)
					res.Leased = append(res.Leased, d)
				}
				continue
			}
			if !params.Replay {
				continue
			}
			n, err := tx.Exec(`UPDATE deliveries SET status = 'pending', round_attempts = 0, next_attempt_at = $1, finished_at = 0,
				updated_at = $2 WHERE endpoint_id = $3 AND event_tenant = $4 AND event_id = $5 AND status IN ('delivered', 'exhausted')`,
				Nanos(d.NextAttemptAt), now, d.EndpointID, d.EventTenant, d.EventID)
			if err != nil {
				return s.errorf("replay delivery", err)
			}
			res.Queued += int(n)
		}
		for i := range params.Sightings {
			if err := s.writeSighting(tx, params.Stream, &params.Sightings[i], now); err != nil {
				return err
			}
		}
		if params.Job != nil {
			return s.stepJob(tx, params.Job, res.Queued, params.Now)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return res, nil
}

// advanceCursor moves an endpoint's cursor of stream from where it was
// read (or makes it), or fails with ErrCursorConflict when another
// writer moved it first.
func (s *Store) advanceCursor(tx Tx, stream string, c *store.CursorAdvance) error {
	var n int64
	var err error
	if c.Found {
		n, err = tx.Exec(`UPDATE delivery_cursors SET stream_id = $3, position = $4
			WHERE stream = $1 AND endpoint_id = $2 AND stream_id = $5 AND position = $6`,
			stream, c.EndpointID, c.StreamID, c.Position, c.ExpectStreamID, c.ExpectPosition)
	} else {
		n, err = tx.Exec(InsertCursorSQL, stream, c.EndpointID, c.StreamID, c.Position)
	}
	if err != nil {
		return s.errorf("advance cursor", err)
	}
	if n == 0 {
		return rule(store.ErrCursorConflict)
	}
	return nil
}

// insertDelivery inserts a pending delivery unless its (endpoint, event
// tenant, event id) exists, leased with token when asked, and returns its
// seq (0 when it existed).
func (s *Store) insertDelivery(tx Tx, d *store.Delivery, leased bool, token, now int64) (int64, error) {
	owner, until := s.owner, Nanos(d.LeaseUntil)
	if !leased {
		owner, until, token = "", 0, 0
	}
	seq, err := tx.InsertID(`INSERT INTO deliveries (endpoint_id, event_id, event_type, stream, position, body, status,
		next_attempt_at, created_at, updated_at, lease_until, lease_token, lease_owner, trace_parent, event_tenant)
		VALUES ($1, $2, $3, $4, $5, $6, 'pending', $7, $8, $8, $9, $10, $11, $12, $13)
		ON CONFLICT (endpoint_id, event_tenant, event_id) DO NOTHING`, "seq",
		d.EndpointID, d.EventID, d.EventType, d.Stream, d.Position, d.Body, Nanos(d.NextAttemptAt), now,
		until, token, owner, d.TraceParent, d.EventTenant)
	if err != nil {
		return 0, s.errorf("insert delivery", err)
	}
	return seq, nil
}

// DeliveryClaim implements store.DeliveryStore: the claim (Claims), in the
// rows. It is relaxed: a lost claim only sends again.
func (s *Store) DeliveryClaim(ctx context.Context, params *store.DeliveryClaimParams) (*store.DeliveryClaimResult, error) {
	var res *store.DeliveryClaimResult
	err := s.write(ctx, Relaxed, func(tx Tx) error {
		var err error
		if res, err = s.claims.Claim(tx, params); err != nil {
			return s.errorf("claim", err)
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
	now := Nanos(params.Now)
	h := params.Health
	err := s.write(ctx, Relaxed, func(tx Tx) error {
		res.Applied = 0
		n, err := tx.Exec(`UPDATE endpoints SET consecutive_failures = $1, last_success_at = $2, last_failure_at = $3, last_error = $4,
			disabled_at = $5, disabled_reason = $6, health_version = health_version + 1 WHERE id = $7 AND health_version = $8`,
			h.ConsecutiveFailures, Nanos(h.LastSuccessAt), Nanos(h.LastFailureAt), h.LastError, Nanos(h.DisabledAt),
			h.DisabledReason, params.EndpointID, params.ExpectHealthVersion)
		if err != nil {
			return s.errorf("update endpoint health", err)
		}
		if n == 0 {
			return s.endpointMissOrConflict(tx, params.EndpointID)
		}
		res.HealthVersion = params.ExpectHealthVersion + 1
		if !h.DisabledAt.IsZero() {
			// The breaker is open: other handles stop sending now.
			if err := tx.Invalidate(store.Invalidation{Kind: store.CacheEndpoint, ID: params.EndpointID}); err != nil {
				return err
			}
		}
		for i := range params.Results {
			dr := &params.Results[i]
			seq, ok := s.ids.Seq(dr.DeliveryID)
			if !ok {
				continue
			}
			complete, attempt := CompleteArgs(dr, seq, params.EndpointID, now)
			n, err := tx.Exec(CompleteSQL, complete...)
			if err != nil {
				return s.errorf("complete delivery", err)
			}
			if n == 0 {
				continue // the lease ended and another claim holds it, or it finished meanwhile
			}
			if _, err := tx.Exec(AttemptSQL, attempt...); err != nil {
				return s.errorf("insert attempt", err)
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
	return get(ctx, s, &query{sql: `SELECT ` + DeliveryLeaseColumns + ` FROM deliveries WHERE seq = $1`, args: []any{seq}},
		"read delivery", store.ErrDeliveryNotFound, s.claims.ScanLeased)
}

// scanListed scans a delivery of DeliveryColumns and its lease.
func (s *Store) scanListed(r Row) (store.Delivery, error) {
	return ScanLease(s.ids, r)
}

// DeliveryList implements store.DeliveryStore.
func (s *Store) DeliveryList(ctx context.Context, params *store.DeliveryListParams) ([]store.Delivery, error) {
	q := deliveryFilter(`SELECT `+DeliveryColumns+`, `+LeaseColumns+` FROM deliveries`, params)
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
	return list(ctx, s, q, "list deliveries", s.scanListed)
}

// DeliveryCount implements store.DeliveryStore.
func (s *Store) DeliveryCount(ctx context.Context, params *store.DeliveryListParams) (int, error) {
	n, err := get(ctx, s, deliveryFilter(`SELECT count(*) FROM deliveries`, params), "count deliveries", nil,
		func(r Row) (int, error) {
			var n int
			err := r.Scan(&n)
			return n, err
		})
	if err != nil {
		return 0, err
	}
	return *n, nil
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
		q.add(` AND created_at >= `, Nanos(params.Since))
	}
	if !params.Until.IsZero() {
		q.add(` AND created_at < `, Nanos(params.Until))
	}
	return q
}

// DeliveryAttempts implements store.DeliveryStore.
func (s *Store) DeliveryAttempts(ctx context.Context, deliveryID string) ([]store.DeliveryAttempt, error) {
	seq, ok := s.ids.Seq(deliveryID)
	if !ok {
		return nil, nil
	}
	return list(ctx, s, &query{sql: `SELECT id, at, status_code, response_body, latency_ns, error, batch_id
		FROM delivery_attempts WHERE delivery_seq = $1 ORDER BY id`, args: []any{seq}}, "list attempts",
		func(r Row) (store.DeliveryAttempt, error) {
			a := store.DeliveryAttempt{DeliveryID: deliveryID}
			var at, latency int64
			err := r.Scan(&a.ID, &at, &a.StatusCode, &a.ResponseBody, &latency, &a.Error, &a.BatchID)
			a.At, a.Latency = FromNanos(at), time.Duration(latency)
			return a, err
		})
}

// DeliveryRecentAttempts implements store.DeliveryStore.
func (s *Store) DeliveryRecentAttempts(ctx context.Context, params *store.RecentAttemptsParams) ([]store.DeliveryAttempt, error) {
	return list(ctx, s, &query{sql: `SELECT a.id, a.delivery_seq, a.at, a.status_code, a.latency_ns, a.error
		FROM delivery_attempts a WHERE a.delivery_seq IN
			(SELECT seq FROM deliveries WHERE endpoint_id = $1 ORDER BY seq DESC LIMIT $2)
		ORDER BY a.id DESC LIMIT $2`, args: []any{params.EndpointID, params.Limit}}, "recent attempts",
		func(r Row) (store.DeliveryAttempt, error) {
			var a store.DeliveryAttempt
			var seq, at, latency int64
			err := r.Scan(&a.ID, &seq, &at, &a.StatusCode, &latency, &a.Error)
			a.DeliveryID, a.At, a.Latency = s.ids.ID(seq), FromNanos(at), time.Duration(latency)
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
	err := s.write(ctx, ChecksFirst, func(tx Tx) error {
		var err error
		out, err = s.scanListed(tx.QueryRow(`UPDATE deliveries SET status = 'pending', round_attempts = 0,
			next_attempt_at = $1, finished_at = 0, updated_at = $1 WHERE seq = $2
			RETURNING `+DeliveryColumns+`, `+LeaseColumns, Nanos(params.Now), seq))
		if s.d.IsNoRows(err) {
			return rule(store.ErrDeliveryNotFound)
		}
		if err != nil {
			return s.errorf("retry delivery", err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return &out, nil
}

// DeliveryPrune implements store.DeliveryStore: finished deliveries with
// their attempts, event ids and finished replay jobs older than Before,
// and the id spans of streams that are gone.
func (s *Store) DeliveryPrune(ctx context.Context, params *store.DeliveryPruneParams) (int, error) {
	limit := params.Limit
	if limit <= 0 {
		limit = 1000
	}
	var removed int
	err := s.write(ctx, Durable, func(tx Tx) error {
		before := Nanos(params.Before)
		var seqs []int64
		err := tx.Query(`SELECT seq FROM deliveries WHERE finished_at > 0 AND finished_at < $1 ORDER BY finished_at LIMIT $2 `+s.d.ForUpdate,
			[]any{before, limit}, func(r Row) error {
				var seq int64
				err := r.Scan(&seq)
				seqs = append(seqs, seq)
				return err
			})
		if err != nil {
			return s.errorf("prune deliveries", err)
		}
		in, arg := s.d.Int64s("$1", seqs)
		if _, err := tx.Exec(`DELETE FROM delivery_attempts WHERE delivery_seq IN (`+in+`)`, arg); err != nil {
			return s.errorf("prune attempts", err)
		}
		n, err := tx.Exec(`DELETE FROM deliveries WHERE seq IN (`+in+`)`, arg)
		if err != nil {
			return s.errorf("prune deliveries", err)
		}
		removed = int(n)
		if _, err := tx.Exec(`DELETE FROM published_events WHERE created_at < $1`, before); err != nil {
			return s.errorf("prune event ids", err)
		}
		if _, err := tx.Exec(`DELETE FROM replay_jobs WHERE finished_at > 0 AND finished_at < $1`, before); err != nil {
			return s.errorf("prune replay jobs", err)
		}
		// Id spans go with their stream (a stream id is never used again
		// in one database).
		if _, err := tx.Exec(`DELETE FROM event_id_spans WHERE stream_id IN (SELECT DISTINCT s.stream_id FROM event_id_spans s
			WHERE NOT EXISTS (SELECT 1 FROM streams t WHERE t.id = s.stream_id) LIMIT $1)`, limit); err != nil {
			return s.errorf("prune id spans", err)
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
