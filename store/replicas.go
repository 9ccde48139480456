package store

import (
	"context"
	"time"
)

// ReplicaStore keeps every handle's heartbeat (docs/operations.md,
// Replicas): a handle beats while it lives, and the claims it holds in
// the rows (delivery leases, consumer timers, named leases, every claim
// that records its holder) are ended at once when another handle finds
// its beat too old, instead of when each claim's own lease runs out.
//
// A lease still protects a slow but live holder, and fencing still holds
// for a holder declared dead: a released delivery lease has no token, so
// the late outcome of its old holder is not recorded (DeliveryComplete
// skips it) and the delivery is sent again by the one that claims it.
type ReplicaStore interface {
	// ReplicaID names this handle in its heartbeat and in the claims it
	// holds.
	ReplicaID() string
	// ReplicaBeat records that this handle is alive at params.Now.
	ReplicaBeat(ctx context.Context, params *ReplicaBeatParams) error
	// ReplicaReap finds the other handles whose last beat is before
	// params.Now less params.DeadAfter, ends every claim they hold and
	// forgets their heartbeat, in one transaction. A handle reaped while
	// alive beats again and takes new claims; the ones it lost are gone.
	ReplicaReap(ctx context.Context, params *ReplicaReapParams) (*ReplicaReapResult, error)
}

// ReplicaBeatParams are the inputs of ReplicaBeat.
type ReplicaBeatParams struct {
	Now time.Time
}

// ReplicaReapParams are the inputs of ReplicaReap.
type ReplicaReapParams struct {
	Now       time.Time
	DeadAfter time.Duration
}

// ReplicaReapResult is what ReplicaReap did.
type ReplicaReapResult struct {
	// Replicas are the handles found dead, by ID.
	Replicas []string
	// Released counts the claims ended (rows of every kind).
	Released int
}
