package sqlite

import (
	"context"
	"fmt"

	"github.com/heraldstreams/herald/store"
	"github.com/heraldstreams/herald/store/internal/codec"
)

var _ store.EventTypeStore = (*Store)(nil)

// EventTypeCreate implements store.EventTypeStore. It is a durable write.
func (s *Store) EventTypeCreate(ctx context.Context, params *store.EventTypeCreateParams) (*store.EventType, error) {
	et := params.EventType
	et.CreatedAt, et.UpdatedAt, et.Version = params.Now, params.Now, 1
	err := s.writeChecked(ctx, func(b *batch) error {
		var n int
		if err := s.wconn.QueryRowContext(b.ctx, `SELECT count(*) FROM event_types WHERE name = ?`, et.Name).Scan(&n); err != nil {
			return fmt.Errorf("read event type: %w", err)
		}
		if n > 0 {
			return ruleError{store.ErrEventTypeExists}
		}
		if _, err := b.exec(`INSERT INTO event_types (`+codec.EventTypeColumns+`) VALUES (?, ?, ?, ?, ?, ?, 1)`,
			et.Name, et.Description, et.Schema, et.Deprecated, codec.Nanos(et.CreatedAt), codec.Nanos(et.UpdatedAt)); err != nil {
			return fmt.Errorf("insert event type: %w", err)
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
	et, err := codec.ScanEventType(s.reader.QueryRowContext(ctx, `SELECT `+codec.EventTypeColumns+` FROM event_types WHERE name = ?`, name))
	if isNoRows(err) {
		return nil, store.ErrEventTypeNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("sqlite: read event type: %w", err)
	}
	return &et, nil
}

// EventTypeList implements store.EventTypeStore.
func (s *Store) EventTypeList(ctx context.Context, params *store.EventTypeListParams) ([]store.EventType, error) {
	q := `SELECT ` + codec.EventTypeColumns + ` FROM event_types WHERE name > ? ORDER BY name`
	args := []any{params.After}
	if params.Limit > 0 {
		q += ` LIMIT ?`
		args = append(args, params.Limit)
	}
	rows, err := s.reader.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("sqlite: list event types: %w", err)
	}
	defer rows.Close()
	var out []store.EventType
	for rows.Next() {
		et, err := codec.ScanEventType(rows)
		if err != nil {
			return nil, fmt.Errorf("sqlite: list event types: %w", err)
		}
		out = append(out, et)
	}
	return out, rows.Err()
}

// EventTypeUpdate implements store.EventTypeStore.
func (s *Store) EventTypeUpdate(ctx context.Context, params *store.EventTypeUpdateParams) (*store.EventType, error) {
	et := params.EventType
	var out store.EventType
	err := s.writeChecked(ctx, func(b *batch) error {
		res, err := b.exec(`UPDATE event_types SET description = ?, schema = ?, deprecated = ?, updated_at = ?, version = version + 1
			WHERE name = ? AND version = ?`,
			et.Description, et.Schema, et.Deprecated, codec.Nanos(params.Now), et.Name, params.ExpectVersion)
		if err != nil {
			return fmt.Errorf("update event type: %w", err)
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n == 0 {
			var found int
			if err := s.wconn.QueryRowContext(b.ctx, `SELECT count(*) FROM event_types WHERE name = ?`, et.Name).Scan(&found); err != nil {
				return fmt.Errorf("read event type: %w", err)
			}
			if found == 0 {
				return ruleError{store.ErrEventTypeNotFound}
			}
			return ruleError{store.ErrEventTypeConflict}
		}
		out, err = codec.ScanEventType(s.wconn.QueryRowContext(b.ctx, `SELECT `+codec.EventTypeColumns+` FROM event_types WHERE name = ?`, et.Name))
		if err != nil {
			return fmt.Errorf("read event type: %w", err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return &out, nil
}

// EventTypeDelete implements store.EventTypeStore.
func (s *Store) EventTypeDelete(ctx context.Context, name string) error {
	return s.writeChecked(ctx, func(b *batch) error {
		res, err := b.exec(`DELETE FROM event_types WHERE name = ?`, name)
		if err != nil {
			return fmt.Errorf("delete event type: %w", err)
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n == 0 {
			return ruleError{store.ErrEventTypeNotFound}
		}
		return nil
	})
}
