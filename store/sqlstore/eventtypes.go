package sqlstore

import (
	"context"

	"github.com/heraldstreams/herald/store"
)

var _ store.EventTypeStore = (*Store)(nil)

// EventTypeCreate implements store.EventTypeStore. It is a durable write.
func (s *Store) EventTypeCreate(ctx context.Context, params *store.EventTypeCreateParams) (*store.EventType, error) {
	et := params.EventType
	et.CreatedAt, et.UpdatedAt, et.Version = params.Now, params.Now, 1
	err := s.write(ctx, ChecksFirst, func(tx Tx) error {
		n, err := tx.Exec(`INSERT INTO event_types (`+EventTypeColumns+`) VALUES ($1, $2, $3, $4, $5, $6, 1)
			ON CONFLICT (name) DO NOTHING`,
			et.Name, et.Description, et.Schema, et.Deprecated, Nanos(et.CreatedAt), Nanos(et.UpdatedAt))
		if err != nil {
			return s.errorf("insert event type", err)
		}
		if n == 0 {
			return rule(store.ErrEventTypeExists)
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
	return get(ctx, s, &query{sql: `SELECT ` + EventTypeColumns + ` FROM event_types WHERE name = $1`, args: []any{name}},
		"read event type", store.ErrEventTypeNotFound, ScanEventType)
}

// EventTypeList implements store.EventTypeStore.
func (s *Store) EventTypeList(ctx context.Context, params *store.EventTypeListParams) ([]store.EventType, error) {
	q := &query{sql: `SELECT ` + EventTypeColumns + ` FROM event_types WHERE name > $1 ORDER BY name`, args: []any{params.After}}
	if params.Limit > 0 {
		q.add(` LIMIT `, params.Limit)
	}
	return list(ctx, s, q, "list event types", ScanEventType)
}

// EventTypeUpdate implements store.EventTypeStore: a compare-and-set on
// the version.
func (s *Store) EventTypeUpdate(ctx context.Context, params *store.EventTypeUpdateParams) (*store.EventType, error) {
	et := params.EventType
	var out store.EventType
	err := s.write(ctx, ChecksFirst, func(tx Tx) error {
		var err error
		out, err = ScanEventType(tx.QueryRow(`UPDATE event_types SET description = $1, schema = $2, deprecated = $3,
			updated_at = $4, version = version + 1 WHERE name = $5 AND version = $6 RETURNING `+EventTypeColumns,
			et.Description, et.Schema, et.Deprecated, Nanos(params.Now), et.Name, params.ExpectVersion))
		if !s.d.IsNoRows(err) {
			if err != nil {
				return s.errorf("update event type", err)
			}
			return nil
		}
		var found bool
		if err := tx.QueryRow(`SELECT EXISTS (SELECT 1 FROM event_types WHERE name = $1)`, et.Name).Scan(&found); err != nil {
			return s.errorf("read event type", err)
		}
		if !found {
			return rule(store.ErrEventTypeNotFound)
		}
		return rule(store.ErrEventTypeConflict)
	})
	if err != nil {
		return nil, err
	}
	return &out, nil
}

// EventTypeDelete implements store.EventTypeStore.
func (s *Store) EventTypeDelete(ctx context.Context, name string) error {
	return s.write(ctx, ChecksFirst, func(tx Tx) error {
		n, err := tx.Exec(`DELETE FROM event_types WHERE name = $1`, name)
		if err != nil {
			return s.errorf("delete event type", err)
		}
		if n == 0 {
			return rule(store.ErrEventTypeNotFound)
		}
		return nil
	})
}
