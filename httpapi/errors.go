package httpapi

import (
	"net/http"

	"github.com/heraldstreams/herald/httpapi/apierr"
	"github.com/heraldstreams/herald/internal/httpjson"
)

// Errors httpapi itself detects.
var (
	errReservedPath             = &httpjson.Error{Status: http.StatusNotFound, Code: "RESERVED_PATH", Message: "this path is reserved for Herald's own API; streams cannot live under /_herald/ or /callback/"}
	errNoRoute                  = &httpjson.Error{Status: http.StatusNotFound, Code: "NOT_FOUND", Message: "Herald's API has no route at this path; see /_herald/v1/openapi.json"}
	errSubscriptionsUnavailable = &httpjson.Error{Status: http.StatusNotFound, Code: "SUBSCRIPTIONS_UNAVAILABLE", Message: "this server does not serve the subscription API"}
	errMethodNotAllowed         = &httpjson.Error{Status: http.StatusMethodNotAllowed, Code: "METHOD_NOT_ALLOWED", Message: "streams accept GET, HEAD, POST, PUT, DELETE and OPTIONS"}
	errInvalidPath              = &httpjson.Error{Status: http.StatusBadRequest, Code: "INVALID_PATH", Message: "a stream path must be absolute, without empty, '.' or '..' segments, control characters or encoded slashes, and at most 1024 bytes"}
	errBodyTooLarge             = &httpjson.Error{Status: http.StatusRequestEntityTooLarge, Code: "PAYLOAD_TOO_LARGE", Message: "the request body exceeds the server's limit"}
	errBodyRead                 = &httpjson.Error{Status: http.StatusBadRequest, Code: "INVALID_BODY", Message: "the request body could not be read"}
	errEmptyAppend              = &httpjson.Error{Status: http.StatusBadRequest, Code: "EMPTY_BODY", Message: "an append needs a body, unless it closes the stream with Stream-Closed: true"}
	errMissingContentType       = &httpjson.Error{Status: http.StatusBadRequest, Code: "MISSING_CONTENT_TYPE", Message: "an append with a body needs a Content-Type"}
	errMultipleOffsets          = &httpjson.Error{Status: http.StatusBadRequest, Code: "INVALID_OFFSET", Message: "the offset parameter must be given at most once"}
	errOffsetRequired           = &httpjson.Error{Status: http.StatusBadRequest, Code: "OFFSET_REQUIRED", Message: "live reads need an offset parameter"}
	errInvalidLive              = &httpjson.Error{Status: http.StatusBadRequest, Code: "INVALID_LIVE_MODE", Message: "live must be long-poll or sse"}
	errForkHeaders              = &httpjson.Error{Status: http.StatusBadRequest, Code: "INVALID_FORK_HEADERS", Message: "Stream-Fork-Offset and Stream-Fork-Sub-Offset need Stream-Forked-From, and a sub-offset above 0 needs Stream-Fork-Offset"}
	errInvalidForkSource        = &httpjson.Error{Status: http.StatusBadRequest, Code: "INVALID_FORK_SOURCE", Message: "Stream-Forked-From must be the path of a stream on this server"}
	errShuttingDown             = &httpjson.Error{Status: http.StatusServiceUnavailable, Code: "SHUTTING_DOWN", Message: "the server is shutting down; retry on another instance or later"}
	errNonCanonicalPath         = &httpjson.Error{Status: http.StatusBadRequest, Code: "NON_CANONICAL_PATH", Message: "the reserved prefixes /_herald/ and /callback/ must be spelled literally, without percent-encoding, '.' segments or repeated slashes"}
	errServerBusy               = &httpjson.Error{Status: http.StatusServiceUnavailable, Code: "SERVER_BUSY", Message: "the server holds as many request bodies in memory as it may; retry shortly",
		Header: func(h http.Header) { h["Retry-After"] = valRetryAfter }}
	errBodyTimeout = &httpjson.Error{Status: http.StatusRequestTimeout, Code: "BODY_TIMEOUT", Message: "the request body arrived too slowly"}
)

// errorBody is the JSON body of every error response.
type errorBody = httpjson.Body

// fail writes the error response for err from the one error table, with
// the headers the protocol requires for some of them (docs/protocol.md,
// Append), and logs a server fault.
func (s *Server) fail(w http.ResponseWriter, r *http.Request, err error) {
	apierr.Fail(w, r, s.log, err)
}

// writeJSON writes a JSON response.
func writeJSON(w http.ResponseWriter, status int, v any) { httpjson.Write(w, status, v) }
