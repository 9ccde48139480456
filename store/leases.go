package store

import (
	"context"
	"time"
)

// LeaseStore keeps named leases: a job that one handle on the database
// runs at a time (the reaper's sweep) holds one, renews it while it runs,
// and another handle takes it over when it ends (its holder died).
type LeaseStore interface {
	// LeaseAcquire takes or renews the lease params.Name for this handle
	// until params.Now+params.TTL, when it is free (never taken, ended at
	// params.Now, or already this handle's), and reports whether this
	// handle holds it.
	LeaseAcquire(ctx context.Context, params *LeaseAcquireParams) (bool, error)
}

// LeaseAcquireParams are the inputs of LeaseAcquire.
type LeaseAcquireParams struct {
	Name string
	TTL  time.Duration
	Now  time.Time
}
