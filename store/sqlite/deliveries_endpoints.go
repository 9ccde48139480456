package sqlite

import (
	"context"
	"fmt"
	"time"

	"github.com/heraldstreams/herald/store"
	"github.com/heraldstreams/herald/store/internal/codec"
)

var _ store.DeliveryStore = (*Store)(nil)

const endpointColumns = codec.EndpointColumns

func (s *Store) encodeEndpoint(ep *store.Endpoint) (codec.EndpointRow, error) {
	return codec.SealEndpoint(ep, s.SealSecret)
}

func (s *Store) scanEndpoint(row codec.Row) (store.Endpoint, error) {
	return codec.OpenEndpoint(row, s.OpenSecret)
}

// EndpointCreate implements store.DeliveryStore.
func (s *Store) EndpointCreate(ctx context.Context, params *store.EndpointCreateParams) (*store.Endpoint, error) {
	ep := params.Endpoint
	ep.CreatedAt, ep.UpdatedAt = params.Now, params.Now
	ep.Version, ep.HealthVersion = 1, 1
	ep.Health = store.EndpointHealth{}
	r, err := s.encodeEndpoint(&ep)
	if err != nil {
		return nil, err
	}
	err = s.write(ctx, func(b *batch) error {
		var n int
		if err := s.wconn.QueryRowContext(b.ctx, `SELECT count(*) FROM endpoints WHERE id = ?`, ep.ID).Scan(&n); err != nil {
			return fmt.Errorf("read endpoint: %w", err)
		}
		if n > 0 {
			return ruleError{store.ErrEndpointExists}
		}
		if _, err := b.exec(`INSERT INTO endpoints (`+endpointColumns+`) VALUES
			(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0, 0, 0, '', 0, '', ?, ?, 1, 1, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			ep.ID, ep.URL, r.Types, r.Streams, ep.Filter, ep.Description, ep.Tenant, ep.Active, ep.RateLimit, ep.MaxInFlight,
			ep.Ordering, r.Schedule, r.Headers, r.Secret, r.PreviousSecret, codec.Nanos(ep.PreviousSecretUntil),
			codec.Nanos(ep.CreatedAt), codec.Nanos(ep.UpdatedAt), ep.Name, ep.Profile, ep.FailurePolicy, ep.Timeout.Milliseconds(),
			ep.Verification.Required, codec.Nanos(ep.Verification.VerifiedAt), ep.Verification.CodeHash,
			codec.Nanos(ep.Verification.SentAt), ep.Verification.Error, ep.BatchMaxEvents, ep.BatchMaxWait.Milliseconds()); err != nil {
			return fmt.Errorf("insert endpoint: %w", err)
		}
		b.invalidate(store.CacheEndpoint, ep.ID)
		return b.snapshotCursors(ep.ID, params.Now)
	})
	if err != nil {
		return nil, err
	}
	return &ep, nil
}

// snapshotCursors gives the endpoint a cursor at the tail of every live
// stream that has none, as of this batch (the committer's view includes
// appends earlier in the batch).
func (b *batch) snapshotCursors(endpointID string, now time.Time) error {
	seen := make(map[string]bool)
	visit := func(path string, e *entry) error {
		if seen[path] {
			return nil
		}
		seen[path] = true
		if e == nil {
			return nil
		}
		st, err := b.s.view(e, now)
		if err != nil {
			return nil // deleted or expired: nothing to deliver from it
		}
		_, err = b.exec(`INSERT INTO delivery_cursors (endpoint_id, stream, stream_id, position) VALUES (?, ?, ?, ?)
			ON CONFLICT (stream, endpoint_id) DO NOTHING`, endpointID, st.Path, st.ID, st.Tail)
		if err != nil {
			return fmt.Errorf("insert cursor: %w", err)
		}
		return nil
	}
	for path, e := range b.overlay {
		if err := visit(path, e); err != nil {
			return err
		}
	}
	// The committer is the only writer of byPath: reading it here is safe.
	for path, e := range b.s.byPath {
		if err := visit(path, e); err != nil {
			return err
		}
	}
	return nil
}

// EndpointGet implements store.DeliveryStore.
func (s *Store) EndpointGet(ctx context.Context, id string) (*store.Endpoint, error) {
	ep, err := s.scanEndpoint(s.reader.QueryRowContext(ctx, `SELECT `+endpointColumns+` FROM endpoints WHERE id = ?`, id))
	if isNoRows(err) {
		return nil, store.ErrEndpointNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("sqlite: read endpoint: %w", err)
	}
	return &ep, nil
}

// EndpointList implements store.DeliveryStore.
func (s *Store) EndpointList(ctx context.Context, params *store.EndpointListParams) ([]store.Endpoint, error) {
	q := `SELECT ` + endpointColumns + ` FROM endpoints WHERE id > ?`
	args := []any{params.After}
	if params.Tenant != "" {
		q += ` AND tenant = ?`
		args = append(args, params.Tenant)
	}
	if params.Status != "" {
		q += ` AND (` + codec.EndpointStatusSQL + `) = ?`
		args = append(args, params.Status)
	}
	q += ` ORDER BY id`
	if params.Limit > 0 {
		q += ` LIMIT ?`
		args = append(args, params.Limit)
	}
	rows, err := s.reader.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("sqlite: list endpoints: %w", err)
	}
	defer rows.Close()
	var out []store.Endpoint
	for rows.Next() {
		ep, err := s.scanEndpoint(rows)
		if err != nil {
			return nil, fmt.Errorf("sqlite: list endpoints: %w", err)
		}
		out = append(out, ep)
	}
	return out, rows.Err()
}

// EndpointUpdate implements store.DeliveryStore.
func (s *Store) EndpointUpdate(ctx context.Context, params *store.EndpointUpdateParams) (*store.Endpoint, error) {
	ep := params.Endpoint
	r, err := s.encodeEndpoint(&ep)
	if err != nil {
		return nil, err
	}
	var out store.Endpoint
	err = s.write(ctx, func(b *batch) error {
		res, err := b.exec(`UPDATE endpoints SET url = ?, event_types = ?, streams = ?, filter = ?, description = ?, tenant = ?,
			active = ?, rate_limit = ?, max_in_flight = ?, ordering = ?, retry_schedule = ?, headers = ?, secret = ?,
			previous_secret = ?, previous_secret_until = ?, updated_at = ?, version = version + 1,
			name = ?, profile = ?, failure_policy = ?, timeout_ms = ?, verify = ?, verified_at = ?, verification_hash = ?,
			verification_sent_at = ?, verification_error = ?, batch_max_events = ?, batch_max_wait_ms = ?
			WHERE id = ? AND version = ?`,
			ep.URL, r.Types, r.Streams, ep.Filter, ep.Description, ep.Tenant, ep.Active, ep.RateLimit, ep.MaxInFlight,
			ep.Ordering, r.Schedule, r.Headers, r.Secret, r.PreviousSecret, codec.Nanos(ep.PreviousSecretUntil), codec.Nanos(params.Now),
			ep.Name, ep.Profile, ep.FailurePolicy, ep.Timeout.Milliseconds(), ep.Verification.Required,
			codec.Nanos(ep.Verification.VerifiedAt), ep.Verification.CodeHash, codec.Nanos(ep.Verification.SentAt), ep.Verification.Error,
			ep.BatchMaxEvents, ep.BatchMaxWait.Milliseconds(), ep.ID, params.ExpectVersion)
		if err != nil {
			return fmt.Errorf("update endpoint: %w", err)
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n == 0 {
			return b.endpointMissOrConflict(ep.ID)
		}
		if params.ResetHealth {
			if _, err := b.exec(`UPDATE endpoints SET consecutive_failures = 0, disabled_at = 0, disabled_reason = '',
				health_version = health_version + 1 WHERE id = ?`, ep.ID); err != nil {
				return fmt.Errorf("reset endpoint health: %w", err)
			}
		}
		if err := b.snapshotCursors(ep.ID, params.Now); err != nil {
			return err
		}
		out, err = s.scanEndpoint(s.wconn.QueryRowContext(b.ctx, `SELECT `+endpointColumns+` FROM endpoints WHERE id = ?`, ep.ID))
		if err != nil {
			return fmt.Errorf("read endpoint: %w", err)
		}
		b.invalidate(store.CacheEndpoint, ep.ID)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return &out, nil
}

// endpointMissOrConflict tells a missing endpoint from a moved version.
func (b *batch) endpointMissOrConflict(id string) error {
	var n int
	if err := b.s.wconn.QueryRowContext(b.ctx, `SELECT count(*) FROM endpoints WHERE id = ?`, id).Scan(&n); err != nil {
		return fmt.Errorf("read endpoint: %w", err)
	}
	if n == 0 {
		return ruleError{store.ErrEndpointNotFound}
	}
	return ruleError{store.ErrEndpointConflict}
}

// EndpointDelete implements store.DeliveryStore.
func (s *Store) EndpointDelete(ctx context.Context, id string) error {
	return s.write(ctx, func(b *batch) error {
		res, err := b.exec(`DELETE FROM endpoints WHERE id = ?`, id)
		if err != nil {
			return fmt.Errorf("delete endpoint: %w", err)
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n == 0 {
			return ruleError{store.ErrEndpointNotFound}
		}
		for _, q := range []string{
			`DELETE FROM delivery_attempts WHERE delivery_seq IN (SELECT seq FROM deliveries WHERE endpoint_id = ?)`,
			`DELETE FROM deliveries WHERE endpoint_id = ?`,
			`DELETE FROM delivery_cursors WHERE endpoint_id = ?`,
			`DELETE FROM endpoint_buckets WHERE endpoint_id = ?`,
			`DELETE FROM replay_jobs WHERE endpoint_id = ?`,
		} {
			if _, err := b.exec(q, id); err != nil {
				return fmt.Errorf("delete endpoint data: %w", err)
			}
		}
		b.invalidate(store.CacheEndpoint, id)
		return nil
	})
}

// EndpointCount implements store.DeliveryStore.
func (s *Store) EndpointCount(ctx context.Context) (map[string]int, error) {
	rows, err := s.reader.QueryContext(ctx, `SELECT `+codec.EndpointStatusSQL+`, count(*) FROM endpoints GROUP BY 1`)
	if err != nil {
		return nil, fmt.Errorf("sqlite: count endpoints: %w", err)
	}
	defer rows.Close()
	out := map[string]int{store.EndpointActive: 0, store.EndpointPaused: 0, store.EndpointPending: 0, store.EndpointDisabled: 0}
	for rows.Next() {
		var status string
		var n int
		if err := rows.Scan(&status, &n); err != nil {
			return nil, fmt.Errorf("sqlite: count endpoints: %w", err)
		}
		out[status] = n
	}
	return out, rows.Err()
}
