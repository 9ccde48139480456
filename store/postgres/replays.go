package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/heraldstreams/herald/store"
	"github.com/heraldstreams/herald/store/internal/codec"
)

// ReplayJobCreate implements store.ReplayStore.
func (s *Store) ReplayJobCreate(ctx context.Context, job *store.ReplayJob) error {
	return s.tx(ctx, func(tx *wtx) error {
		tag, err := tx.Exec(ctx, `INSERT INTO replay_jobs (id, endpoint_id, tenant, request, state, progress, owner, lease_until, created_at, updated_at)
			VALUES ($1, $2, $3, $4, 'running', $5, $6, $7, $8, $8) ON CONFLICT (id) DO NOTHING`, codec.ReplayJobInsertArgs(job)...)
		if err != nil {
			return fmt.Errorf("postgres: create replay job: %w", err)
		}
		if tag.RowsAffected() == 0 {
			return store.ErrReplayJobExists
		}
		return nil
	})
}

// ReplayJobGet implements store.ReplayStore.
func (s *Store) ReplayJobGet(ctx context.Context, id string) (*store.ReplayJob, error) {
	js, err := collect(ctx, s, &query{sql: `SELECT ` + codec.ReplayJobColumns + ` FROM replay_jobs WHERE id = $1`, args: []any{id}},
		"read replay job", codec.ScanReplayJob)
	if err != nil {
		return nil, err
	}
	if len(js) == 0 {
		return nil, store.ErrReplayJobNotFound
	}
	return &js[0], nil
}

// stepJob applies a job step in a transaction, with what it queued.
func stepJob(ctx context.Context, tx pgx.Tx, step *store.ReplayJobStep, queued int, now time.Time) error {
	tag, err := tx.Exec(ctx, codec.ReplayStepSQL("$"), codec.ReplayStepArgs(step, queued, now)...)
	if err != nil {
		return fmt.Errorf("postgres: step replay job: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return store.ErrReplayJobLost
	}
	return nil
}

// ReplayJobUpdate implements store.ReplayStore.
func (s *Store) ReplayJobUpdate(ctx context.Context, params *store.ReplayJobUpdateParams) error {
	return s.tx(ctx, func(tx *wtx) error { return stepJob(ctx, tx, &params.Step, 0, params.Now) })
}

// ReplayJobClaim implements store.ReplayStore. SKIP LOCKED lets replicas
// claiming at once take different jobs.
func (s *Store) ReplayJobClaim(ctx context.Context, params *store.ReplayJobClaimParams) ([]store.ReplayJob, error) {
	var out []store.ReplayJob
	err := s.tx(ctx, func(tx *wtx) error {
		out = nil
		rows, err := tx.Query(ctx, `UPDATE replay_jobs SET owner = $1, lease_until = $2, updated_at = $3
			WHERE id IN (SELECT id FROM replay_jobs WHERE state = 'running' AND lease_until <= $3
				ORDER BY created_at, id LIMIT $4 FOR UPDATE SKIP LOCKED)
			RETURNING `+codec.ReplayJobColumns, params.Owner, codec.Nanos(params.LeaseUntil), codec.Nanos(params.Now), params.Limit)
		if err != nil {
			return fmt.Errorf("postgres: claim replay jobs: %w", err)
		}
		defer rows.Close()
		for rows.Next() {
			j, err := codec.ScanReplayJob(rows)
			if err != nil {
				return fmt.Errorf("postgres: claim replay jobs: %w", err)
			}
			out = append(out, j)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// DeliveryRequeue implements store.DeliveryStore.
func (s *Store) DeliveryRequeue(ctx context.Context, params *store.DeliveryRequeueParams) (int, error) {
	seqs := s.ids.Seqs(params.IDs)
	var queued int
	err := s.tx(ctx, func(tx *wtx) error {
		tag, err := tx.Exec(ctx, `UPDATE deliveries SET status = 'pending', round_attempts = 0, next_attempt_at = $1, finished_at = 0,
			updated_at = $1 WHERE seq = ANY($2) AND endpoint_id = $3 AND status = $4`,
			codec.Nanos(params.Now), seqs, params.EndpointID, params.Status)
		if err != nil {
			return fmt.Errorf("postgres: requeue deliveries: %w", err)
		}
		queued = int(tag.RowsAffected())
		if params.Job != nil {
			return stepJob(ctx, tx, params.Job, queued, params.Now)
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	return queued, nil
}

// EventIDsSeen implements store.DeliveryStore.
func (s *Store) EventIDsSeen(ctx context.Context, keys []store.EventKey) (map[store.EventKey]store.EventPlace, error) {
	out := make(map[store.EventKey]store.EventPlace)
	if len(keys) == 0 {
		return out, nil
	}
	tenants, ids := make([]string, len(keys)), make([]string, len(keys))
	for i, k := range keys {
		tenants[i], ids[i] = k.Tenant, k.ID
	}
	type seen struct {
		key store.EventKey
		at  store.EventPlace
	}
	rows, err := collect(ctx, s, &query{sql: `SELECT tenant, event_id, stream, position FROM published_events
		WHERE (tenant, event_id) IN (SELECT * FROM unnest($1::text[], $2::text[]))`,
		args: []any{tenants, ids}}, "read event ids", func(r codec.Row) (seen, error) {
		var v seen
		return v, r.Scan(&v.key.Tenant, &v.key.ID, &v.at.Stream, &v.at.Position)
	})
	if err != nil {
		return nil, err
	}
	for _, v := range rows {
		out[v.key] = v.at
	}
	return out, nil
}

// writeSighting records an event id of a tenant met at a position of
// stream, unless it was seen there before in that tenant; seen elsewhere, it is ErrCursorConflict.
func writeSighting(ctx context.Context, tx pgx.Tx, stream string, sg *store.EventSighting, now int64) error {
	tag, err := tx.Exec(ctx, codec.EventIDInsertNew, sg.Tenant, sg.EventID, stream, sg.Position, now)
	if err != nil {
		return fmt.Errorf("postgres: record event id: %w", err)
	}
	if tag.RowsAffected() == 1 {
		return nil
	}
	var at store.EventPlace
	if err := tx.QueryRow(ctx, codec.EventIDGet, sg.Tenant, sg.EventID).
		Scan(&at.Stream, &at.Position); err != nil {
		return fmt.Errorf("postgres: read event id: %w", err)
	}
	if at.Stream != stream || at.Position != sg.Position {
		return store.ErrCursorConflict
	}
	return nil
}
