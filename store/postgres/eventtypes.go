package postgres

import (
	"context"
	"fmt"

	"github.com/heraldstreams/herald/store"
	"github.com/heraldstreams/herald/store/internal/codec"
)

var _ store.EventTypeStore = (*Store)(nil)

// EventTypeCreate implements store.EventTypeStore.
func (s *Store) EventTypeCreate(ctx context.Context, params *store.EventTypeCreateParams) (*store.EventType, error) {
	et := params.EventType
	et.CreatedAt, et.UpdatedAt, et.Version = params.Now, params.Now, 1
	err := s.tx(ctx, func(tx *wtx) error {
		tag, err := tx.Exec(ctx, `INSERT INTO event_types (`+codec.EventTypeColumns+`) VALUES ($1, $2, $3, $4, $5, $6, 1)
			ON CONFLICT (name) DO NOTHING`,
			et.Name, et.Description, et.Schema, et.Deprecated, codec.Nanos(et.CreatedAt), codec.Nanos(et.UpdatedAt))
		if err != nil {
			return fmt.Errorf("postgres: insert event type: %w", err)
		}
		if tag.RowsAffected() == 0 {
			return store.ErrEventTypeExists
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return &et, nil
}

// EventTypeGet implements store.EventTypeStore.
func (s *Store) EventTypeGet(ctx context.Context, name string) (*store.EventType, error) {
	ets, err := collect(ctx, s, &query{sql: `SELECT ` + codec.EventTypeColumns + ` FROM event_types WHERE name = $1`, args: []any{name}},
		"read event type", codec.ScanEventType)
	if err != nil {
		return nil, err
	}
	if len(ets) == 0 {
		return nil, store.ErrEventTypeNotFound
	}
	return &ets[0], nil
}

// EventTypeList implements store.EventTypeStore.
func (s *Store) EventTypeList(ctx context.Context, params *store.EventTypeListParams) ([]store.EventType, error) {
	q := &query{sql: `SELECT ` + codec.EventTypeColumns + ` FROM event_types WHERE name > $1 ORDER BY name`, args: []any{params.After}}
	if params.Limit > 0 {
		q.add(` LIMIT `, params.Limit)
	}
	return collect(ctx, s, q, "list event types", codec.ScanEventType)
}

// EventTypeUpdate implements store.EventTypeStore.
func (s *Store) EventTypeUpdate(ctx context.Context, params *store.EventTypeUpdateParams) (*store.EventType, error) {
	et := params.EventType
	var out store.EventType
	err := s.tx(ctx, func(tx *wtx) error {
		var err error
		out, err = codec.ScanEventType(tx.QueryRow(ctx, `UPDATE event_types SET description = $1, schema = $2, deprecated = $3,
			updated_at = $4, version = version + 1 WHERE name = $5 AND version = $6 RETURNING `+codec.EventTypeColumns,
			et.Description, et.Schema, et.Deprecated, codec.Nanos(params.Now), et.Name, params.ExpectVersion))
		if !isNoRows(err) {
			if err != nil {
				return fmt.Errorf("postgres: update event type: %w", err)
			}
			return nil
		}
		var found bool
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM event_types WHERE name = $1)`, et.Name).Scan(&found); err != nil {
			return fmt.Errorf("postgres: read event type: %w", err)
		}
		if !found {
			return store.ErrEventTypeNotFound
		}
		return store.ErrEventTypeConflict
	})
	if err != nil {
		return nil, err
	}
	return &out, nil
}

// EventTypeDelete implements store.EventTypeStore.
func (s *Store) EventTypeDelete(ctx context.Context, name string) error {
	return s.tx(ctx, func(tx *wtx) error {
		tag, err := tx.Exec(ctx, `DELETE FROM event_types WHERE name = $1`, name)
		if err != nil {
			return fmt.Errorf("postgres: delete event type: %w", err)
		}
		if tag.RowsAffected() == 0 {
			return store.ErrEventTypeNotFound
		}
		return nil
	})
}
