package sqlstore

import (
	"context"
	"encoding/json"
	"time"

	"github.com/heraldstreams/herald/store"
)

// ReplayJobCreate implements store.ReplayStore.
func (s *Store) ReplayJobCreate(ctx context.Context, job *store.ReplayJob) error {
	return s.write(ctx, ChecksFirst, func(tx Tx) error {
		n, err := tx.Exec(`INSERT INTO replay_jobs (id, endpoint_id, tenant, request, state, progress, owner, lease_until, created_at, updated_at)
			VALUES ($1, $2, $3, $4, 'running', $5, $6, $7, $8, $8) ON CONFLICT (id) DO NOTHING`, ReplayJobInsertArgs(job)...)
		if err != nil {
			return s.errorf("create replay job", err)
		}
		if n == 0 {
			return rule(store.ErrReplayJobExists)
		}
		return nil
	})
}

// ReplayJobGet implements store.ReplayStore.
func (s *Store) ReplayJobGet(ctx context.Context, id string) (*store.ReplayJob, error) {
	return get(ctx, s, &query{sql: `SELECT ` + ReplayJobColumns + ` FROM replay_jobs WHERE id = $1`, args: []any{id}},
		"read replay job", store.ErrReplayJobNotFound, ScanReplayJob)
}

// stepJob applies a job step in tx, with what tx queued.
func (s *Store) stepJob(tx Tx, step *store.ReplayJobStep, queued int, now time.Time) error {
	n, err := tx.Exec(ReplayStepSQL("$"), ReplayStepArgs(step, queued, now)...)
	if err != nil {
		return s.errorf("step replay job", err)
	}
	if n == 0 {
		return rule(store.ErrReplayJobLost)
	}
	return nil
}

// ReplayJobUpdate implements store.ReplayStore.
func (s *Store) ReplayJobUpdate(ctx context.Context, params *store.ReplayJobUpdateParams) error {
	return s.write(ctx, ChecksFirst, func(tx Tx) error { return s.stepJob(tx, &params.Step, 0, params.Now) })
}

// ReplayJobClaim implements store.ReplayStore. Handles claiming at once
// take different jobs (Dialect.SkipLocked).
func (s *Store) ReplayJobClaim(ctx context.Context, params *store.ReplayJobClaimParams) ([]store.ReplayJob, error) {
	var out []store.ReplayJob
	err := s.write(ctx, ChecksFirst, func(tx Tx) error {
		out = nil
		err := tx.Query(`UPDATE replay_jobs SET owner = $1, lease_until = $2, updated_at = $3
			WHERE id IN (SELECT id FROM replay_jobs WHERE state = 'running' AND lease_until <= $3
				ORDER BY created_at, id LIMIT $4 `+s.d.SkipLocked+`)
			RETURNING `+ReplayJobColumns, []any{params.Owner, Nanos(params.LeaseUntil), Nanos(params.Now), params.Limit},
			func(r Row) error {
				j, err := ScanReplayJob(r)
				out = append(out, j)
				return err
			})
		if err != nil {
			return s.errorf("claim replay jobs", err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// DeliveryRequeue implements store.DeliveryStore.
func (s *Store) DeliveryRequeue(ctx context.Context, params *store.DeliveryRequeueParams) (int, error) {
	in, arg := s.d.Int64s("$2", s.ids.Seqs(params.IDs))
	var queued int
	err := s.write(ctx, Durable, func(tx Tx) error {
		n, err := tx.Exec(`UPDATE deliveries SET status = 'pending', round_attempts = 0, next_attempt_at = $1, finished_at = 0,
			updated_at = $1 WHERE seq IN (`+in+`) AND endpoint_id = $3 AND status = $4`,
			Nanos(params.Now), arg, params.EndpointID, params.Status)
		if err != nil {
			return s.errorf("requeue deliveries", err)
		}
		queued = int(n)
		if params.Job != nil {
			return s.stepJob(tx, params.Job, queued, params.Now)
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	return queued, nil
}

// writeSighting records an event id of a tenant met at a position of
// stream, unless it was seen there before in that tenant; seen
// elsewhere, it is ErrCursorConflict.
func (s *Store) writeSighting(tx Tx, stream string, sg *store.EventSighting, now int64) error {
	n, err := tx.Exec(EventIDInsertNew, sg.Tenant, sg.EventID, stream, sg.Position, now, sg.EventType)
	if err != nil {
		return s.errorf("record event id", err)
	}
	if n == 1 {
		return nil
	}
	var at store.EventPlace
	if err := tx.QueryRow(EventIDGet, sg.Tenant, sg.EventID).Scan(&at.Stream, &at.Position); err != nil {
		return s.errorf("read event id", err)
	}
	if at.Stream != stream || at.Position != sg.Position {
		return rule(store.ErrCursorConflict)
	}
	return nil
}

// EventIDsSeen implements store.DeliveryStore. The keys drive the loop
// (CROSS JOIN keeps that order where the planner would not choose it),
// each a primary key lookup.
func (s *Store) EventIDsSeen(ctx context.Context, keys []store.EventKey) (map[store.EventKey]store.EventPlace, error) {
	out := make(map[store.EventKey]store.EventPlace)
	if len(keys) == 0 {
		return out, nil
	}
	pairs := make([][2]string, len(keys))
	for i, k := range keys {
		pairs[i] = [2]string{k.Tenant, k.ID}
	}
	pairsJSON, err := json.Marshal(pairs)
	if err != nil {
		return nil, err
	}
	type seen struct {
		key store.EventKey
		at  store.EventPlace
	}
	rows, err := list(ctx, s, &query{sql: `SELECT p.tenant, p.event_id, p.stream, p.position
		FROM (` + s.d.TextPairs("$1") + `) AS k CROSS JOIN published_events AS p WHERE p.tenant = k.a AND p.event_id = k.b`,
		args: []any{string(pairsJSON)}}, "read event ids", func(r Row) (seen, error) {
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
