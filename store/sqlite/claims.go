package sqlite

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"

	"github.com/heraldstreams/herald/store"
	"github.com/heraldstreams/herald/store/internal/codec"
)

// Leases are in the rows, as in the PostgreSQL backend (the statements
// are codec's): a delivery's lease, a consumer timer's, and named leases.
// One process owns the database (the lock file), so claims need no row
// locks: the writer runs one batch at a time. The lock also proves that
// the process which took the leases found in the rows at Open is gone, so
// Open ends them all: after a restart every unfinished delivery and every
// due timer is claimable at once, without waiting for a lease to end.

// startClaims names this process and ends the leases of the previous one.
func (s *Store) startClaims(ctx context.Context) error {
	owner := make([]byte, 8)
	if _, err := rand.Read(owner); err != nil {
		return fmt.Errorf("sqlite: process id: %w", err)
	}
	s.owner = hex.EncodeToString(owner)
	s.claims = &codec.Claims{IDs: s.ids, Owner: s.owner, Token: func(tx codec.ClaimTx) (int64, error) {
		var token int64
		err := tx.QueryRow(`UPDATE lease_tokens SET last = last + 1 WHERE id = 1 RETURNING last`).Scan(&token)
		return token, err
	}}
	return execTx(ctx, s.wconn, func() error {
		for _, q := range []string{
			`UPDATE deliveries SET lease_until = 0, lease_token = 0, lease_owner = '' WHERE lease_until > 0`,
			`UPDATE consumers SET timer_until = 0, timer_owner = '' WHERE timer_until > 0`,
			`DELETE FROM leases`,
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

// LeaseAcquire implements store.LeaseStore.
func (s *Store) LeaseAcquire(ctx context.Context, params *store.LeaseAcquireParams) (bool, error) {
	var held bool
	err := s.writeRelaxed(ctx, func(b *batch) error {
		var err error
		if held, err = codec.AcquireLease(txOf(b), params, s.owner, isNoRows); err != nil {
			return fmt.Errorf("take lease: %w", err)
		}
		return nil
	})
	return held, err
}

// ConsumerClaimDue implements store.SubscriptionStore.
func (s *Store) ConsumerClaimDue(ctx context.Context, params *store.ConsumerClaimDueParams) (*store.ConsumerClaimDueResult, error) {
	var res *store.ConsumerClaimDueResult
	err := s.writeRelaxed(ctx, func(b *batch) error {
		var err error
		if res, err = codec.ClaimConsumers(txOf(b), params, s.owner, ""); err != nil {
			return fmt.Errorf("claim consumers: %w", err)
		}
		return nil
	})
	return res, err
}
