package postgres

import (
	"context"
	"fmt"

	"github.com/heraldstreams/herald/store"
	"github.com/heraldstreams/herald/store/internal/codec"
)

// Claims lock the rows they select with FOR UPDATE SKIP LOCKED (handles
// claiming at once take different rows instead of waiting), and the
// claims of one endpoint run one at a time on its bucket row (see
// codec.Claims).

// deliveryLock and consumerLock end the row selection of a claim.
const (
	deliveryLock = `FOR UPDATE OF d SKIP LOCKED`
	consumerLock = `FOR UPDATE SKIP LOCKED`
)

func newClaims(ids *codec.DeliveryIDs, owner string) *codec.Claims {
	return &codec.Claims{IDs: ids, Owner: owner, Lock: deliveryLock, Token: func(tx codec.ClaimTx) (int64, error) {
		var token int64
		err := tx.QueryRow(`SELECT nextval('delivery_lease_tokens')`).Scan(&token)
		return token, err
	}}
}

// Peers implements store.Store: replicas share the database.
func (s *Store) Peers() bool { return true }

// LeaseAcquire implements store.LeaseStore.
func (s *Store) LeaseAcquire(ctx context.Context, params *store.LeaseAcquireParams) (bool, error) {
	var held bool
	err := s.tx(ctx, func(tx *wtx) error {
		var err error
		if held, err = codec.AcquireLease(pgTx{ctx, tx, s}, params, s.owner, isNoRows); err != nil {
			return fmt.Errorf("postgres: take lease: %w", err)
		}
		return nil
	})
	return held, err
}

// ConsumerClaimDue implements store.SubscriptionStore.
func (s *Store) ConsumerClaimDue(ctx context.Context, params *store.ConsumerClaimDueParams) (*store.ConsumerClaimDueResult, error) {
	var res *store.ConsumerClaimDueResult
	err := s.tx(ctx, func(tx *wtx) error {
		var err error
		if res, err = codec.ClaimConsumers(pgTx{ctx, tx, s}, params, s.owner, consumerLock); err != nil {
			return fmt.Errorf("postgres: claim consumers: %w", err)
		}
		return nil
	})
	return res, err
}
