package postgres

import (
	"context"
	"fmt"

	"github.com/heraldstreams/herald/store"
	"github.com/heraldstreams/herald/store/internal/codec"
)

var _ store.DeliveryStore = (*Store)(nil)

// EventPublish implements store.DeliveryStore: the append and the id are
// written in one transaction, so the id is recorded exactly when the
// event is.
func (s *Store) EventPublish(ctx context.Context, params *store.EventPublishParams) (*store.EventPublishResult, error) {
	var res *store.EventPublishResult
	err := s.tx(ctx, func(tx *wtx) error {
		res = &store.EventPublishResult{Stream: params.Stream}
		err := tx.QueryRow(ctx, codec.EventIDGet,
			params.Tenant, params.EventID).Scan(&res.Stream, &res.Position)
		switch {
		case err == nil:
			res.Duplicate = true
			return nil
		case !isNoRows(err):
			return fmt.Errorf("postgres: read event id: %w", err)
		}
		r, err := getRow(ctx, tx, params.Stream, false)
		if err != nil {
			return err
		}
		if r == nil {
			if _, err := s.create(ctx, tx, &store.StreamCreateParams{Path: params.Stream, ContentType: "application/json", Now: params.Now}); err != nil {
				return err
			}
		}
		a, err := s.append(ctx, tx, &store.StreamAppendParams{Path: params.Stream, ContentType: "application/json",
			Data: params.Data, Messages: 1, Now: params.Now})
		if err != nil {
			return err
		}
		res.Position = a.Start
		if _, err := tx.Exec(ctx, codec.EventIDInsert,
			params.Tenant, params.EventID, params.Stream, a.Start, codec.Nanos(params.Now)); err != nil {
			return fmt.Errorf("postgres: record event id: %w", err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return res, nil
}
