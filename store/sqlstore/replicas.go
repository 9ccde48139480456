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
}

// ClaimHolders are every kind of claim a replica takes: ReplicaReap ends
// those of a replica that stopped beating. A new kind of claim records
// its holder in a column and adds its row here; nothing else changes.
var ClaimHolders = []ClaimHolder{
	// A released delivery lease has no token: the late outcome of its
	// old holder is not recorded (CompleteSQL), the fencing of a lease
	// that ended.
	{Table: "deliveries", Owner: "lease_owner", Release: releaseLeaseSQL},
	// The timers of consumers of both kinds: a query-string
	// subscription's and a reserved-API subscription's.
	{Table: "consumers", Owner: "timer_owner", Release: releaseTimerSQL},
	{Table: "leases", Owner: "owner"},
}

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
			sql := `DELETE FROM ` + h.Table
			if h.Release != "" {
				sql = `UPDATE ` + h.Table + ` SET ` + h.Release
			}
			n, err := tx.Exec(sql+` WHERE `+h.Owner+` IN (`+deadSQL+`)`, before, s.owner)
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
	what, table, key, owner, until, release string
}

var (
	// ownLeases are the delivery leases, by lease token: the deliveries
	// of one claim share it.
	ownLeases = ownClaims{what: "leases", table: "deliveries", key: "lease_token", owner: "lease_owner", until: "lease_until", release: releaseLeaseSQL}
	// ownTimers are the consumers' timer claims, by consumer.
	ownTimers = ownClaims{what: "timers", table: "consumers", key: "id", owner: "timer_owner", until: "timer_until", release: releaseTimerSQL}
)

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
		err := tx.Query(`SELECT DISTINCT `+c.key+` FROM `+c.table+` WHERE `+c.owner+` = $1 AND `+c.until+` > $2 AND `+c.until+` < $3`,
			[]any{s.owner, n, b}, func(r Row) error {
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
			m, err := tx.Exec(`UPDATE `+c.table+` SET `+c.release+`
				WHERE `+c.owner+` = $1 AND `+c.key+` = $2 AND `+c.until+` > $3 AND `+c.until+` < $4`, s.owner, key, n, b)
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
