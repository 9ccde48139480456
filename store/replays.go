package store

import (
	"context"
	"errors"
	"time"
)

// ReplayStore keeps replay jobs: a replay re-delivers many events, so it
// runs in the background as a job whose progress is stored with the
// deliveries it queues (see DeliveryEnqueueParams.Job and
// DeliveryRequeueParams.Job). A job is held by one engine at a time
// through a lease it renews at every step; when the lease lapses (its
// engine stopped or died) another engine claims the job and resumes it
// from its stored progress. Every Store implements it.
type ReplayStore interface {
	// ReplayJobCreate stores a new running job, held by its Owner until
	// its LeaseUntil. ErrReplayJobExists when the ID is taken.
	ReplayJobCreate(ctx context.Context, job *ReplayJob) error
	// ReplayJobGet returns one job, or ErrReplayJobNotFound.
	ReplayJobGet(ctx context.Context, id string) (*ReplayJob, error)
	// ReplayJobUpdate applies an owner's change to a running job.
	// ErrReplayJobLost when the job is gone, finished or held by another
	// owner.
	ReplayJobUpdate(ctx context.Context, params *ReplayJobUpdateParams) error
	// ReplayJobClaim hands up to Limit running jobs whose lease ended at
	// or before Now to Owner, leased until LeaseUntil, oldest first.
	ReplayJobClaim(ctx context.Context, params *ReplayJobClaimParams) ([]ReplayJob, error)
}

// Errors of ReplayStore.
var (
	ErrReplayJobNotFound = errors.New("store: replay job not found")
	ErrReplayJobExists   = errors.New("store: replay job exists")
	ErrReplayJobLost     = errors.New("store: the replay job is no longer held by its owner")
)

// Replay job states.
const (
	ReplayRunning = "running"
	ReplayDone    = "done"
	ReplayFailed  = "failed"
)

// ReplayJob is a stored replay. Request and Progress are the engine's
// (JSON); the store keeps them as given.
type ReplayJob struct {
	ID         string
	EndpointID string
	// Tenant is the endpoint's when the job was made.
	Tenant    string
	Request   []byte
	State     string
	Queued    int
	Total     int
	Truncated bool
	Error     string
	Progress  []byte
	// Owner holds the job until LeaseUntil.
	Owner      string
	LeaseUntil time.Time
	CreatedAt  time.Time
	UpdatedAt  time.Time
	FinishedAt time.Time
}

// ReplayJobStep is a change its owner makes to a running job.
type ReplayJobStep struct {
	ID    string
	Owner string
	// AddTotal and AddQueued are added to the job's counts. With
	// DeliveryEnqueue and DeliveryRequeue the deliveries the call queued
	// are added to Queued as well.
	AddTotal  int
	AddQueued int
	// Progress replaces the stored progress unless empty.
	Progress   []byte
	LeaseUntil time.Time
	// State is ReplayRunning, or the state that finishes the job (with
	// Truncated and Error).
	State     string
	Truncated bool
	Error     string
}

// ReplayJobUpdateParams are the inputs of ReplayJobUpdate.
type ReplayJobUpdateParams struct {
	Step ReplayJobStep
	Now  time.Time
}

// ReplayJobClaimParams are the inputs of ReplayJobClaim.
type ReplayJobClaimParams struct {
	Owner      string
	LeaseUntil time.Time
	Limit      int
	Now        time.Time
}

// EventPlace is where an event id was first seen: the stream and the
// position its message starts at.
type EventPlace struct {
	Stream   string
	Position int64
}

// EventKey names an event id in its owner's space: event ids are unique
// per tenant ("" the platform), so the same ID of two tenants names two
// events.
type EventKey struct {
	Tenant string
	ID     string
}

// EventSighting is an event id of a tenant met at a position of the
// stream of a DeliveryEnqueue.
type EventSighting struct {
	Tenant   string
	EventID  string
	Position int64
	// EventType is the event's type, kept for the event log.
	EventType string
}

// DeliveryRequeueParams are the inputs of DeliveryRequeue.
type DeliveryRequeueParams struct {
	EndpointID string
	// IDs are the deliveries to requeue; those that are no longer of
	// Status are left as they are.
	IDs    []string
	Status string
	Now    time.Time
	// Job, when set, is stepped in the same transaction.
	Job *ReplayJobStep
}
