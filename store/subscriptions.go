package store

import (
	"context"
	"errors"
	"time"
)

// SubscriptionStore is the part of the contract that keeps webhook
// subscriptions (docs/subscriptions.md) and their consumer instances:
// the consumers of both subscription models (Consumer.Kind), a reserved-API
// subscription being one consumer (DSSubscriptionStore creates it). Every
// Store implements it.
//
// Consumers change by compare-and-set: ConsumerUpdate and ConsumerDelete
// take the Version the caller read and fail with ErrConsumerConflict when
// another writer (another request, another replica) changed the row since.
// Every deadline of a consumer is a column, and DueAt (the earliest of them)
// is indexed, so any replica can fire any timer after a restart. A due
// timer is claimed (ConsumerClaimDue leases it in the consumer's row), so
// one replica fires it; a replica that dies holding the lease leaves the
// timer to the others when the lease ends.
type SubscriptionStore interface {
	// SubscriptionCreate stores a subscription together with the initial
	// (IDLE) consumers of the streams that already match it, in one
	// transaction: params.Spawn makes them from the streams as the
	// transaction sees them. An existing subscription with the same ID and
	// the same tenant, pattern, webhook and description is returned with
	// Created false (and no consumers are added); another configuration,
	// or another owner, is ErrSubscriptionExists.
	SubscriptionCreate(ctx context.Context, params *SubscriptionCreateParams) (*SubscriptionCreateResult, error)
	// SubscriptionGet returns one subscription, or ErrSubscriptionNotFound.
	SubscriptionGet(ctx context.Context, id string) (*Subscription, error)
	// SubscriptionList returns subscriptions ordered by ID: all of them, or
	// those whose canonical pattern is params.Pattern, of every owner or of
	// params.Tenant only.
	SubscriptionList(ctx context.Context, params *SubscriptionListParams) ([]Subscription, error)
	// SubscriptionDelete removes a subscription and, in the same
	// transaction, every consumer of it with their memberships, and returns
	// how many consumers it removed. ErrSubscriptionNotFound when absent,
	// or when params.Tenant names another owner than its own.
	SubscriptionDelete(ctx context.Context, params *SubscriptionDeleteParams) (int, error)

	// ConsumerInsert stores new consumers; a consumer whose ID exists is
	// left as it is. It returns the IDs it inserted.
	ConsumerInsert(ctx context.Context, params *ConsumerInsertParams) ([]string, error)
	// ConsumerGet returns one consumer, or ErrConsumerNotFound.
	ConsumerGet(ctx context.Context, id string) (*Consumer, error)
	// ConsumerUpdate replaces a consumer's state and memberships (not its
	// ID, subscription, primary stream or incarnation) when its version is
	// still params.ExpectVersion, and returns the new version.
	// ErrConsumerNotFound when absent, ErrConsumerConflict when changed.
	ConsumerUpdate(ctx context.Context, params *ConsumerUpdateParams) (int64, error)
	// ConsumerDelete removes a consumer and its memberships when its
	// version is still params.ExpectVersion (0: whatever it is) and, when
	// params.Tenant is not "", it is that tenant's.
	ConsumerDelete(ctx context.Context, params *ConsumerDeleteParams) error
	// ConsumerClaimDue leases, until params.Now+params.Lease, up to
	// params.Limit consumers (of both kinds) whose DueAt is at or before params.Now and
	// whose timer no running lease holds, earliest first, and returns
	// them: one handle fires each due timer. ConsumerUpdate ends the
	// lease (the update set the next deadline). The result also says
	// when the earliest timer after params.Now falls due.
	ConsumerClaimDue(ctx context.Context, params *ConsumerClaimDueParams) (*ConsumerClaimDueResult, error)
	// ConsumerReleaseOwn ends the timer claims this handle holds (its
	// ReplicaID is their owner) that run at params.Now and end before
	// params.Before, except those of the consumers in params.Keep, and
	// returns how many it ended. A live replica whose ConsumerClaimDue
	// failed cannot tell whether the database committed it before its
	// answer was lost: it calls this with the consumers it is firing,
	// and the timers it does not know of are claimable at once instead
	// of when their lease ends. An update of a released timer by its
	// old holder is a compare-and-set like any other (ConsumerUpdate).
	ConsumerReleaseOwn(ctx context.Context, params *ConsumerReleaseOwnParams) (int, error)
	// ConsumerListByStream returns the consumers (of both kinds)
	// subscribed to a stream path (primary or secondary).
	ConsumerListByStream(ctx context.Context, params *ConsumerListByStreamParams) ([]Consumer, error)
	// ConsumerListByPrimary returns the consumers a stream spawned.
	ConsumerListByPrimary(ctx context.Context, params *ConsumerListByStreamParams) ([]Consumer, error)
	// ConsumerListBySubscription returns, ordered by ID, the consumers of
	// one subscription whose IDs come after params.After, at most
	// params.Limit of them (all when 0); none when params.Tenant names
	// another owner than the subscription's, decided in the same read.
	ConsumerListBySubscription(ctx context.Context, params *ConsumerListBySubscriptionParams) ([]Consumer, error)
	// ConsumerCount returns how many consumers are in each state.
	ConsumerCount(ctx context.Context) (map[string]int, error)
	// ConsumerCountStalled returns how many consumers have started at
	// least atLeast wake cycles since their acks last advanced.
	ConsumerCountStalled(ctx context.Context, atLeast int) (int, error)
	// ConsumerPathList returns, in order, the distinct paths after
	// params.After that some consumer is subscribed to (as its primary
	// stream or not), at most params.Limit of them (all when 0): the
	// streams whose changes reach a consumer.
	ConsumerPathList(ctx context.Context, params *ConsumerPathListParams) ([]string, error)

	// StreamList returns the live streams whose path starts with
	// params.Prefix, ordered by path, after params.After, at most
	// params.Limit of them (all when 0).
	StreamList(ctx context.Context, params *StreamListParams) ([]Stream, error)
}

// Errors of SubscriptionStore.
var (
	ErrSubscriptionNotFound = errors.New("store: subscription not found")
	ErrSubscriptionExists   = errors.New("store: subscription exists with another configuration")
	ErrConsumerNotFound     = errors.New("store: consumer not found")
	ErrConsumerConflict     = errors.New("store: consumer changed since it was read")
)

// Subscription is a stored webhook subscription (docs/subscriptions.md).
type Subscription struct {
	ID string
	// Tenant is the owner: the tenant of the credential that created it,
	// "" for the platform. It never changes.
	Tenant      string
	Pattern     string // canonical glob pattern
	Webhook     string
	Secret      string // webhook_secret; callers decide when to show it
	Description string
	CreatedAt   time.Time
}

// SameSubscription reports whether b asks for what a is: the same owner,
// pattern, webhook and description (a create of b where a exists changes
// nothing).
func SameSubscription(a, b *Subscription) bool {
	return a.Tenant == b.Tenant && a.Pattern == b.Pattern && a.Webhook == b.Webhook && a.Description == b.Description
}

// Kinds of consumer: both subscription models keep their delivery state
// in consumer rows, driven by one engine (docs/architecture.md).
const (
	// ConsumerWake is a consumer of a query-string subscription: one per
	// stream that matched it (docs/subscriptions.md).
	ConsumerWake = ""
	// ConsumerReserved is a subscription of the reserved API
	// (docs/reserved-subscriptions.md): one consumer row per
	// subscription, its linked streams its memberships, with no primary
	// stream and its configuration in the row.
	ConsumerReserved = "reserved"
)

// Consumer is the stored state of one consumer instance. State is "IDLE",
// "WAKING" or "LIVE". A zero time means "not armed".
type Consumer struct {
	ID string
	// Kind is ConsumerWake or ConsumerReserved; it never changes.
	Kind           string
	SubscriptionID string
	// Incarnation tells this consumer from others that had or will have
	// the same ID; set by ConsumerInsert (or SubscriptionCreate), never
	// changed by ConsumerUpdate. "" for consumers stored before it existed.
	Incarnation      string
	PrimaryStream    string
	State            string
	Epoch            int64
	WakeID           string
	Attempts         int
	WakingDeadline   time.Time
	NextRetryAt      time.Time
	LivenessDeadline time.Time
	FailingSince     time.Time
	// StalledWakes and StalledSince count the wake cycles started since
	// the consumer's acks last advanced, and when the first began (zero
	// when none): what shows a consumer that makes no progress.
	StalledWakes int
	StalledSince time.Time
	// DueAt is the earliest armed deadline (zero when none): the engine
	// computes it, the store indexes it for ConsumerListDue.
	DueAt   time.Time
	Streams []ConsumerStream
	// Version increases with every update (compare-and-set).
	Version int64

	// What a reserved-API subscription keeps beyond a query-string
	// consumer (zero for those). Tenant (its owner), Config (the
	// normalized configuration as JSON), ConfigHash, Pattern (absolute,
	// "" when none) and CreatedAt are set when it is created and never
	// change; Holder is the worker holding the lease, WakeWritten says
	// that the current wake's event is in the wake stream.
	Tenant      string
	Config      string
	ConfigHash  string
	Pattern     string
	CreatedAt   time.Time
	Holder      string
	WakeWritten bool
}

// ConsumerStream is a consumer's membership in one stream.
type ConsumerStream struct {
	Path     string
	Acked    string
	Notified string
	// Glob and Explicit say how a reserved-API subscription links the
	// stream: by its pattern, by its streams list, or both (both false
	// for a query-string consumer).
	Glob, Explicit bool
}

// SubscriptionCreateParams are the inputs of SubscriptionCreate.
type SubscriptionCreateParams struct {
	Subscription Subscription
	// Prefix and Spawn make the initial consumers: for each live stream
	// whose path starts with Prefix, the store calls Spawn inside the
	// transaction and stores the consumer it returns, if any. The streams
	// are read as of the transaction, one at a time, so that a
	// subscription over many streams never holds all their consumers at
	// once, and a stream created or appended to after it is a change its
	// consumers learn of later. Spawn must not call the store; nil spawns
	// nothing.
	Prefix string
	Spawn  func(s *Stream) (c Consumer, ok bool)
	Now    time.Time
}

// SubscriptionCreateResult is the output of SubscriptionCreate.
type SubscriptionCreateResult struct {
	Subscription Subscription
	Created      bool
}

// SubscriptionListParams are the inputs of SubscriptionList.
type SubscriptionListParams struct {
	Pattern string // "" lists all
	// Tenant, when not "", keeps only that tenant's subscriptions; ""
	// lists every owner's (the platform's view).
	Tenant string
}

// SubscriptionDeleteParams are the inputs of SubscriptionDelete.
type SubscriptionDeleteParams struct {
	ID string
	// Tenant, when not "", deletes the subscription only when it is that
	// tenant's, in the same transaction; "" deletes it whoever owns it.
	Tenant string
}

// ConsumerInsertParams are the inputs of ConsumerInsert.
type ConsumerInsertParams struct {
	Consumers []Consumer
}

// ConsumerUpdateParams are the inputs of ConsumerUpdate.
type ConsumerUpdateParams struct {
	Consumer      Consumer
	ExpectVersion int64
}

// ConsumerDeleteParams are the inputs of ConsumerDelete.
type ConsumerDeleteParams struct {
	ID            string
	ExpectVersion int64
	// Tenant, when not "", deletes the consumer only when it is that
	// tenant's (a reserved-API subscription's owner), in the same
	// transaction: ErrConsumerNotFound otherwise.
	Tenant string
}

// ConsumerClaimDueParams are the inputs of ConsumerClaimDue.
type ConsumerClaimDueParams struct {
	Now   time.Time
	Limit int // 0: 1000
	Lease time.Duration
}

// ConsumerReleaseOwnParams are the inputs of ConsumerReleaseOwn.
type ConsumerReleaseOwnParams struct {
	// Keep are the IDs of the consumers whose timers the caller fires.
	Keep []string
	// Before bounds the claims released: one that ends at or after it
	// is kept, whatever its consumer. Claims end at their
	// ConsumerClaimDue's Now plus its Lease, so Before (the earliest
	// Now of the claims still under way, plus the Lease) keeps every
	// timer taken by a claim whose answer is still to come.
	Before time.Time
	Now    time.Time
}

// ConsumerClaimDueResult is the output of ConsumerClaimDue.
type ConsumerClaimDueResult struct {
	// Consumers are the claimed consumers, by DueAt.
	Consumers []Consumer
	// NextDueAt is the earliest DueAt after Now; zero when none.
	NextDueAt time.Time
}

// ConsumerListByStreamParams are the inputs of ConsumerListByStream and
// ConsumerListByPrimary.
type ConsumerListByStreamParams struct {
	Path string
}

// ConsumerListBySubscriptionParams are the inputs of
// ConsumerListBySubscription.
type ConsumerListBySubscriptionParams struct {
	SubscriptionID string
	After          string // "" starts at the first consumer
	Limit          int    // 0: no limit
	// Tenant, when not "", lists the consumers only when the subscription
	// is that tenant's; "" lists them whoever owns it.
	Tenant string
}

// ConsumerPathListParams are the inputs of ConsumerPathList.
type ConsumerPathListParams struct {
	After string // "" starts at the first path
	Limit int    // 0: no limit
}

// StreamListParams are the inputs of StreamList.
type StreamListParams struct {
	Prefix string
	// After and Limit page the list: paths after After, at most Limit
	// (0: all).
	After string
	Limit int
	// ChangedFrom, when not 0, lists only the streams whose last change
	// has a sequence at or above it (a StreamChangeStore mark).
	ChangedFrom int64
	Now         time.Time
}
