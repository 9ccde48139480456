package sqlstore

import (
	"context"

	"github.com/heraldstreams/herald/store"
)

// Leases are in the rows, in every backend: a delivery's lease, a
// consumer timer's and named leases, taken with the claim statements (claims.go). A
// backend whose handles write at once locks the rows a claim selects
// (Dialect.SkipLocked); one whose writer runs alone needs no lock.

// LeaseAcquire implements store.LeaseStore. It is relaxed: a lost lease
// is taken again.
func (s *Store) LeaseAcquire(ctx context.Context, params *store.LeaseAcquireParams) (bool, error) {
	var held bool
	err := s.write(ctx, Relaxed, func(tx Tx) error {
		var err error
		if held, err = AcquireLease(tx, params, s.owner, s.d.IsNoRows); err != nil {
			return s.errorf("take lease", err)
		}
		return nil
	})
	return held, err
}

// ConsumerClaimDue implements store.SubscriptionStore. It is relaxed: a
// lost claim is taken again.
func (s *Store) ConsumerClaimDue(ctx context.Context, params *store.ConsumerClaimDueParams) (*store.ConsumerClaimDueResult, error) {
	var res *store.ConsumerClaimDueResult
	err := s.write(ctx, Relaxed, func(tx Tx) error {
		var err error
		if res, err = ClaimConsumers(tx, params, s.owner, s.d.SkipLocked); err != nil {
			return s.errorf("claim consumers", err)
		}
		return nil
	})
	return res, err
}
