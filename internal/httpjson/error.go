package httpjson

import (
	"fmt"
	"net/http"
	"slices"
)

// Error is a condition of Herald's API with its HTTP status and JSON code:
// the one error type every route answers with. The stream routes, the
// subscription, key, delivery and stats APIs and access control return
// it, and the one error table (package apierr) turns every other error
// into one.
type Error struct {
	Status  int
	Code    string
	Message string
	// Field names the input the error is about; "" for none.
	Field string
	// CurrentHolder and Generation: see Detail.
	CurrentHolder string
	Generation    *int64
	// Header, when set, adds the headers the condition's protocol
	// requires (Stream-Closed, the Producer-* headers, Retry-After) to
	// the response before it is written.
	Header func(http.Header)
}

// Error is the message: what the client is told.
func (e *Error) Error() string { return e.Message }

// Detail is what the error body says.
func (e *Error) Detail() Detail {
	return Detail{Code: e.Code, Message: e.Message, Field: e.Field, CurrentHolder: e.CurrentHolder, Generation: e.Generation}
}

// Write writes e as the response: the headers of its condition, its
// status and its error body. It is the one writer of error answers.
// Headers that described a body the handler meant to send
// (Content-Length, ETag) are dropped: an error body is never cut short
// nor cached as that body. A HEAD response has the headers and no body.
func (e *Error) Write(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	if e.Header != nil {
		e.Header(h)
	}
	h["Content-Type"] = valJSON
	h["Cache-Control"] = valNoStore
	h.Del("Content-Length")
	h.Del("Etag")
	w.WriteHeader(e.Status)
	if r.Method == http.MethodHead {
		return
	}
	body, err := Encode(Body{Error: e.Detail()})
	if err != nil {
		return // strings always encode
	}
	_, _ = w.Write(body) // a failed write means the client is gone
}

// BadRequest is a 400 with code about field (none: ""), its message
// formatted from format and args.
func BadRequest(code, field, format string, args ...any) *Error {
	return &Error{Status: http.StatusBadRequest, Code: code, Field: field, Message: fmt.Sprintf(format, args...)}
}

// Internal is the answer to a server fault: the client learns nothing of
// it (the server logs it).
var Internal = &Error{Status: http.StatusInternalServerError, Code: "INTERNAL", Message: "internal error"}

// CheckQuery refuses a query parameter the route does not know, so a
// misspelt filter is an error and not a silently wider answer.
func CheckQuery(r *http.Request, known ...string) error {
	for name := range r.URL.Query() {
		if !slices.Contains(known, name) {
			return BadRequest("UNKNOWN_PARAMETER", name, "unknown query parameter %q", name)
		}
	}
	return nil
}

// StoreUnavailable is the answer while the database cannot be reached
// (the store's ErrUnavailable): the request did nothing and may be sent
// again after Retry-After. The error table answers it on every route,
// and access control when a credential cannot be read.
var StoreUnavailable = &Error{Status: http.StatusServiceUnavailable, Code: "STORE_UNAVAILABLE",
	Message: "the database cannot be reached; retry later", Header: retryAfterStore}

// StoreRetryAfter is the Retry-After, in seconds, of StoreUnavailable: a
// restart of the database takes seconds, and a client that retries
// sooner only adds load while it comes back.
const StoreRetryAfter = "1"

var valStoreRetryAfter = []string{StoreRetryAfter}

func retryAfterStore(h http.Header) { h["Retry-After"] = valStoreRetryAfter }
