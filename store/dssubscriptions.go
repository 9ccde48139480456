package store

import (
	"context"
	"errors"
	"time"
)

// DSSubscriptionStore keeps the subscriptions of the Durable Streams
// protocol's reserved API (docs/subscriptions.md, The reserved
// subscription API): one row per subscription with its configuration and
// delivery state, and one row per linked stream with its cursor.
//
// Like consumers, a subscription's state changes by compare-and-set on
// its Version (DSSubscriptionUpdate fails with ErrConsumerConflict when
// another writer, on this replica or another, changed it first), and its
// earliest deadline is an indexed column (DueAt) whose timer one handle
// claims at a time (DSSubscriptionClaimDue), so a replica that dies
// holding it leaves it to the others when the claim's lease ends.
type DSSubscriptionStore interface {
	// DSSubscriptionCreate stores a subscription with its explicit links
	// and, in the same transaction, a glob link for every live stream
	// under params.Prefix that params.Match accepts, at its tail: the
	// eager backfill. The same id with the same owner and ConfigHash
	// returns the stored subscription with Created false; another
	// configuration or owner is ErrSubscriptionExists.
	DSSubscriptionCreate(ctx context.Context, params *DSSubscriptionCreateParams) (*DSSubscriptionCreateResult, error)
	// DSSubscriptionGet returns a subscription with its links, or
	// ErrSubscriptionNotFound.
	DSSubscriptionGet(ctx context.Context, id string) (*DSSubscription, error)
	// DSSubscriptionList returns every subscription, without links,
	// ordered by id.
	DSSubscriptionList(ctx context.Context) ([]DSSubscription, error)
	// DSSubscriptionDelete removes a subscription and its links.
	// ErrSubscriptionNotFound when absent, or when tenant is not "" and
	// names another owner.
	DSSubscriptionDelete(ctx context.Context, id, tenant string) error
	// DSSubscriptionUpdate replaces a subscription's state and links
	// when its version is still params.ExpectVersion, ends its timer
	// claim, and returns the new version. ErrSubscriptionNotFound when
	// absent, ErrConsumerConflict when changed.
	DSSubscriptionUpdate(ctx context.Context, params *DSSubscriptionUpdateParams) (int64, error)
	// DSSubscriptionClaimDue claims, until now+lease, up to limit
	// subscriptions whose DueAt is at or before now and whose timer no
	// running claim holds, and returns their ids; the result's NextDueAt
	// is the earliest DueAt after now (zero when none).
	DSSubscriptionClaimDue(ctx context.Context, now time.Time, lease time.Duration, limit int) (ids []string, nextDueAt time.Time, err error)
	// DSSubscriptionsLinking returns the ids of the subscriptions linked
	// to a stream path.
	DSSubscriptionsLinking(ctx context.Context, path string) ([]string, error)
}

// ErrTooManyLinks: a reserved-API subscription would link more streams
// than a subscription may (1,024).
var ErrTooManyLinks = errors.New("store: too many streams linked to one subscription")

// DSSubscription is a stored reserved-API subscription.
type DSSubscription struct {
	ID string
	// Tenant is the owner, "" for the platform; it never changes.
	Tenant string
	// Incarnation tells this subscription from an earlier or later one
	// with the same id: the tokens of its wakes carry it.
	Incarnation string
	// Config is the normalized configuration as JSON, ConfigHash its
	// hash (subscription.DSConfig).
	Config     string
	ConfigHash string
	// Pattern is the absolute glob pattern ("" when none), kept apart
	// so that the engine matches streams without decoding Config.
	Pattern   string
	CreatedAt time.Time
	// State is the delivery state as JSON (subscription.DSState),
	// DueAt its earliest deadline (zero: none).
	State   string
	DueAt   time.Time
	Links   []DSLink
	Version int64
}

// DSLink is a stream linked to a reserved-API subscription.
type DSLink struct {
	Path     string
	Glob     bool
	Explicit bool
	Acked    string
	Notified string
}

// DSSubscriptionCreateParams are the inputs of DSSubscriptionCreate.
type DSSubscriptionCreateParams struct {
	// Subscription is stored as given (CreatedAt and Version are set by
	// the store); its Links are the explicit ones, at their tails.
	Subscription DSSubscription
	// Prefix and Match make the backfill: Match is called, inside the
	// transaction, for each live stream under Prefix; it returns the
	// link to store (at the stream's tail) or false. It must not call
	// the store. Nil: no backfill.
	Prefix string
	Match  func(s *Stream) (DSLink, bool)
	Now    time.Time
}

// DSSubscriptionCreateResult is the output of DSSubscriptionCreate.
type DSSubscriptionCreateResult struct {
	Subscription DSSubscription
	Created      bool
}

// DSSubscriptionUpdateParams are the inputs of DSSubscriptionUpdate.
type DSSubscriptionUpdateParams struct {
	ID            string
	State         string
	DueAt         time.Time
	Links         []DSLink
	ExpectVersion int64
}

// SigningKeyStore keeps the Ed25519 keys that sign reserved-API webhooks,
// sealed like every other secret, so that every replica and every
// restart signs with the same key and publishes the same key set.
type SigningKeyStore interface {
	// SigningKeyInit stores key as the active key when the store has
	// none, and returns every key, the active one first.
	SigningKeyInit(ctx context.Context, key SigningKey) ([]SigningKey, error)
	// SigningKeyRotate retires the active key at key.CreatedAt and makes
	// key the active one, and returns every key, the active one first.
	SigningKeyRotate(ctx context.Context, key SigningKey) ([]SigningKey, error)
	// SigningKeyList returns every key, the active one first.
	SigningKeyList(ctx context.Context) ([]SigningKey, error)
}

// SigningKey is one stored signing key: its id and 32-byte Ed25519 seed.
type SigningKey struct {
	Kid       string
	Seed      []byte
	CreatedAt time.Time
	// RetiredAt is zero for the active key.
	RetiredAt time.Time
}
