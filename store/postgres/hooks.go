package postgres

import (
	"context"
	"time"

	"github.com/heraldstreams/herald/store"
	"github.com/heraldstreams/herald/store/sqlstore"
)

// The core's hooks into the streams (sqlstore.Backend), read from their
// rows in the write's transaction.

var _ store.DeliveryStore = (*Store)(nil)

// SnapshotCursors implements sqlstore.Backend from the streams' rows.
func (k backend) SnapshotCursors(tx sqlstore.Tx, endpointID string, now time.Time) error {
	_, err := tx.Exec(`INSERT INTO delivery_cursors (endpoint_id, stream, stream_id, position)
		SELECT $2, path, id, tail FROM streams WHERE NOT soft_deleted AND NOT (`+sqlstore.ExpiredSQL+`)
		ON CONFLICT (stream, endpoint_id) DO NOTHING`, sqlstore.Nanos(now), endpointID)
	return err
}

// EachStream implements sqlstore.Backend, a page of streams at a time.
func (k backend) EachStream(tx sqlstore.Tx, prefix string, now time.Time, fn func(*store.Stream) error) error {
	return k.s.EachStreamRow(tx, prefix, "", now, func(st *store.Stream) (bool, error) {
		return true, fn(st)
	})
}

// PublishAppend implements sqlstore.Backend: the create, when the stream
// is missing, and the append, in the transaction.
func (k backend) PublishAppend(ctx context.Context, tx sqlstore.Tx, params *store.EventPublishParams) (int64, error) {
	return sqlstore.PublishStream(k.s.streamsOf(tx), params)
}

// updateStreamSQL writes a stream's row with the transaction's id as its
// change sequence (see migration 0010_stream_changes).
var updateStreamSQL = sqlstore.UpdateStreamSQL(`CAST(CAST(pg_current_xact_id() AS text) AS bigint)`)

// ChangeMark implements sqlstore.Backend: the oldest transaction still
// running; every row written by one not committed yet carries its id,
// at or above it.
func (k backend) ChangeMark(ctx context.Context) (int64, error) {
	var mark int64
	err := k.Read(ctx, func(x sqlstore.Executor) error {
		return x.QueryRow(`SELECT CAST(CAST(pg_snapshot_xmin(pg_current_snapshot()) AS text) AS bigint)`).Scan(&mark)
	})
	return mark, err
}
