// Package apierr is Herald's one error table: every error a route of
// Herald's API can meet (the protocol's, the store's, the subscription,
// consumer, callback, key and delivery services') maps here to one
// status and one JSON code, and Fail writes the answer with the one
// error body (package httpjson). The stream routes, the subscription,
// callback, key and delivery APIs all answer through it, so a condition
// has the same code wherever it is met.
//
// It imports only the packages whose errors it names (the rules, the
// store, the webhook sender and the engines' sentinel errors), never an
// HTTP package, so that every HTTP package can use it.
package apierr

import (
	"errors"
	"net/http"
	"strconv"

	"github.com/heraldstreams/herald/delivery/dispatch"
	"github.com/heraldstreams/herald/glob"
	"github.com/heraldstreams/herald/internal/httpjson"
	"github.com/heraldstreams/herald/protocol"
	"github.com/heraldstreams/herald/store"
	"github.com/heraldstreams/herald/subscription"
	"github.com/heraldstreams/herald/subscription/wake"
	"github.com/heraldstreams/herald/webhook"
)

// Conditions the delivery API meets where a stream route meets another:
// an event published to a stream that is missing or deleted, or whose
// content type is not JSON. For the publisher these are not the
// protocol's 404 STREAM_NOT_FOUND and 409 CONTENT_TYPE_MISMATCH (it asked
// for no stream by that name) but a stream it may not publish to.
var (
	// ErrPublishStreamGone: the stream an event is published to was
	// deleted or never was (docs/api.md, Events).
	ErrPublishStreamGone = errors.New("the stream is gone")
	// ErrPublishStreamNotJSON: the stream an event is published to does
	// not hold JSON.
	ErrPublishStreamNotJSON = errors.New("the stream is not JSON")
)

// Row is one condition of the table: the error that says it (a sentinel
// matched with errors.Is, or a typed error matched by As), its status and
// its code.
type Row struct {
	// Err is the sentinel error of the condition; nil for a typed one.
	Err error
	// As reports whether err is the row's typed error, with the message
	// and the headers the protocol requires for it; nil for a sentinel.
	As func(err error) (msg string, header func(http.Header), ok bool)
	// Status is the HTTP status; CreateStatus, when not 0, replaces it on
	// PUT, where a soft-deleted path or fork source is a conflict, not a
	// 410 (docs/protocol.md, Delete).
	Status, CreateStatus int
	// Code is the JSON code.
	Code string
	// Wrapped: the message is the whole error's, which says what was
	// wrong (which field, which URL and why); otherwise it is the
	// sentinel's own, without the package that defines it.
	Wrapped bool
	// Why says, for a code that has another status in another row, why
	// this one differs (TestOneCodePerCondition requires it).
	Why string
}

// Table is the error table, first match first.
var Table = []Row{
	// Typed errors of the store and the protocol, with their headers
	// (docs/protocol.md, Append).
	{As: headerTooLong, Status: http.StatusBadRequest, Code: "HEADER_TOO_LONG"},
	{As: streamClosed, Status: http.StatusConflict, Code: "STREAM_CLOSED"},
	{As: producerEpochStale, Status: http.StatusForbidden, Code: "PRODUCER_EPOCH_STALE"},
	{As: producerSeqGap, Status: http.StatusConflict, Code: "PRODUCER_SEQ_GAP"},

	// The subscription and consumer services.
	{Err: subscription.ErrInvalidSubscriptionID, Status: http.StatusBadRequest, Code: "INVALID_SUBSCRIPTION_ID", Wrapped: true},
	{Err: glob.ErrInvalidPattern, Status: http.StatusBadRequest, Code: "INVALID_PATTERN", Wrapped: true},
	{Err: wake.ErrPatternForbidden, Status: http.StatusForbidden, Code: "FORBIDDEN", Wrapped: true},
	{Err: subscription.ErrInvalidRequest, Status: http.StatusBadRequest, Code: "INVALID_REQUEST", Wrapped: true},
	// The reserved subscription API names its own code for a refused
	// webhook URL (the protocol's), which carries the sender's reason.
	{Err: subscription.ErrWebhookURLRejected, Status: http.StatusBadRequest, Code: "WEBHOOK_URL_REJECTED", Wrapped: true},
	{Err: webhook.ErrURLRefused, Status: http.StatusBadRequest, Code: "URL_REFUSED", Wrapped: true},
	{Err: wake.ErrSubscriptionExists, Status: http.StatusConflict, Code: "SUBSCRIPTION_EXISTS", Wrapped: true},
	{Err: wake.ErrSubscriptionNotFound, Status: http.StatusNotFound, Code: "SUBSCRIPTION_NOT_FOUND", Wrapped: true},
	{Err: wake.ErrConsumerNotFound, Status: http.StatusNotFound, Code: "CONSUMER_NOT_FOUND", Wrapped: true},

	// The callback API: its statuses are the subscription protocol's
	// (docs/subscriptions.md, Errors).
	{Err: subscription.ErrTokenExpired, Status: http.StatusUnauthorized, Code: subscription.CodeTokenExpired, Wrapped: true},
	{Err: subscription.ErrTokenInvalid, Status: http.StatusUnauthorized, Code: subscription.CodeTokenInvalid, Wrapped: true},
	{Err: subscription.ErrAlreadyClaimed, Status: http.StatusConflict, Code: subscription.CodeAlreadyClaimed, Wrapped: true},
	{Err: subscription.ErrInvalidOffset, Status: http.StatusConflict, Code: subscription.CodeInvalidOffset, Wrapped: true,
		Why: "an ack beyond the tail is a conflict with the stream in the subscription protocol, where a malformed offset of a read is a bad request"},
	{Err: subscription.ErrStaleEpoch, Status: http.StatusConflict, Code: subscription.CodeStaleEpoch, Wrapped: true},
	// The reserved subscription API's fencing and claims (its
	// ALREADY_CLAIMED, which names the holder, is Classify's).
	{Err: subscription.ErrFenced, Status: http.StatusConflict, Code: "FENCED", Wrapped: true},
	{Err: subscription.ErrNothingToClaim, Status: http.StatusConflict, Code: "NOTHING_TO_CLAIM", Wrapped: true},
	{Err: store.ErrTooManyLinks, Status: http.StatusBadRequest, Code: "TOO_MANY_STREAMS", Wrapped: true},
	{Err: subscription.ErrConsumerGone, Status: http.StatusGone, Code: subscription.CodeConsumerGone, Wrapped: true},
	{Err: subscription.ErrStreamForbidden, Status: http.StatusForbidden, Code: subscription.CodeForbidden, Wrapped: true},
	{Err: subscription.ErrBodyTooLarge, Status: http.StatusRequestEntityTooLarge, Code: subscription.CodeBodyTooLarge, Wrapped: true},

	// The protocol's rules.
	{Err: protocol.ErrInvalidOffset, Status: http.StatusBadRequest, Code: "INVALID_OFFSET"},
	{Err: protocol.ErrInvalidTTL, Status: http.StatusBadRequest, Code: "INVALID_TTL"},
	{Err: protocol.ErrInvalidExpiresAt, Status: http.StatusBadRequest, Code: "INVALID_EXPIRES_AT"},
	{Err: protocol.ErrTTLAndExpiresAt, Status: http.StatusBadRequest, Code: "CONFLICTING_EXPIRY"},
	{Err: protocol.ErrProducerHeaders, Status: http.StatusBadRequest, Code: "INVALID_PRODUCER_HEADERS"},
	{Err: protocol.ErrInvalidSubOffset, Status: http.StatusBadRequest, Code: "INVALID_FORK_SUB_OFFSET"},
	{Err: protocol.ErrInvalidContentType, Status: http.StatusBadRequest, Code: "INVALID_CONTENT_TYPE"},
	{Err: protocol.ErrInvalidJSON, Status: http.StatusBadRequest, Code: "INVALID_JSON"},
	{Err: protocol.ErrEmptyJSONArray, Status: http.StatusBadRequest, Code: "EMPTY_JSON_ARRAY"},

	// The store's streams.
	{Err: store.ErrNotFound, Status: http.StatusNotFound, Code: "STREAM_NOT_FOUND"},
	{Err: store.ErrStreamGone, Status: http.StatusGone, CreateStatus: http.StatusConflict, Code: "STREAM_GONE"},
	{Err: store.ErrStreamExists, Status: http.StatusConflict, Code: "STREAM_EXISTS"},
	{Err: store.ErrContentTypeMismatch, Status: http.StatusConflict, Code: "CONTENT_TYPE_MISMATCH"},
	{Err: store.ErrSeqRegression, Status: http.StatusConflict, Code: "SEQUENCE_CONFLICT"},
	{Err: store.ErrProducerEpochSeq, Status: http.StatusBadRequest, Code: "INVALID_PRODUCER_EPOCH_SEQ"},
	{Err: store.ErrForkSourceGone, Status: http.StatusConflict, Code: "FORK_SOURCE_GONE"},
	{Err: store.ErrForkOffsetBeyondTail, Status: http.StatusBadRequest, Code: "FORK_OFFSET_BEYOND_TAIL"},
	{Err: store.ErrForkSubOffset, Status: http.StatusBadRequest, Code: "INVALID_FORK_SUB_OFFSET"},
	{Err: store.ErrPositionBeyondTail, Status: http.StatusBadRequest, Code: "OFFSET_BEYOND_TAIL"},

	// The key API.
	{Err: store.ErrKeyNotFound, Status: http.StatusNotFound, Code: "KEY_NOT_FOUND"},

	// The delivery API.
	{Err: store.ErrEndpointNotFound, Status: http.StatusNotFound, Code: "ENDPOINT_NOT_FOUND", Wrapped: true},
	{Err: store.ErrDeliveryNotFound, Status: http.StatusNotFound, Code: "DELIVERY_NOT_FOUND", Wrapped: true},
	{Err: store.ErrReplayJobNotFound, Status: http.StatusNotFound, Code: "REPLAY_NOT_FOUND", Wrapped: true},
	{Err: store.ErrEndpointConflict, Status: http.StatusConflict, Code: "CONFLICT", Wrapped: true},
	{Err: store.ErrEventTypeNotFound, Status: http.StatusNotFound, Code: "EVENT_TYPE_NOT_FOUND", Wrapped: true},
	{Err: store.ErrEventNotFound, Status: http.StatusNotFound, Code: "EVENT_NOT_FOUND", Wrapped: true},
	{Err: store.ErrEventTypeExists, Status: http.StatusConflict, Code: "EVENT_TYPE_EXISTS", Wrapped: true},
	{Err: store.ErrEventTypeConflict, Status: http.StatusConflict, Code: "CONFLICT", Wrapped: true},
	{Err: dispatch.ErrVerificationFailed, Status: http.StatusUnprocessableEntity, Code: "VERIFICATION_FAILED", Wrapped: true},
	{Err: dispatch.ErrStreamNotSourced, Status: http.StatusBadRequest, Code: "STREAM_NOT_SOURCED", Wrapped: true},
	{Err: ErrPublishStreamNotJSON, Status: http.StatusConflict, Code: "STREAM_NOT_JSON", Wrapped: true},
	{Err: ErrPublishStreamGone, Status: http.StatusConflict, Code: "STREAM_GONE", Wrapped: true,
		Why: "publishing to a deleted stream conflicts with its state, as a PUT of a deleted path does; a read of it is 410"},

	{Err: store.ErrClosedStore, Status: http.StatusServiceUnavailable, Code: "UNAVAILABLE"},
	// The database is away (restarting, down, unreachable): nothing of
	// the request was done, and the same request may succeed in a moment.
	{As: storeUnavailable, Status: httpjson.StoreUnavailable.Status, Code: httpjson.StoreUnavailable.Code},
}

// storeUnavailable matches store.ErrUnavailable, answered as
// httpjson.StoreUnavailable says (when to retry).
func storeUnavailable(err error) (string, func(http.Header), bool) {
	if !errors.Is(err, store.ErrUnavailable) {
		return "", nil, false
	}
	return httpjson.StoreUnavailable.Message, httpjson.StoreUnavailable.Header, true
}

// typed is the As of a row for the typed error E, whose message and
// headers describe says.
func typed[E error](describe func(E) (string, func(http.Header))) func(error) (string, func(http.Header), bool) {
	return func(err error) (string, func(http.Header), bool) {
		var e E
		if !errors.As(err, &e) {
			return "", nil, false
		}
		msg, header := describe(e)
		return msg, header, true
	}
}

var headerTooLong = typed(func(e *protocol.HeaderTooLongError) (string, func(http.Header)) {
	return PublicMessage(e), nil
})

var streamClosed = typed(func(e *store.ClosedError) (string, func(http.Header)) {
	return "the stream is closed", func(h http.Header) {
		h["Stream-Closed"] = valTrue
		h.Set("Stream-Next-Offset", protocol.FormatOffset(e.Tail))
	}
})

var producerEpochStale = typed(func(e *store.ProducerEpochStaleError) (string, func(http.Header)) {
	return "the producer epoch is older than the stream's", func(h http.Header) {
		h.Set("Producer-Epoch", strconv.FormatInt(e.Current, 10))
	}
})

var producerSeqGap = typed(func(e *store.ProducerSeqGapError) (string, func(http.Header)) {
	expected, received := strconv.FormatInt(e.Expected, 10), strconv.FormatInt(e.Received, 10)
	return "sequence conflict: the producer skipped a sequence number (expected " + expected + ", received " + received + ")",
		func(h http.Header) {
			h.Set("Producer-Expected-Seq", expected)
			h.Set("Producer-Received-Seq", received)
		}
})

// valTrue is a shared header value; net/http never modifies it.
var valTrue = []string{"true"}
