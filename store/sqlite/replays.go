package sqlite

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/heraldstreams/herald/store"
	"github.com/heraldstreams/herald/store/internal/codec"
)

// ReplayJobCreate implements store.ReplayStore.
func (s *Store) ReplayJobCreate(ctx context.Context, job *store.ReplayJob) error {
	return s.write(ctx, func(b *batch) error {
		r, err := b.exec(`INSERT INTO replay_jobs (id, endpoint_id, tenant, request, state, progress, owner, lease_until, created_at, updated_at)
			VALUES (?1, ?2, ?3, ?4, 'running', ?5, ?6, ?7, ?8, ?8) ON CONFLICT (id) DO NOTHING`, codec.ReplayJobInsertArgs(job)...)
		if err != nil {
			return fmt.Errorf("create replay job: %w", err)
		}
		if n, err := r.RowsAffected(); err != nil {
			return err
		} else if n == 0 {
			return ruleError{store.ErrReplayJobExists}
		}
		return nil
	})
}

// ReplayJobGet implements store.ReplayStore.
func (s *Store) ReplayJobGet(ctx context.Context, id string) (*store.ReplayJob, error) {
	j, err := codec.ScanReplayJob(s.reader.QueryRowContext(ctx, `SELECT `+codec.ReplayJobColumns+` FROM replay_jobs WHERE id = ?`, id))
	if isNoRows(err) {
		return nil, store.ErrReplayJobNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("sqlite: read replay job: %w", err)
	}
	return &j, nil
}

// stepJob applies a job step in a batch, with what the batch queued.
func (b *batch) stepJob(step *store.ReplayJobStep, queued int, now int64) error {
	r, err := b.exec(codec.ReplayStepSQL("?"), codec.ReplayStepArgs(step, queued, codec.FromNanos(now))...)
	if err != nil {
		return fmt.Errorf("step replay job: %w", err)
	}
	if n, err := r.RowsAffected(); err != nil {
		return err
	} else if n == 0 {
		return ruleError{store.ErrReplayJobLost}
	}
	return nil
}

// ReplayJobUpdate implements store.ReplayStore.
func (s *Store) ReplayJobUpdate(ctx context.Context, params *store.ReplayJobUpdateParams) error {
	return s.write(ctx, func(b *batch) error { return b.stepJob(&params.Step, 0, codec.Nanos(params.Now)) })
}

// ReplayJobClaim implements store.ReplayStore.
func (s *Store) ReplayJobClaim(ctx context.Context, params *store.ReplayJobClaimParams) ([]store.ReplayJob, error) {
	var out []store.ReplayJob
	err := s.write(ctx, func(b *batch) error {
		out = out[:0]
		rows, err := s.wconn.QueryContext(b.ctx, `UPDATE replay_jobs SET owner = ?, lease_until = ?, updated_at = ?
			WHERE id IN (SELECT id FROM replay_jobs WHERE state = 'running' AND lease_until <= ? ORDER BY created_at, id LIMIT ?)
			RETURNING `+codec.ReplayJobColumns, params.Owner, codec.Nanos(params.LeaseUntil), codec.Nanos(params.Now),
			codec.Nanos(params.Now), params.Limit)
		if err != nil {
			return fmt.Errorf("claim replay jobs: %w", err)
		}
		for rows.Next() {
			j, err := codec.ScanReplayJob(rows)
			if err != nil {
				return errors.Join(fmt.Errorf("claim replay jobs: %w", err), rows.Close())
			}
			out = append(out, j)
		}
		return errors.Join(rows.Err(), rows.Close())
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// DeliveryRequeue implements store.DeliveryStore.
func (s *Store) DeliveryRequeue(ctx context.Context, params *store.DeliveryRequeueParams) (int, error) {
	seqs := s.ids.Seqs(params.IDs)
	list, err := json.Marshal(seqs)
	if err != nil {
		return 0, err
	}
	var queued int
	err = s.write(ctx, func(b *batch) error {
		now := codec.Nanos(params.Now)
		r, err := b.exec(`UPDATE deliveries SET status = 'pending', round_attempts = 0, next_attempt_at = ?1, finished_at = 0, updated_at = ?1
			WHERE seq IN (SELECT value FROM json_each(?2)) AND endpoint_id = ?3 AND status = ?4`, now, string(list), params.EndpointID, params.Status)
		if err != nil {
			return fmt.Errorf("requeue deliveries: %w", err)
		}
		n, err := r.RowsAffected()
		if err != nil {
			return err
		}
		queued = int(n)
		if params.Job != nil {
			return b.stepJob(params.Job, queued, now)
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
	pairs := make([][2]string, len(keys))
	for i, k := range keys {
		pairs[i] = [2]string{k.Tenant, k.ID}
	}
	list, err := json.Marshal(pairs)
	if err != nil {
		return nil, err
	}
	// The keys drive the loop (CROSS JOIN keeps that order), each a
	// primary key lookup.
	stmt, err := s.readerStmt(ctx, `SELECT p.tenant, p.event_id, p.stream, p.position
		FROM json_each(?) AS k CROSS JOIN published_events AS p ON p.tenant = k.value ->> 0 AND p.event_id = k.value ->> 1`)
	if err != nil {
		return nil, err
	}
	rows, err := stmt.QueryContext(ctx, string(list))
	if err != nil {
		return nil, fmt.Errorf("sqlite: read event ids: %w", err)
	}
	for rows.Next() {
		var k store.EventKey
		var p store.EventPlace
		if err := rows.Scan(&k.Tenant, &k.ID, &p.Stream, &p.Position); err != nil {
			return nil, errors.Join(fmt.Errorf("sqlite: read event ids: %w", err), rows.Close())
		}
		out[k] = p
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		return nil, fmt.Errorf("sqlite: read event ids: %w", err)
	}
	return out, nil
}

// writeSighting records an event id of a tenant met at a position of
// stream, unless it was seen there before in that tenant; seen elsewhere, it is ErrCursorConflict.
func (b *batch) writeSighting(stream string, sg *store.EventSighting, now int64) error {
	r, err := b.exec(eventIDInsertNew, sg.Tenant, sg.EventID, stream, sg.Position, now)
	if err != nil {
		return fmt.Errorf("record event id: %w", err)
	}
	if n, err := r.RowsAffected(); err != nil || n == 1 {
		return err
	}
	var at store.EventPlace
	if err := b.s.wconn.QueryRowContext(b.ctx, eventIDGet, sg.Tenant, sg.EventID).
		Scan(&at.Stream, &at.Position); err != nil {
		return fmt.Errorf("read event id: %w", err)
	}
	if at.Stream != stream || at.Position != sg.Position {
		return ruleError{store.ErrCursorConflict}
	}
	return nil
}
