package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/heraldstreams/herald/store"
	"github.com/heraldstreams/herald/store/internal/codec"
	"github.com/heraldstreams/herald/store/sqlstore"
	"github.com/jackc/pgx/v5"
)

// SnapshotCursors implements sqlstore.Backend from the streams' rows.
func (k backend) SnapshotCursors(tx sqlstore.Tx, endpointID string, now time.Time) error {
	_, err := tx.Exec(`INSERT INTO delivery_cursors (endpoint_id, stream, stream_id, position)
		SELECT $2, path, id, tail FROM streams WHERE NOT soft_deleted AND NOT (`+expiredSQL+`)
		ON CONFLICT (stream, endpoint_id) DO NOTHING`, codec.Nanos(now), endpointID)
	return err
}

// endpointMissOrConflict tells a missing endpoint from a moved version.
func endpointMissOrConflict(ctx context.Context, tx pgx.Tx, id string) error {
	var n int
	if err := tx.QueryRow(ctx, `SELECT count(*) FROM endpoints WHERE id = $1`, id).Scan(&n); err != nil {
		return fmt.Errorf("postgres: read endpoint: %w", err)
	}
	if n == 0 {
		return store.ErrEndpointNotFound
	}
	return store.ErrEndpointConflict
}
