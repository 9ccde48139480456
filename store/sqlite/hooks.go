package sqlite

import (
	"context"
	"fmt"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/heraldstreams/herald/store"
	"github.com/heraldstreams/herald/store/sqlstore"
)

// The core's hooks into the streams (sqlstore.Backend): the committer's
// view of them, this batch's changes over the published cache.

var _ store.DeliveryStore = (*Store)(nil)

// SnapshotCursors implements sqlstore.Backend: a cursor at the tail of
// every live stream, walked from the rows in path order a page at a time
// (see batch.eachStream).
func (k backend) SnapshotCursors(tx sqlstore.Tx, endpointID string, now time.Time) error {
	b := tx.(*batchTx).b
	return b.eachStream("", now, func(st *store.Stream) error {
		if _, err := b.exec(sqlstore.InsertCursorSQL, st.Path, endpointID, st.ID, st.Tail); err != nil {
			return fmt.Errorf("insert cursor: %w", err)
		}
		return nil
	})
}

// EachStream implements sqlstore.Backend (see batch.eachStream).
func (k backend) EachStream(tx sqlstore.Tx, prefix string, now time.Time, fn func(*store.Stream) error) error {
	return tx.(*batchTx).b.eachStream(prefix, now, fn)
}

// eachStream calls fn for every live stream whose path starts with
// prefix, as of this batch, in path order: the rows of the streams this
// batch changed are written first (they are written again when it
// flushes, with what changed since), then the rows are read a page at a
// time, so the walk holds one page, never every stream.
func (b *batch) eachStream(prefix string, now time.Time, fn func(*store.Stream) error) error {
	if err := b.flush(false); err != nil {
		return err
	}
	return b.s.EachStreamRow(txOf(b), prefix, "", now, func(st *store.Stream) (bool, error) {
		return true, fn(st)
	})
}

// PublishAppend implements sqlstore.Backend with the core's create and
// append on the batch's streams (the id is recorded in the same
// savepoint).
func (k backend) PublishAppend(ctx context.Context, tx sqlstore.Tx, params *store.EventPublishParams) (int64, error) {
	// The publish's trace: its match joins its trace.
	return sqlstore.PublishStream(tx.(*batchTx).b.streamsFor(trace.SpanContextFromContext(ctx)), params)
}
