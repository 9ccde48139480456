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
	// CodeInvalidParameter: a query parameter or a parameter of an
	// operation has a value that is not allowed.
	CodeInvalidParameter Code = "INVALID_PARAMETER"
	// CodeInvalidEvent: the event is not a JSON object, or a field has the
	// wrong JSON type.
	CodeInvalidEvent Code = "INVALID_EVENT"
	// CodeEventTooLarge: the event is over the size cap.
	CodeEventTooLarge Code = "EVENT_TOO_LARGE"
	// CodeUnknownField: the event has a top-level field other than id,
	// type, timestamp and data.
	CodeUnknownField Code = "UNKNOWN_FIELD"
	// CodeInvalidEventID: the event id is empty, too long or has a
	// character outside printable ASCII.
	CodeInvalidEventID Code = "INVALID_EVENT_ID"
	// CodeInvalidEventType: the event type is missing or malformed.
	CodeInvalidEventType Code = "INVALID_EVENT_TYPE"
	// CodeInvalidEventTypePattern: an event_types entry is not "*",
	// "prefix.*" or an exact event type.
	CodeInvalidEventTypePattern Code = "INVALID_EVENT_TYPE_PATTERN"
	// CodeInvalidStreamPattern: a streams entry is not a valid glob.
	CodeInvalidStreamPattern Code = "INVALID_STREAM_PATTERN"
	// CodeInvalidFilter: the field filter does not follow the filter
	// syntax.
	CodeInvalidFilter Code = "INVALID_FILTER"
	// CodeInvalidRetrySchedule: a retry schedule entry is malformed,
	// negative or over the maximum, or there are too many or none.
	CodeInvalidRetrySchedule Code = "INVALID_RETRY_SCHEDULE"
	// CodeInvalidRateLimit: rate_limit is negative, not finite or over the
	// maximum.
	CodeInvalidRateLimit Code = "INVALID_RATE_LIMIT"
	// CodeInvalidMaxInFlight: max_in_flight is negative or over the
	// maximum.
	CodeInvalidMaxInFlight Code = "INVALID_MAX_IN_FLIGHT"
	// CodeInvalidOrdering: ordering is neither "none" nor "stream".
	CodeInvalidOrdering Code = "INVALID_ORDERING"
	// CodeInvalidHeader: a custom header has an invalid name or value, or
	// is one Herald sets itself.
	CodeInvalidHeader Code = "INVALID_HEADER"
	// CodeInvalidDescription: the description is too long or not UTF-8.
	CodeInvalidDescription Code = "INVALID_DESCRIPTION"
	// CodeInvalidName: the name is too long, not UTF-8 or has control
	// characters.
	CodeInvalidName Code = "INVALID_NAME"
	// CodeInvalidProfile: no profile of that name.
	CodeInvalidProfile Code = "INVALID_PROFILE"
	// CodeInvalidFailurePolicy: failure_policy is neither "standard" nor
	// "retry_all".
	CodeInvalidFailurePolicy Code = "INVALID_FAILURE_POLICY"
	// CodeInvalidTimeout: timeout_ms is negative or over the
	// installation's attempt timeout.
	CodeInvalidTimeout Code = "INVALID_TIMEOUT"
	// CodeInvalidBatch: batch.max_events or batch.max_wait_ms is out of
	// its range.
	CodeInvalidBatch Code = "INVALID_BATCH"
	// CodeInvalidTenant: the tenant is too long, not UTF-8 or has control
	// characters.
	CodeInvalidTenant Code = "INVALID_TENANT"
	// CodeURLRefused: the endpoint URL is refused (see webhook.RefusedError,
	// which the error wraps).
	CodeURLRefused Code = "URL_REFUSED"
	// CodeInvalidSecret: a signing secret is not "whsec_" followed by the
	// base64 of 24 to 64 bytes.
	CodeInvalidSecret Code = "INVALID_SECRET"
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

func Invalid(code Code, field, format string, args ...any) *ValidationError {
	return &ValidationError{Code: code, Field: field, Message: fmt.Sprintf(format, args...)}
}
