// Package subscription holds the pure core of webhook subscriptions
// (docs/subscriptions.md): the consumer state machine as a function of
// (consumer, event, now) returning the next consumer and its effects as
// data, the offsets and pending-work rules, consumer ids, wake ids and
// webhook secrets, the wire types of the wake notification and the callback
// API, callback tokens and their keyring, and the Webhook-Signature header.
//
// Nothing here does I/O: the engine that stores consumers, sends wakes and
// fires timers calls Machine.Decide and runs the effects it returns. Every
// deadline is a field of Consumer, so a store keeps it in a column and any
// replica can fire it after a restart.
package subscription

import (
	"fmt"
	"slices"
	"time"
)

// Timings of docs/subscriptions.md, Timings.
const (
	// WakingTimeout is how long a consumer may stay WAKING after a webhook
	// is sent before the attempt counts as failed and is retried.
	WakingTimeout = 10 * time.Second
	// LivenessTimeout is how long a LIVE consumer may go without a callback
	// before it returns to IDLE. Any valid callback restarts it.
	LivenessTimeout = 45 * time.Second
	// WebhookRequestTimeout bounds one webhook POST; the sender uses it.
	WebhookRequestTimeout = 30 * time.Second
	// FailureGCAfter is how long webhook deliveries may fail without
	// interruption before the consumer is removed.
	FailureGCAfter = 3 * 24 * time.Hour
)

// MaxConsumerStreams bounds the streams one consumer may subscribe to, so a
// consumer cannot grow its row and every wake payload without limit.
const MaxConsumerStreams = 1024

// State is a consumer's lifecycle state. Its values are the names
// docs/subscriptions.md uses, so a store can keep them readable in a text
// column.
type State string

// Consumer states (docs/subscriptions.md, The state machine).
const (
	// StateIdle: nothing in flight; pending work wakes the consumer.
	StateIdle State = "IDLE"
	// StateWaking: a wake notification is being delivered and not claimed.
	StateWaking State = "WAKING"
	// StateLive: the wake was claimed; the consumer is processing.
	StateLive State = "LIVE"
)

// Valid reports whether s is one of the three states.
func (s State) Valid() bool {
	return s == StateIdle || s == StateWaking || s == StateLive
}

// StreamCursor is one stream a consumer is subscribed to.
type StreamCursor struct {
	Path string
	// Acked is the last acknowledged offset, OffsetStart ("-1") when
	// nothing was processed. S4: it never moves back.
	Acked string
	// Notified is the stream's tail when the current wake's notification
	// was built: a synchronous {"done": true} acks the stream up to it, and
	// no further, so events appended after the notification stay pending
	// and cause a new wake. "" when the stream was subscribed after the
	// notification (or the consumer was never woken).
	Notified string
	// Glob and Explicit say how a reserved-API subscription links the
	// stream: by its pattern, by its streams list, or both (both false
	// for a query-string consumer's stream).
	Glob, Explicit bool
}

// LinkType is a reserved-API link's serialized type: explicit wins over
// glob.
func (l *StreamCursor) LinkType() string {
	if l.Explicit {
		return "explicit"
	}
	return "glob"
}

// Consumer is the durable state of one consumer instance. Every field is
// plain data: a store keeps each in a column (Streams in a child table)
// and hands the value back to Machine.Decide.
type Consumer struct {
	// ID is "{subscription_id}:{url_encoded_stream_path}" (ConsumerID).
	ID             string
	SubscriptionID string
	// Incarnation tells this consumer from an earlier or later one with
	// the same ID (its subscription or primary stream deleted and created
	// again): tokens carry it, so a token dies with the consumer it was
	// issued to. Random, set at creation, never changed; "" for consumers
	// stored before incarnations existed, whose tokens carry none.
	Incarnation string
	// PrimaryStream is the stream that spawned the consumer. Deleting it
	// removes the consumer, even after the consumer unsubscribed from it.
	PrimaryStream string
	State         State
	// Epoch is incremented on every IDLE → WAKING transition (S1); 0 for a
	// consumer never woken.
	Epoch int64
	// WakeID is the id of the current (or last) wake cycle, "" before the
	// first wake. Retries of a notification reuse it (S2).
	WakeID string
	// Streams are the subscribed streams in subscription order, the
	// primary first unless it was unsubscribed.
	Streams []StreamCursor
	// Attempts counts the webhook deliveries sent for the current wake,
	// the first included; the delivery after attempt n is retry n.
	Attempts int
	// WakingDeadline is when the in-flight delivery attempt counts as
	// failed: set while WAKING with an attempt in flight, zero otherwise.
	WakingDeadline time.Time
	// NextRetryAt is when the next delivery attempt is due: set while
	// WAKING between a failed attempt and its retry, zero otherwise.
	NextRetryAt time.Time
	// LivenessDeadline is when a LIVE consumer returns to IDLE unless a
	// callback arrives first: set while LIVE, zero otherwise.
	LivenessDeadline time.Time
	// FailingSince is the first failure of the current run of failed
	// deliveries, zero when the last delivery succeeded. The consumer is
	// removed once the run lasts FailureGCAfter.
	FailingSince time.Time
	// StalledWakes counts the wake cycles started since an ack of the
	// consumer last advanced (or since it last had no pending work), the
	// current one included; StalledSince is when the first of them
	// started, zero when the count is 0. Stuck reads them.
	StalledWakes int
	StalledSince time.Time
	// Holder is the worker holding a reserved-API pull-wake
	// subscription's lease ("" when none, and for a query-string
	// consumer); WakeWritten says that its current wake's event is in the
	// wake stream (WakeEventWritten).
	Holder      string
	WakeWritten bool
	// Reserved are a reserved-API subscription's delivery type and lease,
	// from its configuration (zero for a query-string consumer): the
	// machine applies the reserved API's rules to a consumer that has
	// them. A store keeps them in the configuration, not in columns.
	Reserved ReservedTerms
}

// NewConsumerParams are the inputs of NewConsumer.
type NewConsumerParams struct {
	SubscriptionID string
	PrimaryStream  string
	// Incarnation is the new consumer's incarnation id (NewIncarnation).
	Incarnation string
	// StartOffset is the primary stream's acked offset at creation. For a
	// stream that existed before the subscription it is the stream's tail
	// (docs/subscriptions.md, Consumers: wake only on new events); for a
	// stream created after the subscription it is OffsetStart, since all
	// of its events are new. "" means OffsetStart.
	StartOffset string
}

// NewConsumer returns a consumer in IDLE, epoch 0, subscribed to its
// primary stream. Errors: ErrInvalidSubscriptionID, ErrInvalidStreamPath,
// ErrInvalidOffset.
func NewConsumer(p NewConsumerParams) (Consumer, error) {
	if err := ValidateSubscriptionID(p.SubscriptionID); err != nil {
		return Consumer{}, err
	}
	if err := ValidateStreamPath(p.PrimaryStream); err != nil {
		return Consumer{}, err
	}
	start := p.StartOffset
	if start == "" {
		start = OffsetStart
	}
	if !validOffsetSyntax(start) {
		return Consumer{}, fmt.Errorf("%w: start offset %q is malformed", ErrInvalidOffset, start)
	}
	return Consumer{
		ID:             ConsumerID(p.SubscriptionID, p.PrimaryStream),
		SubscriptionID: p.SubscriptionID,
		Incarnation:    p.Incarnation,
		PrimaryStream:  p.PrimaryStream,
		State:          StateIdle,
		Streams:        []StreamCursor{{Path: p.PrimaryStream, Acked: start}},
	}, nil
}

// Clone returns a deep copy of c: Decide never mutates its argument.
func (c Consumer) Clone() Consumer {
	c.Streams = slices.Clone(c.Streams)
	return c
}

// Stream returns the cursor of a subscribed stream.
func (c *Consumer) Stream(path string) (*StreamCursor, bool) {
	for i := range c.Streams {
		if c.Streams[i].Path == path {
			return &c.Streams[i], true
		}
	}
	return nil, false
}

// StreamOffsets returns the subscribed streams with their acked offsets, in
// subscription order: the "streams" of a wake payload and of a callback
// response. It is never nil, so it encodes as [] when empty.
func (c *Consumer) StreamOffsets() []StreamOffset {
	out := make([]StreamOffset, 0, len(c.Streams))
	for _, s := range c.Streams {
		out = append(out, StreamOffset{Path: s.Path, Offset: s.Acked})
	}
	return out
}

// Paths returns the subscribed stream paths in subscription order.
func (c *Consumer) Paths() []string {
	out := make([]string, 0, len(c.Streams))
	for _, s := range c.Streams {
		out = append(out, s.Path)
	}
	return out
}

// NextDeadline is the earliest deadline set on c, zero when none is: the
// time at which the engine must call Decide with a Tick. A store can keep
// it in an indexed column to find due consumers.
func (c *Consumer) NextDeadline() time.Time {
	var next time.Time
	for _, t := range []time.Time{c.WakingDeadline, c.NextRetryAt, c.LivenessDeadline} {
		if !t.IsZero() && (next.IsZero() || t.Before(next)) {
			next = t
		}
	}
	return next
}

// Tails maps a stream path to its current tail offset. A path that is
// absent names a stream that does not exist (yet): its tail counts as
// OffsetStart. Events that carry Tails must carry the tail of every stream
// the consumer is subscribed to (and, for a callback, of every stream it
// subscribes to), read after the last append the engine knows of.
type Tails map[string]string

func (t Tails) of(path string) string {
	if off, ok := t[path]; ok && off != "" {
		return off
	}
	return OffsetStart
}
