package sqlstore

import (
	"context"
	"slices"
	"time"

	"github.com/heraldstreams/herald/store"
)

// ClaimHolder is a kind of claim a replica holds in the rows of a table:
// the column that names its holder (a replica's ID), and how a claim
// ends (the assignments of an UPDATE, or the row's removal).
type ClaimHolder struct {
	Table, Owner string
	// Release assigns the columns of an ended claim; "" deletes the row.
	Release string
	// Held, when not "", are terms true of every row that holds a claim,
	// which make the database read the index of the claims held instead
	// of the whole table (deliveries: LeasedSQL).
	Held string
}

// ReapSQL ends the claims of the replicas that stopped beating before
// $1, other than $2 (the caller).
func (h *ClaimHolder) ReapSQL() string {
	sql := `DELETE FROM ` + h.Table
	if h.Release != "" {
		sql = `UPDATE ` + h.Table + ` SET ` + h.Release
	}
	return sql + ` WHERE ` + h.whereHeld(h.Owner+` IN (`+deadSQL+`)`)
}

// whereHeld is the condition of a statement on the claims held of a
// replica: its own terms, and h.Held.
func (h *ClaimHolder) whereHeld(cond string) string {
	if h.Held == "" {
		return cond
	}
	return cond + ` AND ` + h.Held
}

// ClaimHolders are every kind of claim a replica takes: ReplicaReap ends
// those of a replica that stopped beating. A new kind of claim records
// its holder in a column and adds its row here; nothing else changes.
var ClaimHolders = []ClaimHolder{deliveryLeases, consumerTimers, {Table: "leases", Owner: "owner"}}

var (
	// A released delivery lease has no token: the late outcome of its
	// old holder is not recorded (CompleteSQL), the fencing of a lease
	// that ended.
	deliveryLeases = ClaimHolder{Table: "deliveries", Owner: "lease_owner", Release: releaseLeaseSQL, Held: LeasedSQL}
	// The timers of consumers of both kinds: a query-string
	// subscription's and a reserved-API subscription's.
	consumerTimers = ClaimHolder{Table: "consumers", Owner: "timer_owner", Release: releaseTimerSQL}
)

// releaseLeaseSQL ends a delivery's lease.
const releaseLeaseSQL = "lease_until = 0, lease_token = 0, lease_owner = ''"

// releaseTimerSQL ends a consumer's timer claim.
const releaseTimerSQL = "timer_until = 0, timer_owner = ''"

// deadSQL selects the replicas that stopped beating before $1, other
// than $2 (the caller).
const deadSQL = `SELECT id FROM replicas WHERE beat_at < $1 AND id <> $2`

// ReplicaID implements store.ReplicaStore.
func (s *Store) ReplicaID() string { return s.owner }

// ReplicaBeat implements store.ReplicaStore. It is relaxed: a lost beat
// is made again a moment later.
func (s *Store) ReplicaBeat(ctx context.Context, params *store.ReplicaBeatParams) error {
	return s.write(ctx, Relaxed, func(tx Tx) error {
		_, err := tx.Exec(`INSERT INTO replicas (id, beat_at, started_at) VALUES ($1, $2, $2)
			ON CONFLICT (id) DO UPDATE SET beat_at = excluded.beat_at`, s.owner, Nanos(params.Now))
		if err != nil {
			return s.errorf("beat", err)
		}
		return nil
	})
}

// ReplicaReap implements store.ReplicaStore: the dead replicas' rows are
// locked first (a beat that comes meanwhile waits, then finds its row
// gone and makes it again), then every ClaimHolder's claims of them end.
func (s *Store) ReplicaReap(ctx context.Context, params *store.ReplicaReapParams) (*store.ReplicaReapResult, error) {
	res := &store.ReplicaReapResult{}
	before := Nanos(params.Now.Add(-params.DeadAfter))
	err := s.write(ctx, Relaxed, func(tx Tx) error {
		res.Replicas, res.Released = nil, 0
		err := tx.Query(deadSQL+` ORDER BY id `+s.d.ForUpdate, []any{before, s.owner}, func(r Row) error {
			var id string
			err := r.Scan(&id)
			res.Replicas = append(res.Replicas, id)
			return err
		})
		if err != nil {
			return s.errorf("find dead replicas", err)
		}
		if len(res.Replicas) == 0 {
			return nil
		}
		for _, h := range ClaimHolders {
			n, err := tx.Exec(h.ReapSQL(), before, s.owner)
			if err != nil {
				return s.errorf("release the claims of "+h.Table, err)
			}
			res.Released += int(n)
		}
		if _, err := tx.Exec(`DELETE FROM replicas WHERE id IN (`+deadSQL+`)`, before, s.owner); err != nil {
			return s.errorf("forget dead replicas", err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return res, nil
}

// DeliveryReleaseOwn implements store.DeliveryStore: the leases are
// released by their token (ownLeases).
func (s *Store) DeliveryReleaseOwn(ctx context.Context, params *store.DeliveryReleaseOwnParams) (int, error) {
	return releaseOwn(ctx, s, ownLeases, params.Keep, params.Now, params.Before)
}

// ConsumerReleaseOwn implements store.SubscriptionStore: the timers are
// released by their consumer (ownTimers).
func (s *Store) ConsumerReleaseOwn(ctx context.Context, params *store.ConsumerReleaseOwnParams) (int, error) {
	return releaseOwn(ctx, s, ownTimers, params.Keep, params.Now, params.Before)
}

// ownClaims names the columns of one kind of claim that a live replica
// releases when a write that took some lost its answer.
type ownClaims struct {
	what, key, until string
	ClaimHolder
}

var (
	// ownLeases are the delivery leases, by lease token: the deliveries
	// of one claim share it.
	ownLeases = ownClaims{what: "leases", key: "lease_token", until: "lease_until", ClaimHolder: deliveryLeases}
	// ownTimers are the consumers' timer claims, by consumer.
	ownTimers = ownClaims{what: "timers", key: "id", until: "timer_until", ClaimHolder: consumerTimers}
)

// findSQL selects the keys of the handle's ($1) claims running at $2
// that end before $3.
func (c *ownClaims) findSQL() string {
	return `SELECT DISTINCT ` + c.key + ` FROM ` + c.Table + ` WHERE ` +
		c.whereHeld(c.Owner+` = $1 AND `+c.until+` > $2 AND `+c.until+` < $3`)
}

// releaseSQL ends the handle's ($1) claims of one key ($2) running at
// $3 that end before $4.
func (c *ownClaims) releaseSQL() string {
	return `UPDATE ` + c.Table + ` SET ` + c.Release + ` WHERE ` +
		c.whereHeld(c.Owner+` = $1 AND `+c.key+` = $2 AND `+c.until+` > $3 AND `+c.until+` < $4`)
}

// OwnLeasesSQL are the statements of DeliveryReleaseOwn: the tokens of
// the handle's leases it may release, and the release of one token's.
var OwnLeasesSQL = [2]string{ownLeases.findSQL(), ownLeases.releaseSQL()}

// releaseOwn ends this handle's running claims of kind c that end
// before before, but those whose key is kept: their keys are read
// (through the index on the holder), and each key's claims end in a
// statement fenced by the holder and the bound again.
func releaseOwn[K comparable](ctx context.Context, s *Store, c ownClaims, keep []K, now, before time.Time) (int, error) {
	released := 0
	n, b := Nanos(now), Nanos(before)
	err := s.write(ctx, Relaxed, func(tx Tx) error {
		released = 0
		var keys []K
		err := tx.Query(c.findSQL(), []any{s.owner, n, b}, func(r Row) error {
			var key K
			err := r.Scan(&key)
			if !slices.Contains(keep, key) {
				keys = append(keys, key)
			}
			return err
		})
		if err != nil {
			return s.errorf("find own "+c.what, err)
		}
		for _, key := range keys {
			m, err := tx.Exec(c.releaseSQL(), s.owner, key, n, b)
			if err != nil {
				return s.errorf("release own "+c.what, err)
			}
			released += int(m)
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	return released, nil
}
