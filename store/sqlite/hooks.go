package sqlite

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/heraldstreams/herald/store"
	"github.com/heraldstreams/herald/store/sqlstore"
)

// The core's hooks into the streams (sqlstore.Backend): the committer's
// view of them, this batch's changes over the published cache.

var _ store.DeliveryStore = (*Store)(nil)

// SnapshotCursors implements sqlstore.Backend from the committer's view
// of the streams (see batch.snapshotCursors).
func (k backend) SnapshotCursors(tx sqlstore.Tx, endpointID string, now time.Time) error {
	return tx.(*batchTx).b.snapshotCursors(endpointID, now)
}

// snapshotCursors gives the endpoint a cursor at the tail of every live
// stream that has none, as of this batch (the committer's view includes
// appends earlier in the batch).
func (b *batch) snapshotCursors(endpointID string, now time.Time) error {
	seen := make(map[string]bool)
	visit := func(path string, e *entry) error {
		if seen[path] {
			return nil
		}
		seen[path] = true
		if e == nil {
			return nil
		}
		st, err := b.s.view(e, now)
		if err != nil {
			return nil // deleted or expired: nothing to deliver from it
		}
		_, err = b.exec(sqlstore.InsertCursorSQL, st.Path, endpointID, st.ID, st.Tail)
		if err != nil {
			return fmt.Errorf("insert cursor: %w", err)
		}
		return nil
	}
	for path, e := range b.overlay {
		if err := visit(path, e); err != nil {
			return err
		}
	}
	// The committer is the only writer of byPath: reading it here is safe.
	for path, e := range b.s.byPath {
		if err := visit(path, e); err != nil {
			return err
		}
	}
	return nil
}

// EachStream implements sqlstore.Backend from the committer's view of the
// streams: this batch's changes over the published cache. Only the
// entries are collected up front; each stream is viewed and handed to fn
// in turn, in path order (for consumers, nearly their id order: their
// inserts land in neighbouring pages).
func (k backend) EachStream(tx sqlstore.Tx, prefix string, now time.Time, fn func(*store.Stream) error) error {
	b := tx.(*batchTx).b
	var entries []*entry
	for path, e := range b.overlay {
		if e != nil && strings.HasPrefix(path, prefix) {
			entries = append(entries, e)
		}
	}
	// The committer is the only writer of byPath: reading it here is safe.
	for path, e := range b.s.byPath {
		if _, staged := b.overlay[path]; !staged && strings.HasPrefix(path, prefix) {
			entries = append(entries, e)
		}
	}
	slices.SortFunc(entries, func(x, y *entry) int { return strings.Compare(x.path, y.path) })
	for i, e := range entries {
		entries[i] = nil // let the collector have what fn is done with
		st, err := b.s.view(e, now)
		if err != nil {
			continue // soft-deleted or expired
		}
		if err := fn(&st); err != nil {
			return err
		}
	}
	return nil
}

// PublishAppend implements sqlstore.Backend with the core's create and
// append on the batch's streams (the id is recorded in the same
// savepoint).
func (k backend) PublishAppend(ctx context.Context, tx sqlstore.Tx, params *store.EventPublishParams) (int64, error) {
	// The publish's trace: its match joins its trace.
	return sqlstore.PublishStream(tx.(*batchTx).b.streamsFor(trace.SpanContextFromContext(ctx)), params)
}
