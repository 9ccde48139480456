package postgres

import (
	"context"

	"github.com/heraldstreams/herald/store"
	"github.com/heraldstreams/herald/store/internal/codec"
)

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
