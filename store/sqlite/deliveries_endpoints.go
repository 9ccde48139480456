package sqlite

import (
	"fmt"
	"time"

	"github.com/heraldstreams/herald/store"
	"github.com/heraldstreams/herald/store/sqlstore"
)

var _ store.DeliveryStore = (*Store)(nil)

// SnapshotCursors implements sqlstore.Backend from the committer's view
// of the streams (see batch.snapshotCursors).
func (k backend) SnapshotCursors(tx sqlstore.Tx, endpointID string, now time.Time) error {
	return tx.(batchTx).b.snapshotCursors(endpointID, now)
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
		_, err = b.exec(`INSERT INTO delivery_cursors (endpoint_id, stream, stream_id, position) VALUES (?, ?, ?, ?)
			ON CONFLICT (stream, endpoint_id) DO NOTHING`, endpointID, st.Path, st.ID, st.Tail)
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

// endpointMissOrConflict tells a missing endpoint from a moved version.
func (b *batch) endpointMissOrConflict(id string) error {
	var n int
	if err := b.s.wconn.QueryRowContext(b.ctx, `SELECT count(*) FROM endpoints WHERE id = ?`, id).Scan(&n); err != nil {
		return fmt.Errorf("read endpoint: %w", err)
	}
	if n == 0 {
		return ruleError{store.ErrEndpointNotFound}
	}
	return ruleError{store.ErrEndpointConflict}
}
