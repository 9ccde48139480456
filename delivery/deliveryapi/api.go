package deliveryapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"reflect"
	"strings"
	"time"
	"unicode"

	"github.com/heraldstreams/herald/auth"
	"github.com/heraldstreams/herald/delivery"
	"github.com/heraldstreams/herald/delivery/dispatch"
	"github.com/heraldstreams/herald/httpapi/apierr"
	"github.com/heraldstreams/herald/internal/httpjson"
)

// APIPrefix is where the delivery API lives.
const APIPrefix = "/_herald/v1/"

// maxRequestBody caps request bodies other than events.
const maxRequestBody = 1 << 20

// API serves the event delivery API under /_herald/v1/ (JSON in and out;
// errors are {"error": {"code", "message", "field"}} with a 4xx for every
// mistake of the caller).
type API struct {
	e   *dispatch.Engine
	log *slog.Logger
}

// NewAPI returns the API of an engine.
func NewAPI(e *dispatch.Engine) *API { return &API{e: e, log: e.Logger()} }

// Routes are the delivery API's routes, each behind the scope it needs
// and, for a route with an {id}, the check that the caller's tenant may
// see what it names (see visibleEndpoint).
func (a *API) Routes() []auth.Route {
	var (
		epRead   = auth.Rule{Scope: auth.ScopeEndpointsRead}
		epWrite  = auth.Rule{Scope: auth.ScopeEndpointsWrite}
		dlvRead  = auth.Rule{Scope: auth.ScopeDeliveriesRead}
		dlvWrite = auth.Rule{Scope: auth.ScopeDeliveriesWrite}
		publish  = auth.Rule{Scope: auth.ScopeEventsPublish}
		// The catalogue is read like endpoints (whoever configures an
		// endpoint needs its types) and changed by the admin only.
		catalogue = auth.Rule{Scope: auth.ScopeAdmin}
	)
	var routes []auth.Route
	for _, r := range []struct {
		method string
		path   string
		rule   auth.Rule
		owner  owner
		fn     http.HandlerFunc
	}{
		{"POST", APIPrefix + "endpoints", epWrite, ownsNothing, a.createEndpoint},
		{"GET", APIPrefix + "endpoints", epRead, ownsNothing, a.listEndpoints},
		{"GET", APIPrefix + "endpoints/{id}", epRead, ownsEndpoint, a.getEndpoint},
		{"PATCH", APIPrefix + "endpoints/{id}", epWrite, ownsEndpoint, a.patchEndpoint},
		{"DELETE", APIPrefix + "endpoints/{id}", epWrite, ownsEndpoint, a.deleteEndpoint},
		{"POST", APIPrefix + "endpoints/{id}/rotate-secret", epWrite, ownsEndpoint, a.rotateSecret},
		{"POST", APIPrefix + "endpoints/{id}/test", epWrite, ownsEndpoint, a.testEndpoint},
		{"POST", APIPrefix + "endpoints/{id}/verify", epWrite, ownsEndpoint, a.verifyEndpoint},
		{"POST", APIPrefix + "endpoints/{id}/replay", dlvWrite, ownsEndpoint, a.replay},
		{"GET", APIPrefix + "endpoints/{id}/deliveries", dlvRead, ownsEndpoint, a.listDeliveries},
		{"GET", APIPrefix + "replays/{id}", dlvRead, ownsReplay, a.getReplay},
		{"GET", APIPrefix + "deliveries/{id}", dlvRead, ownsDelivery, a.getDelivery},
		{"POST", APIPrefix + "deliveries/{id}/retry", dlvWrite, ownsDelivery, a.retryDelivery},
		{"POST", APIPrefix + "events", publish, ownsNothing, a.publish},
		{"GET", APIPrefix + "events", dlvRead, ownsNothing, a.listEvents},
		{"GET", APIPrefix + "events/{id}", dlvRead, ownsEvent, a.getEvent},
		{"POST", APIPrefix + "event-types", catalogue, ownsNothing, a.installationWide(a.createEventType)},
		{"GET", APIPrefix + "event-types", epRead, ownsNothing, a.listEventTypes},
		{"GET", APIPrefix + "event-types/{name}", epRead, ownsNothing, a.getEventType},
		{"PATCH", APIPrefix + "event-types/{name}", catalogue, ownsNothing, a.installationWide(a.patchEventType)},
		{"DELETE", APIPrefix + "event-types/{name}", catalogue, ownsNothing, a.installationWide(a.deleteEventType)},
	} {
		if strings.Contains(r.path, "{id}") != (r.owner != ownsNothing) {
			panic("delivery: route " + r.path + ": an {id} route must say what the id names, and only one") // a programming error
		}
		routes = append(routes, auth.Route{Method: r.method, Pattern: r.path, Rule: r.rule, Handler: a.owned(r.owner, r.fn)})
	}
	return routes
}

// Error codes the API's handlers give besides the validation codes (see
// delivery.Code); the codes of the store's and the engine's errors are
// the one error table's (package apierr).
const (
	CodeInvalidJSON  delivery.Code = "INVALID_JSON"
	CodeBodyTooLarge delivery.Code = "PAYLOAD_TOO_LARGE"
)

// errBadCursor: a list's cursor is not a next_cursor value it gave.
var errBadCursor = badRequest(delivery.CodeInvalidParameter, "cursor", "cursor must be a next_cursor value of a previous page")

func badRequest(code delivery.Code, field, format string, args ...any) *httpjson.Error {
	return httpjson.BadRequest(string(code), field, format, args...)
}

// fail answers err from the one error table, and logs a server fault.
func (a *API) fail(w http.ResponseWriter, r *http.Request, err error) { apierr.Fail(w, r, a.log, err) }

func writeJSON(w http.ResponseWriter, status int, v any) { httpjson.Write(w, status, v) }

// readBody reads a JSON request body of at most limit bytes. An empty
// body is allowed when emptyOK.
func readBody(w http.ResponseWriter, r *http.Request, limit int64, emptyOK bool) ([]byte, error) {
	// The body must parse as JSON whatever its Content-Type: refusing
	// curl's default form type would only get in the way.
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	if err != nil {
		var mb *http.MaxBytesError
		if errors.As(err, &mb) {
			return nil, &httpjson.Error{Status: http.StatusRequestEntityTooLarge, Code: string(CodeBodyTooLarge), Message: fmt.Sprintf("the body is over %d bytes", limit)}
		}
		return nil, badRequest(CodeInvalidJSON, "", "the body could not be read")
	}
	if len(bytes.TrimSpace(body)) == 0 {
		if emptyOK {
			return nil, nil
		}
		return nil, badRequest(CodeInvalidJSON, "", "a JSON body is required")
	}
	return body, nil
}

// decodeBody reads a required JSON request body of at most limit bytes
// and decodes it strictly (see decodeStrict) into v.
func decodeBody(w http.ResponseWriter, r *http.Request, limit int64, v any) error {
	body, err := readBody(w, r, limit, false)
	if err != nil {
		return err
	}
	return decodeStrict(body, v)
}

// decodeStrict decodes JSON into v, refusing unknown fields (a misspelt
// option would otherwise silently do nothing) and trailing data.
func decodeStrict(body []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return jsonError(err, reflect.TypeOf(v))
	}
	// Not dec.More: it reports false for a stray ']' or '}'.
	if len(bytes.TrimSpace(body[dec.InputOffset():])) > 0 {
		return badRequest(CodeInvalidJSON, "", "the body has data after the JSON value")
	}
	return nil
}

// jsonError turns a decode error into the API's error, naming the field
// (a JSON path) and what it must be as declared in target's type.
func jsonError(err error, target reflect.Type) error {
	var ve *delivery.ValidationError
	if errors.As(err, &ve) {
		return ve
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		field := jsonField(te.Field)
		got, _, _ := strings.Cut(te.Value, " ") // "number 1.5": the kind of JSON value given
		want := te.Type
		if declared := fieldType(target, field); declared != nil {
			want = declared // an array or object whose item is wrong: name the whole
		}
		if field == "" {
			return badRequest(CodeInvalidJSON, "", "the body must be %s, not a JSON %s", describeType(want), got)
		}
		return badRequest(CodeInvalidJSON, field, "%s must be %s (found a JSON %s)", field, describeType(want), got)
	}
	msg := err.Error()
	if field, ok := strings.CutPrefix(msg, "json: unknown field "); ok {
		field = strings.Trim(field, `"`)
		return badRequest(delivery.CodeUnknownField, field, "unknown field %q", field)
	}
	return badRequest(CodeInvalidJSON, "", "the body is not valid JSON: %s", strings.TrimPrefix(msg, "json: "))
}

// jsonField is the JSON path of a decode error's field without the Go
// names of embedded structs (the API's JSON names are lower case).
func jsonField(path string) string {
	var out []string
	for seg := range strings.SplitSeq(path, ".") {
		if seg != "" && !unicode.IsUpper(rune(seg[0])) {
			out = append(out, seg)
		}
	}
	return strings.Join(out, ".")
}

// fieldType returns the declared type of the field at a JSON path (dot
// separated) of t, looking into embedded structs, or nil.
func fieldType(t reflect.Type, path string) reflect.Type {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if path == "" || t == nil {
		return t
	}
	name, rest, _ := strings.Cut(path, ".")
	if t.Kind() != reflect.Struct {
		return nil
	}
	for i := range t.NumField() {
		f := t.Field(i)
		tag, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch {
		case f.Anonymous && tag == "":
			if ft := fieldType(f.Type, path); ft != nil {
				return ft
			}
		case tag == name || (tag == "" && f.Name == name):
			if rest == "" {
				return f.Type
			}
			return fieldType(f.Type, rest)
		}
	}
	return nil
}

// describeType names what a Go type accepts in JSON, in the API user's
// words.
func describeType(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a whole number"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.String {
			return "an array of strings"
		}
		return "an array"
	case reflect.Map:
		if t.Elem().Kind() == reflect.String {
			return "an object of string values"
		}
		return "an object"
	case reflect.Struct:
		return "a JSON object"
	}
	return "another kind of JSON value"
}

// listQuery checks the query of a list route (known parameters besides
// cursor and limit) and returns it with the page size.
func listQuery(r *http.Request, known ...string) (url.Values, int, error) {
	if err := checkQuery(r, append(known, "cursor", "limit")...); err != nil {
		return nil, 0, err
	}
	q := r.URL.Query()
	limit, err := parseLimit(q.Get("limit"))
	return q, limit, err
}

// pageOf returns the views of a page of items read with one more than
// limit, and the next_cursor: the key of the page's last item when there
// is more.
func pageOf[T, V any](items []T, limit int, key func(*T) string, view func(*T) V) ([]V, *string) {
	out := []V{}
	for i := range items {
		if i == limit {
			next := key(&items[i-1])
			return out, &next
		}
		out = append(out, view(&items[i]))
	}
	return out, nil
}

// checkQuery refuses query parameters the route does not know.
func checkQuery(r *http.Request, known ...string) error { return httpjson.CheckQuery(r, known...) }

func formatTime(t time.Time) *string {
	if t.IsZero() {
		return nil
	}
	s := t.UTC().Format(time.RFC3339Nano)
	return &s
}

// duration is a time.Duration written as a Go duration string ("12.5ms").
type duration time.Duration

func (d duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

// pathID returns the {id} segment of /_herald/v1/<collection>/{id}[/...].
// It reads the path itself rather than Request.PathValue, because a
// server that picks the handler with ServeMux.Handler (as httpapi does)
// does not fill path values.
func pathID(r *http.Request) string {
	rest := strings.TrimPrefix(r.URL.Path, APIPrefix)
	_, rest, _ = strings.Cut(rest, "/")
	id, _, _ := strings.Cut(rest, "/")
	return id
}

// UnmarshalJSON reads a Go duration string.
func (d *duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	v, err := time.ParseDuration(s)
	*d = duration(v)
	return err
}
