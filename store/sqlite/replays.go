package sqlite

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/heraldstreams/herald/store"
)

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
