package httpapi

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/heraldstreams/herald/glob"
	"github.com/heraldstreams/herald/internal/httpjson"
	"github.com/heraldstreams/herald/protocol"
	"github.com/heraldstreams/herald/store"
	"github.com/heraldstreams/herald/subscription"
	"github.com/heraldstreams/herald/subscription/wake"
	"github.com/heraldstreams/herald/webhook"
)

// apiError is an error with its HTTP status and JSON code.
type apiError struct {
	status  int
	code    string
	message string
}

func (e *apiError) Error() string { return e.message }

// Errors httpapi itself detects.
var (
	errReservedPath             = &apiError{http.StatusNotFound, "RESERVED_PATH", "this path is reserved for Herald's own API; streams cannot live under /_herald/ or /callback/"}
	errNoRoute                  = &apiError{http.StatusNotFound, "NOT_FOUND", "Herald's API has no route at this path; see /_herald/v1/openapi.json"}
	errSubscriptionsUnavailable = &apiError{http.StatusNotFound, "SUBSCRIPTIONS_UNAVAILABLE", "this server does not serve the subscription API"}
	errMethodNotAllowed         = &apiError{http.StatusMethodNotAllowed, "METHOD_NOT_ALLOWED", "streams accept GET, HEAD, POST, PUT, DELETE and OPTIONS"}
	errInvalidPath              = &apiError{http.StatusBadRequest, "INVALID_PATH", "a stream path must be absolute, without empty, '.' or '..' segments, control characters or encoded slashes, and at most 1024 bytes"}
	errBodyTooLarge             = &apiError{http.StatusRequestEntityTooLarge, "PAYLOAD_TOO_LARGE", "the request body exceeds the server's limit"}
	errBodyRead                 = &apiError{http.StatusBadRequest, "INVALID_BODY", "the request body could not be read"}
	errEmptyAppend              = &apiError{http.StatusBadRequest, "EMPTY_BODY", "an append needs a body, unless it closes the stream with Stream-Closed: true"}
	errMissingContentType       = &apiError{http.StatusBadRequest, "MISSING_CONTENT_TYPE", "an append with a body needs a Content-Type"}
	errMultipleOffsets          = &apiError{http.StatusBadRequest, "INVALID_OFFSET", "the offset parameter must be given at most once"}
	errOffsetRequired           = &apiError{http.StatusBadRequest, "OFFSET_REQUIRED", "live reads need an offset parameter"}
	errInvalidLive              = &apiError{http.StatusBadRequest, "INVALID_LIVE_MODE", "live must be long-poll or sse"}
	errForkHeaders              = &apiError{http.StatusBadRequest, "INVALID_FORK_HEADERS", "Stream-Fork-Offset and Stream-Fork-Sub-Offset need Stream-Forked-From, and a sub-offset above 0 needs Stream-Fork-Offset"}
	errInvalidForkSource        = &apiError{http.StatusBadRequest, "INVALID_FORK_SOURCE", "Stream-Forked-From must be the path of a stream on this server"}
	errShuttingDown             = &apiError{http.StatusServiceUnavailable, "SHUTTING_DOWN", "the server is shutting down; retry on another instance or later"}
	errNonCanonicalPath         = &apiError{http.StatusBadRequest, "NON_CANONICAL_PATH", "the reserved prefixes /_herald/ and /callback/ must be spelled literally, without percent-encoding, '.' segments or repeated slashes"}
	errServerBusy               = &apiError{http.StatusServiceUnavailable, "SERVER_BUSY", "the server holds as many request bodies in memory as it may; retry shortly"}
	errBodyTimeout              = &apiError{http.StatusRequestTimeout, "BODY_TIMEOUT", "the request body arrived too slowly"}
	errInternal                 = &apiError{http.StatusInternalServerError, "INTERNAL", "internal error"}
)

// errorTable maps every sentinel error a route of httpapi can meet (the
// protocol's, the store's, and the subscription and consumer services')
// to one status and code, first match first. The create status
// overrides status for PUT, where a soft-deleted path or fork source is
// a conflict, not a 410 (docs/protocol.md, Delete). A wrapped row's
// message is the whole error's, which says what was wrong (which field,
// which URL and why); the others' is the sentinel's own.
var errorTable = []struct {
	err          error
	status       int
	createStatus int
	code         string
	wrapped      bool
}{
	// The subscription and consumer services.
	{subscription.ErrInvalidSubscriptionID, http.StatusBadRequest, 0, "INVALID_SUBSCRIPTION_ID", true},
	{glob.ErrInvalidPattern, http.StatusBadRequest, 0, "INVALID_PATTERN", true},
	{wake.ErrPatternForbidden, http.StatusForbidden, 0, "FORBIDDEN", true},
	{subscription.ErrInvalidRequest, http.StatusBadRequest, 0, "INVALID_REQUEST", true},
	{webhook.ErrURLRefused, http.StatusBadRequest, 0, "URL_REFUSED", true},
	{wake.ErrSubscriptionExists, http.StatusConflict, 0, "SUBSCRIPTION_EXISTS", true},
	{wake.ErrSubscriptionNotFound, http.StatusNotFound, 0, "SUBSCRIPTION_NOT_FOUND", true},
	{wake.ErrConsumerNotFound, http.StatusNotFound, 0, "CONSUMER_NOT_FOUND", true},

	{protocol.ErrInvalidOffset, http.StatusBadRequest, 0, "INVALID_OFFSET", false},
	{protocol.ErrInvalidTTL, http.StatusBadRequest, 0, "INVALID_TTL", false},
	{protocol.ErrInvalidExpiresAt, http.StatusBadRequest, 0, "INVALID_EXPIRES_AT", false},
	{protocol.ErrTTLAndExpiresAt, http.StatusBadRequest, 0, "CONFLICTING_EXPIRY", false},
	{protocol.ErrProducerHeaders, http.StatusBadRequest, 0, "INVALID_PRODUCER_HEADERS", false},
	{protocol.ErrInvalidSubOffset, http.StatusBadRequest, 0, "INVALID_FORK_SUB_OFFSET", false},
	{protocol.ErrInvalidContentType, http.StatusBadRequest, 0, "INVALID_CONTENT_TYPE", false},
	{protocol.ErrInvalidJSON, http.StatusBadRequest, 0, "INVALID_JSON", false},
	{protocol.ErrEmptyJSONArray, http.StatusBadRequest, 0, "EMPTY_JSON_ARRAY", false},

	{store.ErrNotFound, http.StatusNotFound, 0, "STREAM_NOT_FOUND", false},
	{store.ErrStreamGone, http.StatusGone, http.StatusConflict, "STREAM_GONE", false},
	{store.ErrStreamExists, http.StatusConflict, 0, "STREAM_EXISTS", false},
	{store.ErrContentTypeMismatch, http.StatusConflict, 0, "CONTENT_TYPE_MISMATCH", false},
	{store.ErrSeqRegression, http.StatusConflict, 0, "SEQUENCE_CONFLICT", false},
	{store.ErrProducerEpochSeq, http.StatusBadRequest, 0, "INVALID_PRODUCER_EPOCH_SEQ", false},
	{store.ErrForkSourceGone, http.StatusConflict, 0, "FORK_SOURCE_GONE", false},
	{store.ErrForkOffsetBeyondTail, http.StatusBadRequest, 0, "FORK_OFFSET_BEYOND_TAIL", false},
	{store.ErrForkSubOffset, http.StatusBadRequest, 0, "INVALID_FORK_SUB_OFFSET", false},
	{store.ErrPositionBeyondTail, http.StatusBadRequest, 0, "OFFSET_BEYOND_TAIL", false},
	{store.ErrClosedStore, http.StatusServiceUnavailable, 0, "UNAVAILABLE", false},
}

// errorBody is the JSON body of every error response.
type errorBody = httpjson.Body

// fail writes the error response for err, with the headers the protocol
// requires for some of them (docs/protocol.md, Append).
func (s *Server) fail(w http.ResponseWriter, r *http.Request, err error) {
	h := w.Header()
	status, code, msg := http.StatusInternalServerError, errInternal.code, errInternal.message

	var (
		ae      *apiError
		tooLong *protocol.HeaderTooLongError
		closed  *store.ClosedError
		stale   *store.ProducerEpochStaleError
		gap     *store.ProducerSeqGapError
	)
	switch {
	case errors.As(err, &ae):
		status, code, msg = ae.status, ae.code, ae.message
		if ae == errServerBusy {
			h["Retry-After"] = valRetryAfter
		}
	case errors.As(err, &tooLong):
		status, code, msg = http.StatusBadRequest, "HEADER_TOO_LONG", publicMessage(tooLong)
	case errors.As(err, &closed):
		status, code, msg = http.StatusConflict, "STREAM_CLOSED", "the stream is closed"
		h[hdrStreamClosed] = valTrue
		h.Set(hdrNextOffset, protocol.FormatOffset(closed.Tail))
	case errors.As(err, &stale):
		status, code, msg = http.StatusForbidden, "PRODUCER_EPOCH_STALE", "the producer epoch is older than the stream's"
		h.Set(hdrProducerEpoch, strconv.FormatInt(stale.Current, 10))
	case errors.As(err, &gap):
		status, code, msg = http.StatusConflict, "PRODUCER_SEQ_GAP", "sequence conflict: the producer skipped a sequence number (expected "+
			strconv.FormatInt(gap.Expected, 10)+", received "+strconv.FormatInt(gap.Received, 10)+")"
		h.Set(hdrProducerExpected, strconv.FormatInt(gap.Expected, 10))
		h.Set(hdrProducerReceived, strconv.FormatInt(gap.Received, 10))
	case errors.Is(err, context.Canceled) && r.Context().Err() != nil:
		// The client went away; nobody reads this response.
		status, code, msg = 499, "CLIENT_CLOSED", "the client closed the request"
	default:
		matched := false
		for _, e := range errorTable {
			if errors.Is(err, e.err) {
				status, code, msg = e.status, e.code, publicMessage(e.err)
				if e.wrapped {
					msg = trimPackage(err.Error())
				}
				if r.Method == http.MethodPut && e.createStatus != 0 {
					status = e.createStatus
				}
				matched = true
				break
			}
		}
		if !matched {
			s.log.ErrorContext(r.Context(), "request failed", "method", r.Method, "path", r.URL.Path, "err", err)
		}
	}
	writeErrorBody(w, r, status, code, msg)
}

// publicMessage is the message of a sentinel error without the name of the
// package that defines it ("store: stream not found" becomes "stream not
// found"): clients need the reason, not Herald's layout.
func publicMessage(err error) string {
	msg := err.Error()
	for _, prefix := range []string{"store: ", "protocol: "} {
		if strings.HasPrefix(msg, prefix) {
			return msg[len(prefix):]
		}
	}
	return msg
}

// writeErrorBody writes a JSON error response.
func writeErrorBody(w http.ResponseWriter, r *http.Request, status int, code, msg string) {
	httpjson.WriteError(w, r, status, httpjson.Detail{Code: code, Message: msg})
}

// writeJSON writes a JSON response.
func writeJSON(w http.ResponseWriter, status int, v any) { httpjson.Write(w, status, v) }
