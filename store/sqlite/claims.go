package sqlite

import (
	"context"
	"fmt"

	"github.com/heraldstreams/herald/store/sqlstore"
)

// Leases are in the rows, as in the PostgreSQL backend (the statements
// are sqlstore's): a delivery's lease, a consumer timer's, named leases
// and replay jobs'.
// One process owns the database (the lock file), so claims need no row
// locks: the writer runs one batch at a time. The lock also proves that
// the process which took the leases found in the rows at Open is gone, so
// Open ends them all: after a restart every unfinished delivery and every
// due timer is claimable at once, without waiting for a lease to end.

// endLeasesSQL ends every delivery lease, reading the index of leases.
const endLeasesSQL = `UPDATE deliveries SET lease_until = 0, lease_token = 0, lease_owner = '' WHERE ` + sqlstore.LeasedSQL

// startClaims reads the delivery id key and ends the leases of the
// previous process.
func (s *Store) startClaims(ctx context.Context) error {
	return execTx(ctx, s.wconn, func() error {
		if err := s.LoadDeliveryIDs(s.writerExec(ctx)); err != nil {
			return err
		}
		for _, q := range []string{
			endLeasesSQL,
			`UPDATE consumers SET timer_until = 0, timer_owner = '' WHERE timer_until > 0`,
			`DELETE FROM leases`,
			`DELETE FROM replicas`,
			// A replay job left running is claimable at the first sweep,
			// which with this store is the one search of the minute
			// (delivery/dispatch's exclusiveReplayClaim).
			`UPDATE replay_jobs SET lease_until = 0 WHERE state = 'running' AND lease_until > 0`,
		} {
			if _, err := s.wconn.ExecContext(ctx, q); err != nil {
				return fmt.Errorf("sqlite: end the previous process's leases: %w", err)
			}
		}
		return nil
	})
}

// Peers implements store.Store: one process owns the database.
func (s *Store) Peers() bool { return false }
