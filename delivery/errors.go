package delivery

import (
	"errors"
	"fmt"
)

// ErrInvalid is matched (errors.Is) by every *ValidationError: the input is
// the caller's mistake, and the API answers 400 (413 for
// CodeEventTooLarge) with the error's Code.
var ErrInvalid = errors.New("delivery: invalid input")

// Code is a stable, machine-readable validation error code, used as the JSON
// error code of the API.
type Code string

// Validation error codes.
const (
	// CodeInvalidEvent: the event is not a JSON object, or a field has the
	// wrong JSON type.
	CodeInvalidEvent Code = "invalid_event"
	// CodeEventTooLarge: the event is over the size cap.
	CodeEventTooLarge Code = "event_too_large"
	// CodeUnknownField: the event has a top-level field other than id,
	// type, timestamp and data.
	CodeUnknownField Code = "unknown_field"
	// CodeInvalidEventID: the event id is empty, too long or has a
	// character outside printable ASCII.
	CodeInvalidEventID Code = "invalid_event_id"
	// CodeInvalidEventType: the event type is missing or malformed.
	CodeInvalidEventType Code = "invalid_event_type"
	// CodeInvalidTimestamp: the timestamp is not RFC 3339.
	CodeInvalidTimestamp Code = "invalid_timestamp"
	// CodeInvalidEventTypePattern: an event_types entry is not "*",
	// "prefix.*" or an exact event type.
	CodeInvalidEventTypePattern Code = "invalid_event_type_pattern"
	// CodeInvalidStreamPattern: a streams entry is not a valid glob.
	CodeInvalidStreamPattern Code = "invalid_stream_pattern"
	// CodeInvalidFilter: the field filter does not follow the filter
	// syntax.
	CodeInvalidFilter Code = "invalid_filter"
	// CodeInvalidRetrySchedule: a retry schedule entry is malformed,
	// negative or over the maximum, or there are too many or none.
	CodeInvalidRetrySchedule Code = "invalid_retry_schedule"
	// CodeInvalidRateLimit: rate_limit is negative, not finite or over the
	// maximum.
	CodeInvalidRateLimit Code = "invalid_rate_limit"
	// CodeInvalidMaxInFlight: max_in_flight is negative or over the
	// maximum.
	CodeInvalidMaxInFlight Code = "invalid_max_in_flight"
	// CodeInvalidOrdering: ordering is neither "none" nor "stream".
	CodeInvalidOrdering Code = "invalid_ordering"
	// CodeInvalidHeader: a custom header has an invalid name or value, or
	// is one Herald sets itself.
	CodeInvalidHeader Code = "invalid_header"
	// CodeInvalidDescription: the description is too long or not UTF-8.
	CodeInvalidDescription Code = "invalid_description"
	// CodeInvalidName: the name is too long, not UTF-8 or has control
	// characters.
	CodeInvalidName Code = "invalid_name"
	// CodeInvalidProfile: no profile of that name.
	CodeInvalidProfile Code = "invalid_profile"
	// CodeInvalidFailurePolicy: failure_policy is neither "standard" nor
	// "retry_all".
	CodeInvalidFailurePolicy Code = "invalid_failure_policy"
	// CodeInvalidTimeout: timeout_ms is negative or over the
	// installation's attempt timeout.
	CodeInvalidTimeout Code = "invalid_timeout"
	// CodeInvalidBatch: batch.max_events or batch.max_wait_ms is out of
	// its range.
	CodeInvalidBatch Code = "invalid_batch"
	// CodeInvalidTenant: the tenant is too long, not UTF-8 or has control
	// characters.
	CodeInvalidTenant Code = "invalid_tenant"
	// CodeURLRefused: the endpoint URL is refused (see webhook.RefusedError,
	// which the error wraps).
	CodeURLRefused Code = "url_refused"
	// CodeInvalidSecret: a signing secret is not "whsec_" followed by the
	// base64 of 24 to 64 bytes.
	CodeInvalidSecret Code = "invalid_secret"
)

// ValidationError says which input is wrong and why.
type ValidationError struct {
	Code Code
	// Field is the JSON name of the offending input, with a path or index
	// where that helps ("event_types[2]", "headers.X-Foo").
	Field string
	// Message is a human readable explanation.
	Message string
	// Err is the underlying error, if any.
	Err error
}

func (e *ValidationError) Error() string {
	if e.Field == "" {
		return "delivery: " + e.Message
	}
	return "delivery: " + e.Field + ": " + e.Message
}

// Is makes errors.Is(err, ErrInvalid) true.
func (e *ValidationError) Is(target error) bool { return target == ErrInvalid }

// Unwrap returns the underlying error.
func (e *ValidationError) Unwrap() error { return e.Err }

func invalid(code Code, field, format string, args ...any) *ValidationError {
	return &ValidationError{Code: code, Field: field, Message: fmt.Sprintf(format, args...)}
}
