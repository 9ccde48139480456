package apierr

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/heraldstreams/herald/internal/httpjson"
	"github.com/heraldstreams/herald/protocol"
	"github.com/heraldstreams/herald/store"
	"github.com/heraldstreams/herald/subscription"
)

// TestOneCodePerCondition: the table names each condition once (one
// sentinel or typed error per row, each with one code), and a code has
// one status wherever it is used, unless the row says why it differs.
func TestOneCodePerCondition(t *testing.T) {
	t.Parallel()
	statuses := map[string]map[int]bool{}
	explained := map[string]bool{}
	for i, row := range Table {
		if (row.Err == nil) == (row.As == nil) {
			t.Errorf("row %d (%s) must have exactly one of Err and As", i, row.Code)
		}
		for _, other := range Table[:i] {
			if row.Err != nil && other.Err == row.Err {
				t.Errorf("%v is in the error table twice", row.Err)
			}
			if row.As != nil && other.As != nil && other.Code == row.Code {
				t.Errorf("two typed errors have the code %s", row.Code)
			}
		}
		if statuses[row.Code] == nil {
			statuses[row.Code] = map[int]bool{}
		}
		statuses[row.Code][row.Status] = true
		explained[row.Code] = explained[row.Code] || row.Why != ""
	}
	for code, s := range statuses {
		if len(s) > 1 && !explained[code] {
			t.Errorf("code %s has the statuses %v and no row says why", code, s)
		}
	}
}

// TestTableCodesAreDocumented: every code of the table is documented
// with its status: in an ErrorCodes…<status> schema of the OpenAPI
// document (Herald's own API), or in the row of its status of the error
// table of docs/protocol.md (the stream routes, which the OpenAPI
// document leaves out).
func TestTableCodesAreDocumented(t *testing.T) {
	t.Parallel()
	documented := map[string]bool{} // "409 STREAM_GONE"
	raw, err := os.ReadFile("../../api/openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Components struct {
			Schemas map[string]struct {
				Properties struct {
					Error struct {
						Properties struct {
							Code struct{ Enum []string } `json:"code"`
						} `json:"properties"`
					} `json:"error"`
				} `json:"properties"`
			} `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	for name, schema := range doc.Components.Schemas {
		if !strings.HasPrefix(name, "ErrorCodes") || len(name) < 3 {
			continue
		}
		status := name[len(name)-3:]
		for _, code := range schema.Properties.Error.Properties.Code.Enum {
			documented[status+" "+code] = true
		}
	}
	protocolDoc, err := os.ReadFile("../../docs/protocol.md")
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(string(protocolDoc)) {
		status, codes, ok := strings.Cut(strings.TrimPrefix(line, "| "), " | ")
		if !ok || len(status) != 3 || !strings.HasPrefix(line, "| ") {
			continue
		}
		for _, field := range strings.Split(codes, "`") {
			documented[status+" "+field] = true
		}
	}
	for _, row := range Table {
		for _, status := range []int{row.Status, row.CreateStatus} {
			if status != 0 && !documented[strconv.Itoa(status)+" "+row.Code] {
				t.Errorf("%d %s is in neither an ErrorCodes…%d schema of api/openapi.json nor the %d row of docs/protocol.md's errors",
					status, row.Code, status, status)
			}
		}
	}
}

// TestConditionsOfTwoRoutes: a condition the stream routes and the
// delivery or callback APIs both meet has each route's documented code
// and status, from rows of its own.
func TestConditionsOfTwoRoutes(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		method string
		err    error
		status int
		code   string
	}{
		{http.MethodGet, store.ErrNotFound, 404, "STREAM_NOT_FOUND"},
		{http.MethodPost, fmt.Errorf("%w: stream not found", ErrPublishStreamGone), 409, "STREAM_GONE"},
		{http.MethodGet, store.ErrStreamGone, 410, "STREAM_GONE"},
		{http.MethodPut, store.ErrStreamGone, 409, "STREAM_GONE"},
		{http.MethodPost, store.ErrContentTypeMismatch, 409, "CONTENT_TYPE_MISMATCH"},
		{http.MethodPost, ErrPublishStreamNotJSON, 409, "STREAM_NOT_JSON"},
		{http.MethodGet, protocol.ErrInvalidOffset, 400, "INVALID_OFFSET"},
		{http.MethodPost, fmt.Errorf("%w: acks[0] is beyond the tail", subscription.ErrInvalidOffset), 409, "INVALID_OFFSET"},
	} {
		e, known := Classify(httptest.NewRequest(c.method, "/s", nil), c.err)
		if !known || e.Status != c.status || e.Code != c.code {
			t.Errorf("%s %v = %d %s (known %v), want %d %s", c.method, c.err, e.Status, e.Code, known, c.status, c.code)
		}
	}
}

// TestCallbackAnswersAreTheProtocols: every error of the callback
// protocol has a row in the table, with the code the subscription rules
// give it and the status of docs/subscriptions.md (Errors), and any other
// error is a server fault there, even one the table knows.
func TestCallbackAnswersAreTheProtocols(t *testing.T) {
	t.Parallel()
	req := httptest.NewRequest(http.MethodPost, "/callback/c", nil)
	statuses := map[error]int{
		subscription.ErrInvalidRequest: 400, subscription.ErrTokenExpired: 401, subscription.ErrTokenInvalid: 401,
		subscription.ErrAlreadyClaimed: 409, subscription.ErrInvalidOffset: 409, subscription.ErrStaleEpoch: 409,
		subscription.ErrConsumerGone: 410, subscription.ErrStreamForbidden: 403, subscription.ErrBodyTooLarge: 413,
	}
	for _, err := range subscription.CallbackErrors() {
		code, _ := subscription.CallbackErrorCode(err)
		e, known := Callback(req, fmt.Errorf("%w: why", err))
		if !known || e.Status != statuses[err] || e.Code != code {
			t.Errorf("%v = %d %s (known %v), want %d %s", err, e.Status, e.Code, known, statuses[err], code)
		}
		if strings.Contains(e.Message, "subscription: ") {
			t.Errorf("%v: message %q names a package", err, e.Message)
		}
	}
	if e, known := Callback(req, store.ErrClosedStore); known || e.Status != 500 {
		t.Errorf("a closed store on the callback route = %d (known %v), want a 500", e.Status, known)
	}
	if e, known := Callback(req, fmt.Errorf("%w: dial tcp: connection refused", store.ErrUnavailable)); !known || e.Status != 503 ||
		e.Code != "STORE_UNAVAILABLE" {
		t.Errorf("a database away on the callback route = %d %s (known %v), want 503 STORE_UNAVAILABLE", e.Status, e.Code, known)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if e, known := Callback(req.WithContext(ctx), fmt.Errorf("read consumer: %w", context.Canceled)); !known || e.Status != 499 {
		t.Errorf("a consumer gone from its callback = %d (known %v), want a 499, not a fault", e.Status, known)
	}
}

// TestStoreUnavailable: a database that cannot be reached is 503
// STORE_UNAVAILABLE with Retry-After on every route, whatever wraps it,
// with a message that says nothing of the database's address, and is not
// logged as a fault.
func TestStoreUnavailable(t *testing.T) {
	t.Parallel()
	var logged strings.Builder
	err := fmt.Errorf("postgres: append: %w", fmt.Errorf("%w: failed to connect to `user=herald database=herald`: 10.0.0.7:5432: connection refused",
		store.ErrUnavailable))
	for _, method := range []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodDelete} {
		w := httptest.NewRecorder()
		Fail(w, httptest.NewRequest(method, "/s", nil), slogTo(&logged), err)
		if w.Code != 503 || w.Header().Get("Retry-After") != httpjson.StoreRetryAfter || !strings.Contains(w.Body.String(), `"STORE_UNAVAILABLE"`) ||
			strings.Contains(w.Body.String(), "10.0.0.7") {
			t.Errorf("%s: %d %v %s", method, w.Code, w.Header(), w.Body)
		}
	}
	if logged.Len() != 0 {
		t.Errorf("a database away was logged as a fault: %s", logged.String())
	}
}

// TestFailWritesHeadersAndLogsFaults: Fail answers a typed error with
// the headers its protocol requires, a client gone away with 499, and
// logs only what the table does not know.
func TestFailWritesHeadersAndLogsFaults(t *testing.T) {
	t.Parallel()
	var logged strings.Builder
	log := slogTo(&logged)
	w := httptest.NewRecorder()
	Fail(w, httptest.NewRequest(http.MethodPost, "/s", nil), log, fmt.Errorf("append: %w", &store.ClosedError{Tail: 7}))
	if w.Code != 409 || w.Header().Get("Stream-Closed") != "true" || w.Header().Get("Stream-Next-Offset") != protocol.FormatOffset(7) ||
		!strings.Contains(w.Body.String(), `"STREAM_CLOSED"`) {
		t.Errorf("closed stream: %d %v %s", w.Code, w.Header(), w.Body)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	w = httptest.NewRecorder()
	Fail(w, httptest.NewRequest(http.MethodGet, "/s", nil).WithContext(ctx), log, context.Canceled)
	if w.Code != 499 {
		t.Errorf("client gone: %d", w.Code)
	}
	if logged.Len() != 0 {
		t.Errorf("known errors were logged: %s", logged.String())
	}
	w = httptest.NewRecorder()
	Fail(w, httptest.NewRequest(http.MethodGet, "/s", nil), log, errors.New("disk full"))
	if w.Code != 500 || !strings.Contains(w.Body.String(), `"INTERNAL"`) || strings.Contains(w.Body.String(), "disk") ||
		!strings.Contains(logged.String(), "disk full") {
		t.Errorf("server fault: %d %s, logged %q", w.Code, w.Body, logged.String())
	}
}

func slogTo(w io.Writer) *slog.Logger { return slog.New(slog.NewTextHandler(w, nil)) }
