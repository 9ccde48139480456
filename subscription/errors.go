package subscription

import (
	"errors"
	"net/http"
)

// Callback errors (docs/subscriptions.md, Errors). Decide, ParseCallbackRequest
// and Keyring.Verify return them wrapped with a message that says what was
// wrong; CallbackErrorStatus maps each to its HTTP status and code.
var (
	// ErrInvalidRequest: malformed JSON, a missing or mistyped field, an
	// unknown field.
	ErrInvalidRequest = errors.New("subscription: invalid request")
	// ErrTokenExpired: the token's signature is valid but its TTL passed.
	// The caller issues a new token for the same consumer and epoch and
	// returns it in the error response.
	ErrTokenExpired = errors.New("subscription: callback token expired")
	// ErrTokenInvalid: the token is malformed, its signature or key is
	// unknown, or it is for another consumer or epoch.
	ErrTokenInvalid = errors.New("subscription: callback token invalid")
	// ErrAlreadyClaimed: the wake_id is not the current wake's.
	ErrAlreadyClaimed = errors.New("subscription: wake already claimed")
	// ErrInvalidOffset: an ack offset is malformed or beyond the tail.
	ErrInvalidOffset = errors.New("subscription: invalid offset")
	// ErrStaleEpoch: the callback's epoch is not the consumer's (S6).
	ErrStaleEpoch = errors.New("subscription: stale epoch")
	// ErrConsumerGone: the consumer does not exist (any more) (S7). The
	// engine returns it when it finds no consumer for a callback.
	ErrConsumerGone = errors.New("subscription: consumer gone")
	// ErrStreamForbidden: a subscribe names a stream that the consumer's
	// subscription's owner may not read (outside its tenant's namespace).
	ErrStreamForbidden = errors.New("subscription: stream outside the subscription owner's streams")
	// ErrBodyTooLarge: the callback body exceeds the server's limit. The
	// error table lists it apart; the HTTP layer refuses
	// such a body before reading past the limit.
	ErrBodyTooLarge = errors.New("subscription: callback body too large")
)

// Error codes of the callback API, as they appear in error responses.
const (
	CodeInvalidRequest = "INVALID_REQUEST"
	CodeTokenExpired   = "TOKEN_EXPIRED"
	CodeTokenInvalid   = "TOKEN_INVALID"
	CodeAlreadyClaimed = "ALREADY_CLAIMED"
	CodeInvalidOffset  = "INVALID_OFFSET"
	CodeStaleEpoch     = "STALE_EPOCH"
	CodeConsumerGone   = "CONSUMER_GONE"
	CodeForbidden      = "FORBIDDEN"
	CodeBodyTooLarge   = "PAYLOAD_TOO_LARGE"
)

// callbackErrors are the errors of the callback protocol, with the status
// and code the protocol gives each, and the 413 of an oversized body. The
// engine uses it to tell a callback error from a server fault; the HTTP
// answer comes from Herald's one error table (httpapi/apierr), whose
// tests check that it agrees with this list.
var callbackErrors = []struct {
	err    error
	status int
	code   string
}{
	{ErrInvalidRequest, http.StatusBadRequest, CodeInvalidRequest},
	{ErrTokenExpired, http.StatusUnauthorized, CodeTokenExpired},
	{ErrTokenInvalid, http.StatusUnauthorized, CodeTokenInvalid},
	{ErrAlreadyClaimed, http.StatusConflict, CodeAlreadyClaimed},
	{ErrInvalidOffset, http.StatusConflict, CodeInvalidOffset},
	{ErrStaleEpoch, http.StatusConflict, CodeStaleEpoch},
	{ErrConsumerGone, http.StatusGone, CodeConsumerGone},
	{ErrStreamForbidden, http.StatusForbidden, CodeForbidden},
	{ErrBodyTooLarge, http.StatusRequestEntityTooLarge, CodeBodyTooLarge},
}

// CallbackErrorStatus returns the HTTP status and error code of a callback
// error, and ok false for any other error (a server fault).
func CallbackErrorStatus(err error) (status int, code string, ok bool) {
	for _, e := range callbackErrors {
		if errors.Is(err, e.err) {
			return e.status, e.code, true
		}
	}
	return 0, "", false
}

// Errors of identifiers and configuration.
var (
	// ErrInvalidSubscriptionID: see ValidateSubscriptionID.
	ErrInvalidSubscriptionID = errors.New("subscription: invalid subscription id")
	// ErrInvalidStreamPath: see ValidateStreamPath.
	ErrInvalidStreamPath = errors.New("subscription: invalid stream path")
	// ErrInvalidConsumerID: see ParseConsumerID.
	ErrInvalidConsumerID = errors.New("subscription: invalid consumer id")
	// ErrInvalidKey: a token key or key file is malformed.
	ErrInvalidKey = errors.New("subscription: invalid token key")
)
