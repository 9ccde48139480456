package sqlite

import (
	"context"
	"fmt"

	"go.opentelemetry.io/otel/trace"

	"github.com/heraldstreams/herald/store"
	"github.com/heraldstreams/herald/store/internal/codec"
)

// EventPublish implements store.DeliveryStore: the append and the id are
// written in one savepoint of one batch, so the id is recorded exactly
// when the event is.
func (s *Store) EventPublish(ctx context.Context, params *store.EventPublishParams) (*store.EventPublishResult, error) {
	var res *store.EventPublishResult
	sc := trace.SpanContextFromContext(ctx) // the publish's: its match joins its trace
	err := s.write(ctx, func(b *batch) error {
		res = nil
		var stream string
		var pos int64
		err := s.wconn.QueryRowContext(b.ctx, eventIDGet,
			params.Tenant, params.EventID).Scan(&stream, &pos)
		switch {
		case err == nil:
			res = &store.EventPublishResult{Stream: stream, Position: pos, Duplicate: true}
			return nil
		case !isNoRows(err):
			return fmt.Errorf("read event id: %w", err)
		}
		if b.get(params.Stream) == nil {
			c := &createOp{p: &store.StreamCreateParams{Path: params.Stream, ContentType: "application/json", Now: params.Now}, trace: sc}
			if err := c.apply(b); err != nil {
				return err
			}
			if c.err != nil {
				return ruleError{c.err}
			}
		}
		a := &appendOp{p: &store.StreamAppendParams{Path: params.Stream, ContentType: "application/json",
			Data: params.Data, Messages: 1, Now: params.Now}, trace: sc}
		if err := a.apply(b); err != nil {
			return err
		}
		if a.err != nil {
			return ruleError{a.err}
		}
		if _, err := b.exec(eventIDInsert,
			params.Tenant, params.EventID, params.Stream, a.res.Start, codec.Nanos(params.Now)); err != nil {
			return fmt.Errorf("record event id: %w", err)
		}
		res = &store.EventPublishResult{Stream: params.Stream, Position: a.res.Start}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return res, nil
}

// The shared statements in SQLite's placeholders, converted once.
var (
	eventIDGet           = codec.Numbered(codec.EventIDGet)
	eventIDInsert        = codec.Numbered(codec.EventIDInsert)
	eventIDInsertNew     = codec.Numbered(codec.EventIDInsertNew)
	consumerCountStalled = codec.Numbered(codec.ConsumerCountStalled)
)
