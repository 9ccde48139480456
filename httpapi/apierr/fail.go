package apierr

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strings"

	"github.com/heraldstreams/herald/delivery"
	"github.com/heraldstreams/herald/internal/httpjson"
	"github.com/heraldstreams/herald/store"
	"github.com/heraldstreams/herald/subscription"
)

// Classify returns the answer to err on request r: the *httpjson.Error
// err is or wraps, a delivery validation error's code, or the table's
// row. known is false for a server fault, answered 500 INTERNAL.
func Classify(r *http.Request, err error) (e *httpjson.Error, known bool) {
	var (
		he *httpjson.Error
		ve *delivery.ValidationError
		ce *subscription.ClaimedError
	)
	switch {
	case errors.As(err, &he):
		return he, true
	case errors.As(err, &ce):
		// The protocol's ALREADY_CLAIMED names the lease's holder and
		// generation beside the code.
		g := ce.Generation
		return &httpjson.Error{Status: http.StatusConflict, Code: subscription.CodeAlreadyClaimed, Message: "another worker holds the lease",
			CurrentHolder: ce.Holder, Generation: &g}, true
	case errors.As(err, &ve):
		// The delivery rules name their own codes (docs/api.md); only an
		// event or schema over its size limit is not a 400.
		status := http.StatusBadRequest
		if ve.Code == delivery.CodeEventTooLarge || ve.Code == delivery.CodeSchemaTooLarge {
			status = http.StatusRequestEntityTooLarge
		}
		return &httpjson.Error{Status: status, Code: string(ve.Code), Message: ve.Message, Field: ve.Field}, true
	case errors.Is(err, context.Canceled) && r.Context().Err() != nil:
		// The client went away; nobody reads this response.
		return &httpjson.Error{Status: 499, Code: "CLIENT_CLOSED", Message: "the client closed the request"}, true
	}
	for i := range Table {
		row := &Table[i]
		e := &httpjson.Error{Status: row.Status, Code: row.Code}
		if row.As != nil {
			msg, header, ok := row.As(err)
			if !ok {
				continue
			}
			e.Message, e.Header = msg, header
		} else {
			if !errors.Is(err, row.Err) {
				continue
			}
			e.Message = PublicMessage(row.Err)
			if row.Wrapped {
				e.Message = PublicMessage(err)
			}
		}
		if r.Method == http.MethodPut && row.CreateStatus != 0 {
			e.Status = row.CreateStatus
		}
		return e, true
	}
	return httpjson.Internal, false
}

// Fail answers err on r with its status, code and headers, and logs a
// server fault (an error the table does not know) to log.
func Fail(w http.ResponseWriter, r *http.Request, log *slog.Logger, err error) {
	e, known := Classify(r, err)
	if !known {
		log.ErrorContext(r.Context(), "request failed", "method", r.Method, "path", r.URL.Path, "err", err)
	}
	e.Write(w, r)
}

// Failer is Fail writing to log, for a service that takes its error
// writer as a function (the key API, below the engines whose errors the
// table names).
func Failer(log *slog.Logger) func(http.ResponseWriter, *http.Request, error) {
	return func(w http.ResponseWriter, r *http.Request, err error) { Fail(w, r, log, err) }
}

// Callback is the answer to a callback error (docs/subscriptions.md,
// Errors): its status, code and message from the table, 503
// STORE_UNAVAILABLE while the database cannot be reached (the consumer
// retries the callback), or 499 when the consumer went away; known is
// false for any other error the callback protocol does not name, a
// server fault.
func Callback(r *http.Request, err error) (e *httpjson.Error, known bool) {
	_, ok := subscription.CallbackErrorCode(err)
	gone := errors.Is(err, context.Canceled) && r.Context().Err() != nil
	if !ok && !gone && !errors.Is(err, store.ErrUnavailable) {
		return httpjson.Internal, false
	}
	return Classify(r, err)
}

// PublicMessage is the message of an error without the names of the
// packages that made it ("store: stream not found" becomes "stream not
// found"): clients need the reason, not Herald's layout.
func PublicMessage(err error) string {
	msg := err.Error()
	for _, prefix := range packagePrefixes {
		msg = strings.ReplaceAll(msg, prefix, "")
	}
	return msg
}

var packagePrefixes = []string{"store: ", "protocol: ", "delivery: ", "subscription: ", "webhook: ", "glob: "}
