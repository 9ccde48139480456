package store

import (
	"context"
	"errors"
	"time"
)

// DSSubscriptionStore creates and lists the subscriptions of the Durable
// Streams protocol's reserved API (docs/reserved-subscriptions.md). Each
// is one consumer row of kind ConsumerReserved, with its linked streams as
// the consumer's memberships: read, changed (by compare-and-set), timed
// (ConsumerClaimDue), found by stream and deleted as every consumer is,
// through SubscriptionStore.
type DSSubscriptionStore interface {
	// DSSubscriptionCreate stores params.Consumer (of kind
	// ConsumerReserved) with its explicit links and, in the same
	// transaction, a glob link for every live stream under
	// params.Prefix that params.Match accepts, at its tail: the eager
	// backfill. The same id with the same owner and ConfigHash returns
	// the stored consumer with Created false; another configuration or
	// owner is ErrSubscriptionExists, more than 1,024 links
	// ErrTooManyLinks.
	DSSubscriptionCreate(ctx context.Context, params *DSSubscriptionCreateParams) (*DSSubscriptionCreateResult, error)
	// DSSubscriptionList returns every consumer of kind
	// ConsumerReserved, without memberships, ordered by id.
	DSSubscriptionList(ctx context.Context) ([]Consumer, error)
}

// ErrTooManyLinks: a reserved-API subscription would link more streams
// than a subscription may (1,024).
var ErrTooManyLinks = errors.New("store: too many streams linked to one subscription")

// MaxLinks bounds the streams linked to one reserved-API subscription.
const MaxLinks = 1024

// DSSubscriptionCreateParams are the inputs of DSSubscriptionCreate.
type DSSubscriptionCreateParams struct {
	// Consumer is stored as given (CreatedAt and Version are set by the
	// store); its Streams are the explicit links, at their tails.
	Consumer Consumer
	// Prefix and Match make the backfill: Match is called, inside the
	// transaction, for each live stream under Prefix; it returns the
	// link to store (at the stream's tail) or false. It must not call
	// the store. Nil: no backfill.
	Prefix string
	Match  func(s *Stream) (ConsumerStream, bool)
	Now    time.Time
}

// DSSubscriptionCreateResult is the output of DSSubscriptionCreate.
type DSSubscriptionCreateResult struct {
	Consumer Consumer
	Created  bool
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
