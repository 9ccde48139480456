package sqlstore

import (
	"context"

	"github.com/heraldstreams/herald/store"
)

// EventPublish implements store.DeliveryStore: the append and the id are
// written in one write, so the id is recorded exactly when the event is.
// An id already recorded in the tenant answers where it was, and appends
// nothing.
func (s *Store) EventPublish(ctx context.Context, params *store.EventPublishParams) (*store.EventPublishResult, error) {
	var res *store.EventPublishResult
	err := s.write(ctx, Durable, func(tx Tx) error {
		res = &store.EventPublishResult{Stream: params.Stream}
		err := tx.QueryRow(EventIDGet, params.Tenant, params.EventID).Scan(&res.Stream, &res.Position)
		switch {
		case err == nil:
			res.Duplicate = true
			return nil
		case !s.d.IsNoRows(err):
			return s.errorf("read event id", err)
		}
		start, err := s.b.PublishAppend(ctx, tx, params)
		if err != nil {
			return err
		}
		res.Position = start
		if _, err := tx.Exec(EventIDInsert, params.Tenant, params.EventID, params.Stream, start, Nanos(params.Now), params.EventType); err != nil {
			return s.errorf("record event id", err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return res, nil
}
