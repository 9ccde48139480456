package sqlstore

import (
	"context"

	"github.com/heraldstreams/herald/store"
)

// sealEndpoint encodes an endpoint's columns and seals its secrets.
func (s *Store) sealEndpoint(ep *store.Endpoint) (EndpointRow, error) {
	return SealEndpoint(ep, s.SealSecret)
}

// ScanEndpoint scans an endpoint row of EndpointColumns and opens
// its secrets.
func (s *Store) ScanEndpoint(row Row) (store.Endpoint, error) {
	return OpenEndpoint(row, s.OpenSecret)
}

// EndpointCreate implements store.DeliveryStore: the endpoint starts at
// the tail of every live stream (Backend.SnapshotCursors).
func (s *Store) EndpointCreate(ctx context.Context, params *store.EndpointCreateParams) (*store.Endpoint, error) {
	ep := params.Endpoint
	ep.CreatedAt, ep.UpdatedAt = params.Now, params.Now
	ep.Version, ep.HealthVersion = 1, 1
	ep.Health = store.EndpointHealth{}
	r, err := s.sealEndpoint(&ep)
	if err != nil {
		return nil, err
	}
	err = s.write(ctx, ChecksFirst, func(tx Tx) error {
		n, err := tx.Exec(`INSERT INTO endpoints (`+EndpointColumns+`) VALUES
			($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, 0, 0, 0, '', 0, '', $17, $18, 1, 1,
			$19, $20, $21, $22, $23, $24, $25, $26, $27, $28, $29, $30, $31)
			ON CONFLICT (id) DO NOTHING`,
			ep.ID, ep.URL, r.Types, r.Streams, ep.Filter, ep.Description, ep.Tenant, ep.Active, ep.RateLimit, ep.MaxInFlight,
			ep.Ordering, r.Schedule, r.Headers, r.Secret, r.PreviousSecret, Nanos(ep.PreviousSecretUntil),
			Nanos(ep.CreatedAt), Nanos(ep.UpdatedAt), ep.Name, ep.Profile, ep.FailurePolicy, ep.Timeout.Milliseconds(),
			ep.Verification.Required, Nanos(ep.Verification.VerifiedAt), ep.Verification.CodeHash,
			Nanos(ep.Verification.SentAt), ep.Verification.Error, ep.BatchMaxEvents, ep.BatchMaxWait.Milliseconds(),
			endpointType(&ep), r.Destination)
		if err != nil {
			return s.errorf("insert endpoint", err)
		}
		if n == 0 {
			return rule(store.ErrEndpointExists)
		}
		if err := s.b.SnapshotCursors(tx, ep.ID, params.Now); err != nil {
			return s.errorf("insert cursors", err)
		}
		return tx.Invalidate(store.Invalidation{Kind: store.CacheEndpoint, ID: ep.ID})
	})
	if err != nil {
		return nil, err
	}
	return &ep, nil
}

// EndpointGet implements store.DeliveryStore.
func (s *Store) EndpointGet(ctx context.Context, id string) (*store.Endpoint, error) {
	return get(ctx, s, &query{sql: `SELECT ` + EndpointColumns + ` FROM endpoints WHERE id = $1`, args: []any{id}},
		"read endpoint", store.ErrEndpointNotFound, s.ScanEndpoint)
}

// EndpointList implements store.DeliveryStore.
func (s *Store) EndpointList(ctx context.Context, params *store.EndpointListParams) ([]store.Endpoint, error) {
	q := &query{sql: `SELECT ` + EndpointColumns + ` FROM endpoints WHERE id > $1`, args: []any{params.After}}
	if params.Tenant != "" {
		q.add(` AND tenant = `, params.Tenant)
	}
	if params.Status != "" {
		q.add(` AND (`+EndpointStatusSQL+`) = `, params.Status)
	}
	q.sql += ` ORDER BY id`
	if params.Limit > 0 {
		q.add(` LIMIT `, params.Limit)
	}
	return list(ctx, s, q, "list endpoints", s.ScanEndpoint)
}

// EndpointUpdate implements store.DeliveryStore: a compare-and-set on
// the version.
func (s *Store) EndpointUpdate(ctx context.Context, params *store.EndpointUpdateParams) (*store.Endpoint, error) {
	ep := params.Endpoint
	r, err := s.sealEndpoint(&ep)
	if err != nil {
		return nil, err
	}
	var out store.Endpoint
	err = s.write(ctx, ChecksFirst, func(tx Tx) error {
		n, err := tx.Exec(`UPDATE endpoints SET url = $1, event_types = $2, streams = $3, filter = $4, description = $5, tenant = $6,
			active = $7, rate_limit = $8, max_in_flight = $9, ordering = $10, retry_schedule = $11, headers = $12, secret = $13,
			previous_secret = $14, previous_secret_until = $15, updated_at = $16, version = version + 1,
			name = $19, profile = $20, failure_policy = $21, timeout_ms = $22, verify = $23, verified_at = $24,
			verification_hash = $25, verification_sent_at = $26, verification_error = $27,
			batch_max_events = $28, batch_max_wait_ms = $29, type = $30, destination = $31
			WHERE id = $17 AND version = $18`,
			ep.URL, r.Types, r.Streams, ep.Filter, ep.Description, ep.Tenant, ep.Active, ep.RateLimit, ep.MaxInFlight,
			ep.Ordering, r.Schedule, r.Headers, r.Secret, r.PreviousSecret, Nanos(ep.PreviousSecretUntil), Nanos(params.Now),
			ep.ID, params.ExpectVersion, ep.Name, ep.Profile, ep.FailurePolicy, ep.Timeout.Milliseconds(), ep.Verification.Required,
			Nanos(ep.Verification.VerifiedAt), ep.Verification.CodeHash, Nanos(ep.Verification.SentAt), ep.Verification.Error,
			ep.BatchMaxEvents, ep.BatchMaxWait.Milliseconds(), endpointType(&ep), r.Destination)
		if err != nil {
			return s.errorf("update endpoint", err)
		}
		if n == 0 {
			return s.endpointMissOrConflict(tx, ep.ID)
		}
		if params.ResetHealth {
			if _, err := tx.Exec(`UPDATE endpoints SET consecutive_failures = 0, disabled_at = 0, disabled_reason = '',
				health_version = health_version + 1 WHERE id = $1`, ep.ID); err != nil {
				return s.errorf("reset endpoint health", err)
			}
		}
		if err := s.b.SnapshotCursors(tx, ep.ID, params.Now); err != nil {
			return s.errorf("insert cursors", err)
		}
		out, err = s.ScanEndpoint(tx.QueryRow(`SELECT `+EndpointColumns+` FROM endpoints WHERE id = $1`, ep.ID))
		if err != nil {
			return s.errorf("read endpoint", err)
		}
		return tx.Invalidate(store.Invalidation{Kind: store.CacheEndpoint, ID: ep.ID})
	})
	if err != nil {
		return nil, err
	}
	return &out, nil
}

// endpointMissOrConflict tells a missing endpoint from a moved version.
func (s *Store) endpointMissOrConflict(tx Executor, id string) error {
	var n int
	if err := tx.QueryRow(`SELECT count(*) FROM endpoints WHERE id = $1`, id).Scan(&n); err != nil {
		return s.errorf("read endpoint", err)
	}
	if n == 0 {
		return rule(store.ErrEndpointNotFound)
	}
	return rule(store.ErrEndpointConflict)
}

// EndpointDelete implements store.DeliveryStore: the endpoint goes with
// its deliveries, attempts, cursors, bucket and replay jobs.
func (s *Store) EndpointDelete(ctx context.Context, id string) error {
	return s.write(ctx, ChecksFirst, func(tx Tx) error {
		n, err := tx.Exec(`DELETE FROM endpoints WHERE id = $1`, id)
		if err != nil {
			return s.errorf("delete endpoint", err)
		}
		if n == 0 {
			return rule(store.ErrEndpointNotFound)
		}
		for _, q := range []string{
			`DELETE FROM delivery_attempts WHERE delivery_seq IN (SELECT seq FROM deliveries WHERE endpoint_id = $1)`,
			`DELETE FROM deliveries WHERE endpoint_id = $1`,
			`DELETE FROM delivery_cursors WHERE endpoint_id = $1`,
			`DELETE FROM endpoint_buckets WHERE endpoint_id = $1`,
			`DELETE FROM replay_jobs WHERE endpoint_id = $1`,
		} {
			if _, err := tx.Exec(q, id); err != nil {
				return s.errorf("delete endpoint data", err)
			}
		}
		return tx.Invalidate(store.Invalidation{Kind: store.CacheEndpoint, ID: id})
	})
}

// EndpointCount implements store.DeliveryStore.
func (s *Store) EndpointCount(ctx context.Context) (map[string]int, error) {
	return s.countBy(ctx, `SELECT `+EndpointStatusSQL+`, count(*) FROM endpoints GROUP BY 1`, "count endpoints",
		map[string]int{store.EndpointActive: 0, store.EndpointPaused: 0, store.EndpointPending: 0, store.EndpointDisabled: 0})
}

// endpointType is the stored type of an endpoint: "webhook" when unset.
func endpointType(ep *store.Endpoint) string {
	if ep.Type == "" {
		return "webhook"
	}
	return ep.Type
}
