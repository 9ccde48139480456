package subscription

import (
	"errors"
)

// Callback errors (docs/subscriptions.md, Errors). Decide, ParseCallbackRequest
// and Keyring.Verify return them wrapped with a message that says what was
// wrong; CallbackErrorCode tells them from a server fault.
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

// callbackErrors are the errors of the callback protocol, and the 413 of
// an oversized body, each with its code: a callback that fails with one of
// them is the client's mistake, any other error a server fault. The code
// names the outcome in the engine's metrics; the HTTP status and answer
// come from Herald's one error table (httpapi/apierr), whose test checks
// that it has a row for each of these with the same code.
var callbackErrors = []struct {
	err  error
	code string
}{
	{ErrInvalidRequest, CodeInvalidRequest},
	{ErrTokenExpired, CodeTokenExpired},
	{ErrTokenInvalid, CodeTokenInvalid},
	{ErrAlreadyClaimed, CodeAlreadyClaimed},
	{ErrInvalidOffset, CodeInvalidOffset},
	{ErrStaleEpoch, CodeStaleEpoch},
	{ErrConsumerGone, CodeConsumerGone},
	{ErrStreamForbidden, CodeForbidden},
	{ErrBodyTooLarge, CodeBodyTooLarge},
}

// CallbackErrors returns the errors of the callback protocol.
func CallbackErrors() []error {
	errs := make([]error, len(callbackErrors))
	for i, e := range callbackErrors {
		errs[i] = e.err
	}
	return errs
}

// CallbackErrorCode returns the code of a callback error, and ok false
// for any other error (a server fault).
func CallbackErrorCode(err error) (code string, ok bool) {
	for _, e := range callbackErrors {
		if errors.Is(err, e.err) {
			return e.code, true
		}
	}
	return "", false
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
