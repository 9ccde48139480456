package subscription

import "time"

// Event is something that happened to a consumer: the input of
// Machine.Decide. The implementations are the types of this file.
type Event interface{ isEvent() }

// TailsChanged reports that one or more subscribed streams got events (or
// were created). An IDLE consumer with pending work wakes; a WAKING or LIVE
// one does not (wake batching: it reads new events through its open
// connections).
type TailsChanged struct {
	Tails Tails
}

// WebhookResult reports how one delivery of a wake notification ended.
type WebhookResult struct {
	// Epoch, WakeID and Attempt identify the delivery (from SendWake). A
	// result for another wake than the consumer's current one is ignored.
	Epoch   int64
	WakeID  string
	Attempt int
	// Delivered is true for a 2xx response. Anything else (non-2xx,
	// network error, WebhookRequestTimeout) is a failed delivery.
	Delivered bool
	// Done is true when a 2xx response body was {"done": true}
	// (ParseWebhookResponse).
	Done bool
	// Tails is needed when Done: events appended after the notification
	// was built are pending work and cause a new wake.
	Tails Tails
}

// Callback is a callback request whose token has a valid signature and
// names the consumer. CheckCallback decides whether it is applied.
type Callback struct {
	Request CallbackRequest
	// RequestErr is ParseCallbackRequest's error (Request is then zero).
	RequestErr error
	// Token holds the bearer token's claims; TokenErr is nil or wraps
	// ErrTokenExpired.
	Token    TokenClaims
	TokenErr error
	// Tails holds the tails of the subscribed streams and of the streams
	// in Request.Subscribe (new subscriptions start at the current tail).
	Tails Tails
	// Reach reports whether the consumer may subscribe to a stream path:
	// those its subscription's owner may read (a tenant's subscription
	// reaches only its tenant's namespace). nil reaches every path.
	Reach func(path string) bool
}

// Tick asks the machine to fire whatever deadline of the consumer is due
// at now (Consumer.NextDeadline) and to wake an IDLE consumer that has
// pending work. The engine sends it when a deadline passes and when it
// resumes after a restart.
type Tick struct {
	Tails Tails
}

// StreamDeleted reports that a stream was deleted. Deleting the primary
// stream removes the consumer; deleting another subscribed stream drops it
// from the consumer's streams, and removes the consumer if none is left.
type StreamDeleted struct {
	Path string
}

// SubscriptionDeleted reports that the consumer's subscription was
// deleted: the consumer is removed.
type SubscriptionDeleted struct{}

// ReservedClaim is a pull-wake worker's claim of a reserved-API
// subscription's lease (DSClaimRequest).
type ReservedClaim struct {
	Worker string
	Tails  Tails
}

// ReservedAck is a reserved-API webhook callback or pull-wake ack whose
// token was verified for the consumer at Epoch: Acks move cursors, Done
// ends the wake. It is applied only to the current wake (ErrFenced).
type ReservedAck struct {
	Epoch  int64
	WakeID string
	Acks   []DSAck
	Done   bool
	Tails  Tails
}

// ReservedRelease is a pull-wake worker's release of the wake (Epoch,
// WakeID) without acking.
type ReservedRelease struct {
	Epoch  int64
	WakeID string
	Tails  Tails
}

// WakeEventWritten reports that the wake event of wake (Epoch, WakeID)
// is in the reserved-API subscription's wake stream (after AppendWake).
type WakeEventWritten struct {
	Epoch  int64
	WakeID string
}

func (TailsChanged) isEvent()        {}
func (ReservedClaim) isEvent()       {}
func (ReservedAck) isEvent()         {}
func (ReservedRelease) isEvent()     {}
func (WakeEventWritten) isEvent()    {}
func (WebhookResult) isEvent()       {}
func (Callback) isEvent()            {}
func (Tick) isEvent()                {}
func (StreamDeleted) isEvent()       {}
func (SubscriptionDeleted) isEvent() {}

// Effect is something the engine must do after storing the consumer that
// Machine.Decide returned. The implementations are the types of this file.
type Effect interface{ isEffect() }

// SendWake asks the engine to POST a wake notification to the
// subscription's webhook, signed (SignatureHeaderValue for a query-string
// consumer, DSSignatureHeader with the active Ed25519 key for a
// reserved-API subscription), within
// WebhookRequestTimeout, and to report the outcome as a WebhookResult with
// the same Epoch, WakeID and Attempt.
type SendWake struct {
	// Wake is the notification without Callback and Token, which the
	// engine fills in (the callback URL and a token for Wake.Epoch).
	Wake WakePayload
	// Attempt is 1 for the first delivery, n+1 for retry n.
	Attempt int
}

// Timer names a consumer deadline.
type Timer string

// The consumer deadlines.
const (
	// TimerWaking is Consumer.WakingDeadline.
	TimerWaking Timer = "waking"
	// TimerRetry is Consumer.NextRetryAt.
	TimerRetry Timer = "retry"
	// TimerLiveness is Consumer.LivenessDeadline.
	TimerLiveness Timer = "liveness"
)

// ArmTimer tells the engine that a deadline was set: at At it must send a
// Tick. The deadline is also a field of the returned Consumer; an engine
// that polls Consumer.NextDeadline may ignore this effect. Deadlines are
// never cancelled: a Tick that finds nothing due changes nothing.
type ArmTimer struct {
	Timer Timer
	At    time.Time
}

// RemoveReason says why a consumer is removed.
type RemoveReason string

// The reasons a consumer is removed (docs/subscriptions.md, Consumers).
const (
	RemovedPrimaryDeleted      RemoveReason = "primary_stream_deleted"
	RemovedSubscriptionDeleted RemoveReason = "subscription_deleted"
	RemovedUnsubscribed        RemoveReason = "unsubscribed_from_all_streams"
	RemovedWebhookFailing      RemoveReason = "webhook_failing"
)

// Remove tells the engine to delete the consumer and its stream
// subscriptions. Later callbacks get ErrConsumerGone (S7). When Remove is
// among the effects, it is the only one.
type Remove struct {
	Reason RemoveReason
}

// AppendWake asks the engine to write the wake event of wake (Epoch,
// WakeID) to a pull-wake subscription's wake stream and to report it
// written as a WakeEventWritten.
type AppendWake struct {
	Epoch  int64
	WakeID string
}

func (SendWake) isEffect()   {}
func (AppendWake) isEffect() {}
func (ArmTimer) isEffect()   {}
func (Remove) isEffect()     {}
