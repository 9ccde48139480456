// Package store is Herald's storage contract: one interface that every
// backend (the embedded SQLite default, Postgres for several replicas)
// implements, the parameter and result types of its methods, and the
// sentinel errors they return.
//
// Positions are int64 byte positions in a stream's logical byte space. The
// protocol package turns them into opaque offset strings; the store never
// sees an offset string. A forked stream shares its source's position space
// up to the fork position.
//
// Data for JSON streams is stored framed: each message compacted and followed
// by one '\n' (see protocol.FrameJSON), so a position is always a byte count
// and a message boundary is the byte after a '\n'.
//
// Every method takes a context and, where time matters, a Now in its params:
// time is data, and tests pin it.
package store

import (
	"context"
	"time"

	"github.com/heraldstreams/herald/protocol"
	"github.com/heraldstreams/herald/streamrules"
)

// Store is the storage contract. Methods are safe for concurrent use.
type Store interface {
	// StreamCreate creates a stream, or confirms that an identical one
	// exists (Created false). Errors: ErrStreamExists when a stream with
	// another configuration is at Path, ErrStreamGone when Path belongs to a
	// soft-deleted stream, and for forks ErrNotFound (source missing),
	// ErrForkSourceGone, ErrContentTypeMismatch, ErrForkOffsetBeyondTail,
	// ErrForkSubOffset.
	StreamCreate(ctx context.Context, params *StreamCreateParams) (*StreamCreateResult, error)

	// StreamAppend appends data and/or closes a stream durably: when it
	// returns without error the bytes are on disk. Concurrent appends are
	// group committed. Errors: ErrNotFound, ErrStreamGone, *ClosedError,
	// ErrContentTypeMismatch, ErrSeqRegression, *ProducerEpochStaleError,
	// *ProducerSeqGapError, ErrProducerEpochSeq.
	StreamAppend(ctx context.Context, params *StreamAppendParams) (*StreamAppendResult, error)

	// StreamGet returns a stream's metadata without resetting its TTL.
	// Errors: ErrNotFound, ErrStreamGone.
	StreamGet(ctx context.Context, params *StreamGetParams) (*Stream, error)

	// StreamRead reads data from a position, stitching fork sources, and
	// resets a sliding TTL. Errors: ErrNotFound, ErrStreamGone,
	// ErrPositionBeyondTail.
	StreamRead(ctx context.Context, params *StreamReadParams) (*StreamReadResult, error)

	// StreamDelete deletes a stream. A stream that forks still reference is
	// soft-deleted (ErrStreamGone from then on); deleting the last fork of a
	// soft-deleted source removes the source too. Errors: ErrNotFound,
	// ErrStreamGone.
	StreamDelete(ctx context.Context, params *StreamDeleteParams) error

	// StreamDeleteExpired removes streams whose TTL or Expires-At passed
	// before params.Now and returns how many it removed.
	StreamDeleteExpired(ctx context.Context, params *StreamDeleteExpiredParams) (int, error)

	// SubscriptionStore keeps webhook subscriptions and consumers.
	SubscriptionStore

	// DSSubscriptionStore keeps the reserved API's subscriptions and
	// SigningKeyStore the keys that sign their webhooks.
	DSSubscriptionStore
	SigningKeyStore

	// DeliveryStore keeps event delivery endpoints and deliveries.
	DeliveryStore

	// KeyStore keeps API keys (their hashes).
	KeyStore

	// LeaseStore keeps named leases (jobs one handle runs at a time).
	LeaseStore

	// ReplicaStore keeps the handles' heartbeats and ends the claims of
	// a handle that stopped beating.
	ReplicaStore

	// StreamChangeStore numbers the streams' changes.
	StreamChangeStore

	// Peers reports whether other handles (replicas) may open this
	// store's database while this one is open, sharing its leases and
	// limits. A backend that owns its database alone says false: no peer
	// can open it, and the leases a previous handle left end when the
	// next one opens, since that handle is gone.
	Peers() bool

	// EventTypeStore keeps the event type catalogue.
	EventTypeStore

	// Notifier reports tail changes of this store's streams.
	Notifier() Notifier

	// Close flushes and releases the store. In-flight appends finish first.
	Close() error
}

// Stream is the durable metadata of one stream.
type Stream struct {
	// ID is unique for the life of the store: a stream re-created at the
	// same path gets a new ID (ETags and caches rely on it).
	ID   int64
	Path string
	// ContentType is the content type the stream was created with,
	// parameters included; it is returned as it is.
	ContentType string
	// Tail is the position after the last byte: where the next append goes.
	Tail   int64
	Closed bool
	// TTL is the sliding time-to-live, 0 when none.
	TTL time.Duration
	// ExpiresAt is the absolute expiry, zero when none.
	ExpiresAt time.Time
	// AccessedAt is the last read or write, which a sliding TTL counts from.
	AccessedAt time.Time
	CreatedAt  time.Time
	// ForkSource is the path of the stream this one was forked from, "" when
	// it is not a fork; ForkPosition is where it diverged.
	ForkSource   string
	ForkPosition int64
	// ForkOffset and ForkSubOffset are the fork request as given (for
	// idempotent re-creation): the anchor position and the sub-offset.
	ForkOffset    int64
	ForkSubOffset int64
	// LastSeq is the last Stream-Seq accepted, "" when none.
	LastSeq string
}

// Deadline is when the stream expires: ExpiresAt, or AccessedAt+TTL, or zero
// when it never expires.
func (s *Stream) Deadline() time.Time {
	if !s.ExpiresAt.IsZero() {
		return s.ExpiresAt
	}
	if s.TTL > 0 {
		return s.AccessedAt.Add(s.TTL)
	}
	return time.Time{}
}

// Expired reports whether the stream has expired at now.
func (s *Stream) Expired(now time.Time) bool {
	d := s.Deadline()
	return !d.IsZero() && !now.Before(d)
}

// Config is the stream's creation settings, for the create and fork rules.
func (s *Stream) Config() streamrules.Config {
	return streamrules.Config{ContentType: s.ContentType, TTL: s.TTL, ExpiresAt: s.ExpiresAt, Closed: s.Closed,
		ForkSource: s.ForkSource, ForkOffset: s.ForkOffset, ForkSubOffset: s.ForkSubOffset}
}

// StreamCreateParams are the inputs of Store.StreamCreate.
type StreamCreateParams struct {
	Path        string
	ContentType string // "" for a fork inherits the source's
	TTL         time.Duration
	ExpiresAt   time.Time
	Closed      bool
	// Data is the initial content, framed for JSON streams; Messages is the
	// number of JSON messages in it. The store may keep Data: callers must
	// not modify it after the call (likewise for appends).
	Data     []byte
	Messages int
	// ForkSource, when not "", makes this a fork of the stream at that path.
	ForkSource string
	// ForkOffset is the anchor position; -1 means the source's tail.
	ForkOffset int64
	// ForkSubOffset refines the anchor: bytes, or messages for JSON streams.
	ForkSubOffset int64
	Now           time.Time
}

// Config is the creation settings the request asks for, for the create
// and fork rules.
func (p *StreamCreateParams) Config() streamrules.Config {
	return streamrules.Config{ContentType: p.ContentType, TTL: p.TTL, ExpiresAt: p.ExpiresAt, Closed: p.Closed,
		ForkSource: p.ForkSource, ForkOffset: p.ForkOffset, ForkSubOffset: p.ForkSubOffset}
}

// StreamCreateResult is the output of Store.StreamCreate.
type StreamCreateResult struct {
	Stream  Stream
	Created bool
}

// Producer identifies one idempotent producer request (docs/protocol.md,
// Idempotent producers).
type Producer = protocol.Producer

// AppendOutcome says what an append did.
type AppendOutcome = streamrules.Outcome

// The outcomes of an append (see streamrules.Outcome).
const (
	// Appended means the data was written (and the stream closed if asked).
	Appended = streamrules.Appended
	// Duplicate means an idempotent producer retried a request already
	// applied; nothing was written.
	Duplicate = streamrules.Duplicate
	// Closed means a close-only request closed the stream, or found it
	// already closed.
	Closed = streamrules.Closed
)

// StreamAppendParams are the inputs of Store.StreamAppend.
type StreamAppendParams struct {
	Path string
	// ContentType is the request's content type as checked by
	// protocol.NormalizeContentType; "" when the request has no body.
	ContentType string
	Data        []byte
	Messages    int
	Close       bool
	// Seq is the Stream-Seq header, "" when absent.
	Seq      string
	Producer *Producer
	Now      time.Time
}

// AppendRequest is the part of the append that the append rules look at.
func (p *StreamAppendParams) AppendRequest() streamrules.AppendRequest {
	return streamrules.AppendRequest{ContentType: p.ContentType, HasData: len(p.Data) > 0, Close: p.Close, Seq: p.Seq, Producer: p.Producer}
}

// StreamAppendResult is the output of Store.StreamAppend.
type StreamAppendResult struct {
	Stream  Stream
	Outcome AppendOutcome
	// Start is where the data was written; Stream.Tail is the new tail.
	Start int64
	// ProducerEpoch and ProducerSeq echo the producer state after the append
	// (the highest accepted seq for the epoch).
	ProducerEpoch int64
	ProducerSeq   int64
}

// StreamGetParams are the inputs of Store.StreamGet.
type StreamGetParams struct {
	Path string
	Now  time.Time
}

// StreamReadParams are the inputs of Store.StreamRead.
type StreamReadParams struct {
	Path string
	// From is the position to read from; -1 is the stream's start.
	From int64
	// MaxBytes bounds the data returned; at least one stored chunk is
	// returned when data exists, whatever its size.
	MaxBytes int
	Now      time.Time
	// Internal marks a read by Herald itself (the delivery engine matching
	// events): it does not count as an access, so it never renews a
	// sliding TTL.
	Internal bool
}

// StreamReadResult is the output of Store.StreamRead.
type StreamReadResult struct {
	Stream Stream
	Data   []byte
	// Next is the position after Data; Next == Stream.Tail means up to date.
	Next int64
}

// StreamDeleteParams are the inputs of Store.StreamDelete.
type StreamDeleteParams struct {
	Path string
	Now  time.Time
}

// StreamDeleteExpiredParams are the inputs of Store.StreamDeleteExpired.
type StreamDeleteExpiredParams struct {
	Now   time.Time
	Limit int
}
