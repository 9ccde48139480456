package store

import (
	"context"
	"errors"
	"time"
)

// DeliveryStore is the part of the contract that keeps event delivery
// (docs/delivery.md): endpoints, per-(endpoint, stream) cursors, deliveries
// and their attempts, and the ids of events published through the API.
// Every Store implements it.
//
// The store holds no delivery rule: the engine decides (filters, retry
// schedule, breaker) and the store applies its decisions atomically, by
// compare-and-set where two writers could race:
//
//   - DeliveryEnqueue inserts deliveries and advances the endpoints'
//     cursors in one transaction, each cursor by compare-and-set, so an
//     event is either behind the cursor with its delivery stored, or ahead
//     of it and matched again after a crash: never skipped.
//   - DeliveryClaim leases due deliveries, and DeliveryEnqueue can insert
//     deliveries already leased to the caller (a sender with free slots
//     takes fresh events without a claim). Leases are in the rows (their
//     end, token and owner), so every handle on the database sees them.
//     A delivery whose lease ends (its sender died) can be claimed
//     again, and DeliveryComplete only applies results whose lease token
//     is still current.
//   - An endpoint's max_in_flight and rate_limit hold across every handle
//     on the database together: the claim (and a leased insert) counts
//     the endpoint's running leases and takes tokens from its rate bucket,
//     a row of the database, while holding that row, so claims of one
//     endpoint run one at a time.
//   - Endpoint configuration (Version) and breaker state (HealthVersion)
//     change by separate compare-and-sets, so an owner's PATCH and the
//     engine's breaker never overwrite each other.
//
// DeliveryEnqueue (without Replay), DeliveryClaim and DeliveryComplete
// record work that is redone if they are lost (a delivery is sent again),
// so a store may commit them without waiting for the disk, as long as a
// crash of the process loses none of them and a machine crash loses only
// a suffix of them (never one that a later durable write depends on).
type DeliveryStore interface {
	ReplayStore
	EventLogStore

	// EndpointCreate stores a new endpoint and, in the same transaction,
	// sets its cursor on every existing stream to the stream's tail: an
	// endpoint receives the events appended after it was created.
	// ErrEndpointExists when the ID is taken.
	EndpointCreate(ctx context.Context, params *EndpointCreateParams) (*Endpoint, error)
	// EndpointGet returns one endpoint, or ErrEndpointNotFound.
	EndpointGet(ctx context.Context, id string) (*Endpoint, error)
	// EndpointList returns endpoints ordered by ID, after params.After,
	// at most params.Limit (0: all), of params.Tenant when not "", of
	// params.Status (see Endpoint.Status) when not "".
	EndpointList(ctx context.Context, params *EndpointListParams) ([]Endpoint, error)
	// EndpointUpdate replaces an endpoint's configuration (and secrets)
	// when its Version is still params.ExpectVersion, and returns the
	// stored endpoint. With ResetHealth it also closes the breaker
	// (failures 0, not disabled). Streams that have no cursor of the
	// endpoint get one at their tail, so widening the stream patterns
	// does not deliver the past. ErrEndpointNotFound, ErrEndpointConflict.
	EndpointUpdate(ctx context.Context, params *EndpointUpdateParams) (*Endpoint, error)
	// EndpointDelete removes an endpoint with its cursors, deliveries,
	// attempts and replay jobs. ErrEndpointNotFound when absent.
	EndpointDelete(ctx context.Context, id string) error
	// EndpointCount returns how many endpoints are "active", "paused",
	// "pending" and "disabled" (see Endpoint.Status).
	EndpointCount(ctx context.Context) (map[string]int, error)

	// DeliveryCursors returns the cursors of every endpoint on a stream.
	DeliveryCursors(ctx context.Context, params *DeliveryCursorsParams) ([]DeliveryCursor, error)
	// EventIDSpans returns the id spans of a stream (see EventIDSpan)
	// that end at or after From and start before To, by Start.
	EventIDSpans(ctx context.Context, params *EventIDSpansParams) ([]EventIDSpan, error)
	// DeliveryEnqueue inserts deliveries and advances cursors in one
	// transaction, writing the id spans their event ids came from first.
	// A delivery whose (EndpointID, EventTenant, EventID) exists is left as
	// it is, unless Replay is set and it is finished (delivered or
	// exhausted): then it is pending again with a fresh schedule. A new
	// delivery with a LeaseUntil is inserted leased until then and
	// returned in Leased with its lease token, as far as the endpoint's
	// Limits allow (the rest are inserted pending, for a claim). A cursor
	// whose stored state is not the expected one fails the whole call
	// with ErrCursorConflict and nothing is written; so does a span that
	// would overlap a stored one, an extension of a span that is no
	// longer as read, or a sighting of an event id first seen elsewhere.
	// A Job is stepped in the same transaction (ErrReplayJobLost when it
	// is no longer the caller's, and nothing is written).
	DeliveryEnqueue(ctx context.Context, params *DeliveryEnqueueParams) (*DeliveryEnqueueResult, error)
	// DeliveryClaim leases up to Limit due deliveries of one endpoint
	// (pending or failed, NextAttemptAt at or before Now, no lease running
	// at Now), earliest first, if the endpoint is active, not disabled and
	// not awaiting verification.
	// They are returned by Seq. With ordering "stream" only the
	// earliest unfinished delivery of each stream can be claimed. The
	// claim keeps within params.DeliveryLimits across every handle on
	// the database. The result also says when the endpoint's next
	// delivery falls due, how many of its leases run, and when a rate
	// limit that held the claim back allows more.
	DeliveryClaim(ctx context.Context, params *DeliveryClaimParams) (*DeliveryClaimResult, error)
	// DeliveryComplete records attempts and their outcomes, and stores the
	// endpoint's breaker state when its HealthVersion is still
	// params.ExpectHealthVersion, all in one transaction. Results whose
	// lease token is no longer current (the lease ended and the delivery
	// may be claimed again) are skipped, and their leases stay.
	// ErrEndpointNotFound, ErrEndpointConflict (nothing is written).
	DeliveryComplete(ctx context.Context, params *DeliveryCompleteParams) (*DeliveryCompleteResult, error)
	// DeliveryGet returns one delivery with its body, or
	// ErrDeliveryNotFound.
	DeliveryGet(ctx context.Context, id string) (*Delivery, error)
	// DeliveryList returns an endpoint's deliveries, newest first (by
	// Seq), without bodies, filtered by params.
	DeliveryList(ctx context.Context, params *DeliveryListParams) ([]Delivery, error)
	// DeliveryCount returns how many deliveries of an endpoint pass the
	// filters of params (Before and Limit are ignored).
	DeliveryCount(ctx context.Context, params *DeliveryListParams) (int, error)
	// DeliveryAttempts returns a delivery's attempts, oldest first.
	DeliveryAttempts(ctx context.Context, deliveryID string) ([]DeliveryAttempt, error)
	// DeliveryRecentAttempts returns an endpoint's latest attempts,
	// newest first, without their response bodies: at most params.Limit,
	// among the attempts of its params.Limit newest deliveries (so the
	// cost is bounded whatever the endpoint's history).
	DeliveryRecentAttempts(ctx context.Context, params *RecentAttemptsParams) ([]DeliveryAttempt, error)
	// DeliveryRequeue makes the deliveries of params.IDs that are of the
	// endpoint and still of params.Status pending and due at Now with a
	// fresh schedule (as DeliveryRetry), and returns how many. The Job is
	// stepped in the same transaction (ErrReplayJobLost, nothing written).
	DeliveryRequeue(ctx context.Context, params *DeliveryRequeueParams) (int, error)
	// EventIDsSeen returns where each of keys was first seen, by
	// EventPublish or a sighting of DeliveryEnqueue; ids never seen in
	// their key's tenant (or pruned) are absent. Event ids are unique per
	// tenant: the same id seen in another tenant is another event.
	EventIDsSeen(ctx context.Context, keys []EventKey) (map[EventKey]EventPlace, error)
	// DeliveryRetry makes a delivery pending and due at Now with a fresh
	// schedule, whatever its status; a delivery in flight stays leased
	// (claimable when its lease ends without an outcome).
	// ErrDeliveryNotFound.
	DeliveryRetry(ctx context.Context, params *DeliveryRetryParams) (*Delivery, error)
	// DeliveryPrune removes finished deliveries (with their attempts),
	// finished replay jobs, and seen event ids, older than params.Before; at most
	// params.Limit deliveries per call. It also removes the id spans of
	// up to params.Limit streams that no longer exist. It returns how many deliveries it
	// removed.
	DeliveryPrune(ctx context.Context, params *DeliveryPruneParams) (int, error)
	// DeliveryBacklog returns, per endpoint ID, how many deliveries are
	// unfinished (pending or failed). Endpoints with none are absent.
	DeliveryBacklog(ctx context.Context) (map[string]int, error)
	// DeliveryReleaseOwn ends the delivery leases this handle holds (its
	// ReplicaID is their owner) that run at params.Now and end before
	// params.Before, except those whose token is in params.Keep, and
	// returns how many it ended. A live replica whose write that takes
	// leases failed (a claim, a leased DeliveryEnqueue) cannot tell
	// whether the database committed it before its answer was lost: it
	// calls this with the tokens of the leases it is sending on, and the
	// ones it does not know of are claimable at once instead of when
	// they end. A released lease has no token, so a late outcome of it
	// is not recorded (the fencing of ReplicaReap).
	DeliveryReleaseOwn(ctx context.Context, params *DeliveryReleaseOwnParams) (int, error)

	// EventPublish appends one event (a framed JSON message) to a stream,
	// creating the stream (application/json) when missing, and records
	// its ID in its tenant, in one transaction. An ID recorded before in
	// the same tenant (published, or sighted by DeliveryEnqueue) is not
	// appended again: the result is where it was first seen, with
	// Duplicate set. The same ID recorded in another tenant is another
	// event.
	// Errors: those of StreamAppend.
	EventPublish(ctx context.Context, params *EventPublishParams) (*EventPublishResult, error)
}

// Errors of DeliveryStore.
var (
	ErrEndpointNotFound = errors.New("store: endpoint not found")
	ErrEndpointExists   = errors.New("store: endpoint exists")
	ErrEndpointConflict = errors.New("store: endpoint changed since it was read")
	ErrCursorConflict   = errors.New("store: delivery cursor moved since it was read")
	ErrDeliveryNotFound = errors.New("store: delivery not found")
	ErrInvalidCursor    = errors.New("store: not a cursor of this list")
)

// Delivery statuses.
const (
	DeliveryPending   = "pending"
	DeliveryFailed    = "failed" // retrying
	DeliveryDelivered = "delivered"
	DeliveryExhausted = "exhausted" // dead letter
)

// Endpoint statuses (see Endpoint.Status).
const (
	EndpointActive   = "active"
	EndpointPaused   = "paused"
	EndpointDisabled = "disabled"
	// EndpointPending: the endpoint must prove it owns its URL first.
	EndpointPending = "pending"
)

// Endpoint is a stored delivery endpoint. The store keeps the
// configuration as given; the delivery package validates it.
type Endpoint struct {
	ID string
	// Type is the destination type ("webhook", "nats" or "kafka"; ""
	// reads as "webhook").
	Type string
	URL  string
	// Destination is a broker endpoint's config (JSON, credentials
	// included: the store seals it at rest); nil for a webhook.
	Destination   []byte
	Name          string
	EventTypes    []string
	Streams       []string
	Filter        []byte // JSON, nil when none
	Description   string
	Tenant        string
	Active        bool
	RateLimit     float64
	MaxInFlight   int
	Ordering      string
	RetrySchedule []time.Duration
	Headers       map[string]string
	// Profile names the wire format, FailurePolicy which answers are
	// final; "" means the installation's default of each.
	Profile       string
	FailurePolicy string
	// Timeout bounds one attempt; 0 means the installation's timeout.
	Timeout time.Duration
	// BatchMaxEvents, when 2 or more, sends up to that many deliveries in
	// one POST; BatchMaxWait is how long a batch waits to fill. 0: one
	// event per POST.
	BatchMaxEvents int
	BatchMaxWait   time.Duration
	Verification   EndpointVerification
	// Secret signs; PreviousSecret signs too until PreviousSecretUntil
	// (a rotation's overlap).
	Secret              string
	PreviousSecret      string
	PreviousSecretUntil time.Time
	Health              EndpointHealth
	CreatedAt           time.Time
	UpdatedAt           time.Time
	// Version increases with every configuration change.
	Version int64
	// HealthVersion increases with every change of Health.
	HealthVersion int64
}

// EndpointVerification is an endpoint's proof of owning its URL.
type EndpointVerification struct {
	// Required: the endpoint receives nothing until VerifiedAt is set.
	Required   bool
	VerifiedAt time.Time
	// CodeHash is the SHA-256 (hex) of the code of the last challenge
	// sent, "" when none is outstanding.
	CodeHash string
	SentAt   time.Time
	// Error says why the last verification failed.
	Error string
}

// Pending reports whether the endpoint waits for its verification.
func (v *EndpointVerification) Pending() bool { return v.Required && v.VerifiedAt.IsZero() }

// Status is "disabled" when the breaker tripped, else "pending" while the
// endpoint awaits verification, else "active" or "paused".
func (e *Endpoint) Status() string {
	switch {
	case !e.Health.DisabledAt.IsZero():
		return EndpointDisabled
	case e.Verification.Pending():
		return EndpointPending
	case e.Active:
		return EndpointActive
	}
	return EndpointPaused
}

// EndpointHealth is an endpoint's circuit breaker state.
type EndpointHealth struct {
	ConsecutiveFailures int
	LastSuccessAt       time.Time
	LastFailureAt       time.Time
	LastError           string
	DisabledAt          time.Time
	DisabledReason      string
}

// DeliveryCursor is how far the engine has matched one stream for one
// endpoint: every message before Position has its deliveries stored.
// StreamID tells a re-created stream from the one the cursor was for.
type DeliveryCursor struct {
	EndpointID string
	Stream     string
	StreamID   int64
	Position   int64
}

// EventIDSpan names the events of a range of a stream's positions,
// [Start, End), that were appended without an id: the event whose message
// starts at position p gets "evt_<Nonce>_<p>". Nonce is random and stored,
// so an id is the same at every match, replay and restart, differs from
// every other installation's, and a restored backup names the positions
// appended after it anew (they fall in a new span). Only the process run
// that created a span (Run) extends it; a span of an empty Nonce names
// events the way Herald did before spans ("evt_<StreamID>_<p>").
type EventIDSpan struct {
	StreamID   int64
	Start, End int64
	Nonce      string
	Run        string
}

// EventIDSpansParams are the inputs of EventIDSpans.
type EventIDSpansParams struct {
	StreamID int64
	From, To int64
}

// EventIDSpanWrite is a span to store: inserted when ExtendFrom is 0, or
// the stored span at Span.Start of the same Run and End ExtendFrom grown
// to Span.End.
type EventIDSpanWrite struct {
	Span       EventIDSpan
	ExtendFrom int64
}

// Delivery is one event for one endpoint.
type Delivery struct {
	// ID is assigned by the store when the delivery is inserted
	// (DeliveryEnqueue ignores it).
	ID         string
	EndpointID string
	EventID    string
	// EventTenant is the tenant of the event ("" the platform's): event
	// ids are unique per tenant, so an endpoint that receives several
	// tenants' events has one delivery per (EventTenant, EventID).
	EventTenant string
	EventType   string
	Stream      string
	// Position is where the event's message starts in the stream.
	Position int64
	// Body is the exact JSON POSTed (not filled by DeliveryList).
	Body []byte
	// TraceParent is the W3C traceparent of the match that made the
	// delivery ("" when not traced), so every attempt, on any replica,
	// joins the trace of the publish or append.
	TraceParent string
	// BatchID is the batch the delivery was last sent in ("" when none):
	// a retry of the batch keeps it.
	BatchID string
	Status  string
	// Attempts counts every attempt; RoundAttempts those since the last
	// (re)start of the schedule (retry, replay), which the schedule uses.
	Attempts      int
	RoundAttempts int
	// NextAttemptAt is when the delivery falls due (again).
	NextAttemptAt time.Time
	// LeaseUntil is when the current lease ends (zero: not leased). Given
	// to DeliveryEnqueue, it asks for the delivery to be inserted leased.
	LeaseUntil time.Time
	LeaseToken int64
	// LeaseOwner is the ReplicaID of the replica that holds the lease
	// ("" when none): read back, never written by the caller.
	LeaseOwner     string
	LastStatusCode int
	LastError      string
	CreatedAt      time.Time
	UpdatedAt      time.Time
	FinishedAt     time.Time
	// Seq orders deliveries by insertion (the list cursor).
	Seq int64
}

// DeliveryAttempt is one recorded attempt.
type DeliveryAttempt struct {
	ID         int64
	DeliveryID string
	At         time.Time
	// StatusCode is 0 when no response came (network error).
	StatusCode   int
	ResponseBody []byte
	Latency      time.Duration
	Error        string
	// BatchID is the batch the attempt sent the delivery in ("": alone).
	// DeliveryComplete stores it as the delivery's BatchID too.
	BatchID string
}

// EndpointCreateParams are the inputs of EndpointCreate.
type EndpointCreateParams struct {
	Endpoint Endpoint
	Now      time.Time
}

// EndpointListParams are the inputs of EndpointList.
type EndpointListParams struct {
	After  string
	Limit  int
	Tenant string
	// Status is EndpointActive, EndpointPaused, EndpointPending,
	// EndpointDisabled, or "" for any.
	Status string
}

// EndpointUpdateParams are the inputs of EndpointUpdate.
type EndpointUpdateParams struct {
	Endpoint      Endpoint // Health and the versions are ignored
	ExpectVersion int64
	ResetHealth   bool
	Now           time.Time
}

// DeliveryCursorsParams are the inputs of DeliveryCursors.
type DeliveryCursorsParams struct {
	Stream string
}

// CursorAdvance moves one cursor: from the expected state (Found false:
// no cursor yet) to the new one.
type CursorAdvance struct {
	EndpointID string
	// Found, ExpectStreamID and ExpectPosition are the state read.
	Found          bool
	ExpectStreamID int64
	ExpectPosition int64
	StreamID       int64
	Position       int64
}

// DeliveryEnqueueParams are the inputs of DeliveryEnqueue.
type DeliveryEnqueueParams struct {
	Stream string
	// Spans are the id spans the deliveries' event ids came from that are
	// not stored yet.
	Spans      []EventIDSpanWrite
	Cursors    []CursorAdvance
	Deliveries []Delivery
	// Sightings are event ids met in the stream, recorded as seen (as
	// EventPublish records the ids it publishes) unless they were seen at
	// the same place before.
	Sightings []EventSighting
	Replay    bool
	// Limits are the limits of the endpoints whose deliveries are given
	// with a LeaseUntil, by endpoint ID (absent: no limit).
	Limits map[string]DeliveryLimits
	Now    time.Time
	// Job, when set, is stepped with the deliveries it queued.
	Job *ReplayJobStep
}

// DeliveryEnqueueResult is the output of DeliveryEnqueue.
type DeliveryEnqueueResult struct {
	// Queued counts deliveries inserted, or made pending again by a
	// replay.
	Queued int
	// Leased are the deliveries inserted leased (those given with a
	// LeaseUntil that were new), with their ID, Seq and LeaseToken.
	Leased []Delivery
}

// DeliveryLimits are an endpoint's limits, which hold across every
// handle on the database together.
type DeliveryLimits struct {
	// MaxInFlight bounds the endpoint's running leases: a claim takes no
	// more than MaxInFlight less the leases running at Now. 0: no bound.
	MaxInFlight int
	// Rate is the endpoint's rate limit in deliveries a second, a token
	// bucket kept in the database (a tenth of a second's worth of burst,
	// at least 1): every delivery leased takes a token. 0: no limit.
	Rate float64
	// Batch, when above 1, is how many deliveries one POST carries: then
	// MaxInFlight and Rate count POSTs, MaxInFlight bounding the running
	// leases to MaxInFlight*Batch and a token leasing up to Batch
	// deliveries.
	Batch int
}

// DeliveryClaimParams are the inputs of DeliveryClaim.
type DeliveryClaimParams struct {
	EndpointID string
	Limit      int
	Lease      time.Duration
	DeliveryLimits
	// Hold, with a Batch, lets a batch fill: while fewer than Batch
	// deliveries that were never sent in a batch are due, none that was
	// is, and the earliest due fell due less than Hold before Now, the
	// claim takes nothing and NextDueAt is when the hold ends.
	Hold time.Duration
	Now  time.Time
}

// DeliveryClaimResult is the output of DeliveryClaim.
type DeliveryClaimResult struct {
	// Deliveries are leased until Now+Lease, with their new LeaseToken.
	Deliveries []Delivery
	// NextDueAt is the earliest time after Now at which an unfinished
	// delivery of the endpoint falls due or its lease ends; zero when
	// none.
	NextDueAt time.Time
	// InFlight counts the endpoint's leases running after the claim,
	// whichever handle holds them (with a Batch, in POSTs: the leases
	// divided by Batch, rounded up).
	InFlight int
	// RetryAt is set when the rate limit held the claim below Limit: the
	// time the endpoint's bucket holds a token again.
	RetryAt time.Time
}

// DeliveryResult is the outcome of one attempt.
type DeliveryResult struct {
	DeliveryID string
	LeaseToken int64
	Attempt    DeliveryAttempt
	// Status is DeliveryDelivered, DeliveryFailed (retry at NextAttemptAt)
	// or DeliveryExhausted.
	Status        string
	NextAttemptAt time.Time
}

// DeliveryCompleteParams are the inputs of DeliveryComplete.
type DeliveryCompleteParams struct {
	EndpointID          string
	Results             []DeliveryResult
	Health              EndpointHealth
	ExpectHealthVersion int64
	Now                 time.Time
}

// DeliveryCompleteResult is the output of DeliveryComplete.
type DeliveryCompleteResult struct {
	HealthVersion int64
	// Applied counts the results applied (not stale).
	Applied int
}

// DeliveryListParams are the inputs of DeliveryList.
type DeliveryListParams struct {
	EndpointID string
	Status     string // "" for any
	EventType  string // "" for any
	// Since and Until bound CreatedAt (zero: unbounded): Since <=
	// CreatedAt < Until.
	Since, Until time.Time
	// Before pages: only deliveries inserted before the delivery of this
	// ID ("": from the newest). An ID the store did not give is
	// ErrInvalidCursor.
	Before string
	Limit  int
}

// RecentAttemptsParams are the inputs of DeliveryRecentAttempts.
type RecentAttemptsParams struct {
	EndpointID string
	Limit      int
}

// DeliveryRetryParams are the inputs of DeliveryRetry.
type DeliveryRetryParams struct {
	ID  string
	Now time.Time
}

// DeliveryPruneParams are the inputs of DeliveryPrune.
type DeliveryPruneParams struct {
	Before time.Time
	Limit  int
}

// DeliveryReleaseOwnParams are the inputs of DeliveryReleaseOwn.
type DeliveryReleaseOwnParams struct {
	// Keep are the lease tokens of the leases the caller sends on.
	Keep []int64
	// Before bounds the leases released: one that ends at or after it
	// is kept, whatever its token. Leases end at their claim's Now plus
	// its Lease, so Before (the earliest Now of the claims still under
	// way, plus the Lease) keeps every lease taken by a claim whose
	// answer is still to come.
	Before time.Time
	Now    time.Time
}
