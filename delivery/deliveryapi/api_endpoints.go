package deliveryapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/heraldstreams/herald/delivery"
	"github.com/heraldstreams/herald/delivery/dispatch"
	"github.com/heraldstreams/herald/store"
)

// endpointRequest is the body of POST /v1/endpoints (and, merged over the
// stored configuration, of PATCH).
type endpointRequest struct {
	delivery.EndpointConfig
	Active *bool  `json:"active,omitempty"`
	Secret string `json:"secret,omitempty"`
	Verify bool   `json:"verify,omitempty"`
}

// MaskedHeaderValue stands for every custom header value in API responses.
const MaskedHeaderValue = "***"

// endpointJSON is an endpoint as the API shows it. Secret is set on
// create and rotation only.
type endpointJSON struct {
	ID   string `json:"id"`
	Type string `json:"type"`
	URL  string `json:"url"`
	// Config is a broker endpoint's destination, its credentials masked;
	// null for a webhook.
	Config                  json.RawMessage       `json:"config"`
	Name                    string                `json:"name"`
	EventTypes              []string              `json:"event_types"`
	Streams                 []string              `json:"streams"`
	Filter                  json.RawMessage       `json:"filter"`
	Description             string                `json:"description"`
	Tenant                  string                `json:"tenant"`
	Active                  bool                  `json:"active"`
	Status                  string                `json:"status"`
	RateLimit               float64               `json:"rate_limit"`
	MaxInFlight             int                   `json:"max_in_flight"`
	Ordering                string                `json:"ordering"`
	RetrySchedule           delivery.Schedule     `json:"retry_schedule"`
	Headers                 map[string]string     `json:"headers"`
	Profile                 string                `json:"profile"`
	FailurePolicy           string                `json:"failure_policy"`
	TimeoutMS               int64                 `json:"timeout_ms"`
	Batch                   *delivery.BatchConfig `json:"batch"`
	Verify                  bool                  `json:"verify"`
	VerifiedAt              *string               `json:"verified_at"`
	VerificationSentAt      *string               `json:"verification_sent_at"`
	VerificationError       string                `json:"verification_error,omitempty"`
	Secret                  string                `json:"secret,omitempty"`
	PreviousSecretExpiresAt *string               `json:"previous_secret_expires_at,omitempty"`
	ConsecutiveFailures     int                   `json:"consecutive_failures"`
	LastSuccessAt           *string               `json:"last_success_at"`
	LastFailureAt           *string               `json:"last_failure_at"`
	LastError               string                `json:"last_error,omitempty"`
	DisabledAt              *string               `json:"disabled_at"`
	DisabledReason          string                `json:"disabled_reason,omitempty"`
	CreatedAt               *string               `json:"created_at"`
	UpdatedAt               *string               `json:"updated_at"`
	// Health is set by GET /endpoints/{id} only.
	Health *healthJSON `json:"health,omitempty"`
	// DroppedHeaders, in a PATCH answer only, names the custom headers
	// whose values were dropped because the URL moved to another origin.
	DroppedHeaders []string `json:"dropped_headers,omitempty"`
}

func (a *API) endpointView(ep *store.Endpoint, withSecret bool) endpointJSON {
	v := endpointJSON{
		ID: ep.ID, URL: ep.URL, Name: ep.Name, EventTypes: ep.EventTypes, Streams: ep.Streams, Filter: ep.Filter,
		Description: ep.Description, Tenant: ep.Tenant, Active: ep.Active, Status: ep.Status(), RateLimit: ep.RateLimit,
		MaxInFlight: ep.MaxInFlight, Ordering: ep.Ordering, RetrySchedule: ep.RetrySchedule,
		ConsecutiveFailures: ep.Health.ConsecutiveFailures, LastSuccessAt: formatTime(ep.Health.LastSuccessAt),
		LastFailureAt: formatTime(ep.Health.LastFailureAt), LastError: ep.Health.LastError,
		DisabledAt: formatTime(ep.Health.DisabledAt), DisabledReason: ep.Health.DisabledReason,
		CreatedAt: formatTime(ep.CreatedAt), UpdatedAt: formatTime(ep.UpdatedAt),
		Profile: ep.Profile, FailurePolicy: ep.FailurePolicy, TimeoutMS: ep.Timeout.Milliseconds(),
		Verify: ep.Verification.Required, VerifiedAt: formatTime(ep.Verification.VerifiedAt),
		VerificationSentAt: formatTime(ep.Verification.SentAt), VerificationError: ep.Verification.Error,
		Batch: dispatch.BatchOf(ep), Type: ep.Type, Config: maskedConfig(ep),
	}
	if v.Type == "" {
		v.Type = delivery.DestinationWebhook
	}
	// Defaults are shown as they apply now.
	if v.Profile == "" {
		v.Profile = a.e.Config().Profiles.Default()
	}
	if v.FailurePolicy == "" {
		v.FailurePolicy = a.e.Config().FailurePolicy
	}
	if v.TimeoutMS == 0 {
		v.TimeoutMS = a.e.Config().Timeout.Milliseconds()
	}
	if v.Filter == nil {
		v.Filter = json.RawMessage("null")
	}
	// Header values are write-only (they are often the receiver's
	// credentials): the API shows their names only.
	v.Headers = make(map[string]string, len(ep.Headers))
	for name := range ep.Headers {
		v.Headers[name] = MaskedHeaderValue
	}
	if v.RetrySchedule == nil {
		v.RetrySchedule = a.e.Config().RetrySchedule
	}
	if withSecret {
		v.Secret = ep.Secret
		if ep.PreviousSecret != "" && a.e.Now().Before(ep.PreviousSecretUntil) {
			v.PreviousSecretExpiresAt = formatTime(ep.PreviousSecretUntil)
		}
	}
	return v
}

func (a *API) createEndpoint(w http.ResponseWriter, r *http.Request) {
	var req endpointRequest
	err := decodeBody(w, r, maxRequestBody, &req)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	if req.Tenant, err = stampTenant(r.Context(), req.Tenant); err != nil {
		a.fail(w, r, err)
		return
	}
	if err := a.brokerAllowed(r.Context(), req.Type); err != nil {
		a.fail(w, r, err)
		return
	}
	if err := patternsWithinReach(r.Context(), "streams", req.Streams); err != nil {
		a.fail(w, r, err)
		return
	}
	active := true
	if req.Active != nil {
		active = *req.Active
	}
	ep, err := a.e.CreateEndpoint(r.Context(), &dispatch.CreateEndpointParams{Config: req.EndpointConfig, Active: active, Secret: req.Secret, Verify: req.Verify})
	if err != nil {
		a.fail(w, r, err)
		return
	}
	w.Header().Set("Location", APIPrefix+"endpoints/"+ep.ID)
	writeJSON(w, http.StatusCreated, a.endpointView(ep, true))
}

type listEndpointsJSON struct {
	Data       []endpointJSON `json:"data"`
	NextCursor *string        `json:"next_cursor"`
}

func (a *API) listEndpoints(w http.ResponseWriter, r *http.Request) {
	q, limit, err := listQuery(r, "tenant", "status")
	if err != nil {
		a.fail(w, r, err)
		return
	}
	status := q.Get("status")
	if status != "" && !endpointStatuses[status] {
		a.fail(w, r, badRequest(delivery.CodeInvalidParameter, "status", "status is one of active, paused, disabled, pending"))
		return
	}
	if c := q.Get("cursor"); c != "" && !isEndpointID(c) {
		a.fail(w, r, errBadCursor)
		return
	}
	// A credential of a tenant lists its own tenant's endpoints whatever
	// ?tenant says.
	tenant, err := tenantOf(r.Context())
	if err != nil {
		a.fail(w, r, err)
		return
	}
	if tenant == "" {
		tenant = q.Get("tenant")
	}
	eps, err := a.e.Store().EndpointList(r.Context(), &store.EndpointListParams{After: q.Get("cursor"), Limit: limit + 1, Tenant: tenant, Status: status})
	if err != nil {
		a.fail(w, r, err)
		return
	}
	var out listEndpointsJSON
	out.Data, out.NextCursor = pageOf(eps, limit, func(ep *store.Endpoint) string { return ep.ID },
		func(ep *store.Endpoint) endpointJSON { return a.endpointView(ep, false) })
	writeJSON(w, http.StatusOK, out)
}

var endpointStatuses = map[string]bool{
	store.EndpointActive: true, store.EndpointPaused: true, store.EndpointDisabled: true, store.EndpointPending: true,
}

// isEndpointID reports whether s has the form of the ids CreateEndpoint
// gives ("ep_" and 24 lower-case hex digits).
func isEndpointID(s string) bool {
	hex, ok := strings.CutPrefix(s, "ep_")
	if !ok || len(hex) != 24 {
		return false
	}
	for i := range len(hex) {
		if c := hex[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

func parseLimit(s string) (int, error) {
	if s == "" {
		return 100, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 || n > 1000 {
		return 0, badRequest(delivery.CodeInvalidParameter, "limit", "limit must be an integer from 1 to 1000")
	}
	return n, nil
}

func (a *API) getEndpoint(w http.ResponseWriter, r *http.Request) {
	if err := checkQuery(r); err != nil {
		a.fail(w, r, err)
		return
	}
	ep, err := a.visibleEndpoint(r.Context(), pathID(r))
	if err != nil {
		a.fail(w, r, err)
		return
	}
	v := a.endpointView(ep, false)
	if v.Health, err = a.endpointHealth(r.Context(), ep); err != nil {
		a.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, v)
}

// patchable are the fields PATCH accepts.
var patchable = map[string]bool{
	"url": true, "event_types": true, "streams": true, "filter": true, "description": true, "tenant": true, "active": true,
	"rate_limit": true, "max_in_flight": true, "ordering": true, "retry_schedule": true, "headers": true,
	"name": true, "profile": true, "failure_policy": true, "timeout_ms": true,
	"batch": true, "type": true, "config": true,
}

func (a *API) patchEndpoint(w http.ResponseWriter, r *http.Request) {
	body, err := readBody(w, r, maxRequestBody, false)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	var patch map[string]json.RawMessage
	if err := json.Unmarshal(body, &patch); err != nil || patch == nil {
		a.fail(w, r, badRequest(CodeInvalidJSON, "", "a PATCH body is a JSON object of the fields to change"))
		return
	}
	for k := range patch {
		if !patchable[k] {
			msg := "unknown field %q"
			if k == "secret" {
				msg = "%q cannot be patched; use POST .../rotate-secret"
			}
			a.fail(w, r, badRequest(delivery.CodeUnknownField, k, msg, k))
			return
		}
	}
	// Only an explicit "active": true re-enables an endpoint the breaker
	// disabled; any other change leaves it disabled.
	reenable := string(bytes.TrimSpace(patch["active"])) == "true"
	ctx := r.Context()
	id := pathID(r)
	for range 3 {
		cur, err := a.visibleEndpoint(ctx, id)
		if err != nil {
			a.fail(w, r, err)
			return
		}
		// The stored configuration with the patch laid over it: a field set
		// to null goes back to its default.
		active := cur.Active
		merged := endpointRequest{EndpointConfig: dispatch.ConfigOf(cur), Active: &active}
		base, err := json.Marshal(merged)
		if err != nil {
			a.fail(w, r, err)
			return
		}
		var fields map[string]json.RawMessage
		if err := json.Unmarshal(base, &fields); err != nil {
			a.fail(w, r, err)
			return
		}
		for k, v := range patch {
			fields[k] = v
		}
		full, err := json.Marshal(fields)
		if err != nil {
			a.fail(w, r, err)
			return
		}
		var req endpointRequest
		if err := decodeStrict(full, &req); err != nil {
			a.fail(w, r, err)
			return
		}
		if req.Tenant, err = stampTenant(ctx, req.Tenant); err != nil {
			a.fail(w, r, err)
			return
		}
		// A tenant's credential may not change a broker endpoint, nor make
		// one, unless the installation allows it.
		for _, typ := range []string{cur.Type, req.Type} {
			if err := a.brokerAllowed(ctx, typ); err != nil {
				a.fail(w, r, err)
				return
			}
		}
		if _, ok := patch["streams"]; ok {
			if err := patternsWithinReach(ctx, "streams", req.Streams); err != nil {
				a.fail(w, r, err)
				return
			}
		}
		if req.Active != nil {
			active = *req.Active
		}
		clearOtherDestination(cur, &req.EndpointConfig, patch)
		// A masked value sent back (a client patching what it read) keeps
		// the stored value of that header.
		for name, v := range req.Headers {
			if stored, ok := cur.Headers[name]; ok && v == MaskedHeaderValue {
				req.Headers[name] = stored
			}
		}
		dropped := dropHeadersOnNewOrigin(cur, &req.EndpointConfig, patch)
		ep, err := a.e.UpdateEndpoint(ctx, &dispatch.UpdateEndpointParams{ID: id, Config: req.EndpointConfig, Active: active, Reenable: reenable, ExpectVersion: cur.Version})
		if errors.Is(err, store.ErrEndpointConflict) {
			continue
		}
		if err != nil {
			a.fail(w, r, err)
			return
		}
		v := a.endpointView(ep, false)
		v.DroppedHeaders = dropped
		writeJSON(w, http.StatusOK, v)
		return
	}
	a.fail(w, r, store.ErrEndpointConflict)
}

type verifyRequest struct {
	VerificationCode string `json:"verification_code,omitempty"`
}

// verifyEndpoint runs the ownership verification again: a new challenge,
// or, with {"verification_code"}, the check of the code the last
// challenge carried. 200 with the endpoint when verified; 422
// verification_failed otherwise.
func (a *API) verifyEndpoint(w http.ResponseWriter, r *http.Request) {
	var req verifyRequest
	if err := decodeOptional(w, r, &req); err != nil {
		a.fail(w, r, err)
		return
	}
	ep, err := a.e.VerifyEndpoint(r.Context(), pathID(r), req.VerificationCode)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, a.endpointView(ep, false))
}

func (a *API) deleteEndpoint(w http.ResponseWriter, r *http.Request) {
	if err := a.e.DeleteEndpoint(r.Context(), pathID(r)); err != nil {
		a.fail(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (a *API) rotateSecret(w http.ResponseWriter, r *http.Request) {
	if _, err := readBody(w, r, maxRequestBody, true); err != nil {
		a.fail(w, r, err)
		return
	}
	ep, err := a.e.RotateSecret(r.Context(), pathID(r))
	if err != nil {
		a.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, a.endpointView(ep, true))
}

type testRequest struct {
	// Type is the test event's type; "" sends herald.test.
	Type string          `json:"type,omitempty"`
	Data json.RawMessage `json:"data,omitempty"`
}

type testJSON struct {
	OK           bool           `json:"ok"`
	Event        delivery.Event `json:"event"`
	StatusCode   int            `json:"status_code"`
	ResponseBody string         `json:"response_body"`
	Latency      duration       `json:"latency"`
	Error        string         `json:"error,omitempty"`
}

// decodeOptional decodes a request body that may be empty into v.
func decodeOptional(w http.ResponseWriter, r *http.Request, v any) error {
	body, err := readBody(w, r, maxRequestBody, true)
	if err != nil || body == nil {
		return err
	}
	return decodeStrict(body, v)
}

func (a *API) testEndpoint(w http.ResponseWriter, r *http.Request) {
	var req testRequest
	if err := decodeOptional(w, r, &req); err != nil {
		a.fail(w, r, err)
		return
	}
	res, err := a.e.SendTest(r.Context(), pathID(r), req.Type, req.Data)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, testJSON{OK: res.OK(), Event: res.Event, StatusCode: res.StatusCode,
		ResponseBody: string(res.ResponseBody), Latency: duration(res.Latency), Error: res.Error})
}

type replayRequest struct {
	Since  string `json:"since,omitempty"`
	Until  string `json:"until,omitempty"`
	Offset string `json:"offset,omitempty"`
	Stream string `json:"stream,omitempty"`
	Status string `json:"status,omitempty"`
}

// replayJSON is a replay job as the API shows it.
type replayJSON struct {
	ID         string  `json:"id"`
	EndpointID string  `json:"endpoint_id"`
	State      string  `json:"state"`
	Queued     int     `json:"queued"`
	Total      int     `json:"total"`
	Truncated  bool    `json:"truncated"`
	Error      string  `json:"error,omitempty"`
	CreatedAt  *string `json:"created_at"`
	UpdatedAt  *string `json:"updated_at"`
	FinishedAt *string `json:"finished_at"`
}

func replayView(j *store.ReplayJob) replayJSON {
	return replayJSON{ID: j.ID, EndpointID: j.EndpointID, State: j.State, Queued: j.Queued, Total: j.Total, Truncated: j.Truncated,
		Error: j.Error, CreatedAt: formatTime(j.CreatedAt), UpdatedAt: formatTime(j.UpdatedAt), FinishedAt: formatTime(j.FinishedAt)}
}

// replayStatuses are the statuses a replay may requeue.
var replayStatuses = map[string]bool{store.DeliveryExhausted: true, store.DeliveryFailed: true}

func (a *API) replay(w http.ResponseWriter, r *http.Request) {
	var req replayRequest
	if err := decodeBody(w, r, maxRequestBody, &req); err != nil {
		a.fail(w, r, err)
		return
	}
	p, err := replayParams(&req)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	p.EndpointID = pathID(r)
	if err := a.replayWithinPaths(r.Context(), p); err != nil {
		a.fail(w, r, err)
		return
	}
	job, err := a.e.Replay(r.Context(), p)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusAccepted, replayView(job))
}

// replayParams checks a replay request.
func replayParams(req *replayRequest) (*dispatch.ReplayParams, error) {
	p := &dispatch.ReplayParams{Stream: req.Stream, Status: req.Status}
	if req.Since == "" && req.Offset == "" && req.Status == "" {
		return nil, badRequest(delivery.CodeInvalidParameter, "since",
			"give since (an RFC 3339 time), offset (a stream offset, -1 for the start) or status (exhausted or failed)")
	}
	if req.Status != "" && !replayStatuses[req.Status] {
		return nil, badRequest(delivery.CodeInvalidParameter, "status", "status is exhausted or failed")
	}
	for _, f := range []struct {
		name, value string
		dst         *time.Time
	}{{"since", req.Since, &p.Since}, {"until", req.Until, &p.Until}} {
		if f.value == "" {
			continue
		}
		t, err := time.Parse(time.RFC3339, f.value)
		if err != nil {
			return nil, badRequest(delivery.CodeInvalidParameter, f.name, "%s must be RFC 3339, like 2026-01-02T15:04:05Z", f.name)
		}
		*f.dst = t
	}
	if !p.Until.IsZero() && !p.Since.Before(p.Until) && !p.Since.IsZero() {
		return nil, badRequest(delivery.CodeInvalidParameter, "until", "until must be after since")
	}
	if req.Offset != "" {
		if req.Status != "" {
			return nil, badRequest(delivery.CodeInvalidParameter, "offset", "offset replays a stream; status requeues deliveries: give one of them")
		}
		pos, err := parseOffset(req.Offset)
		if err != nil {
			return nil, err
		}
		p.HasFrom, p.From = true, pos
	}
	if req.Stream != "" {
		if err := dispatch.ValidateStream(req.Stream); err != nil {
			return nil, err
		}
	}
	return p, nil
}

func (a *API) getReplay(w http.ResponseWriter, r *http.Request) {
	if err := checkQuery(r); err != nil {
		a.fail(w, r, err)
		return
	}
	job, err := a.e.ReplayJob(r.Context(), pathID(r))
	if err != nil {
		a.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, replayView(job))
}

// clearOtherDestination drops, when a PATCH changes an endpoint's type
// without naming it, what the old type had and the new one may not: the
// URL of a webhook made a broker endpoint, the config of a broker
// endpoint made a webhook.
func clearOtherDestination(cur *store.Endpoint, next *delivery.EndpointConfig, patch map[string]json.RawMessage) {
	if _, ok := patch["type"]; !ok || delivery.IsBroker(cur.Type) == delivery.IsBroker(next.Type) {
		return
	}
	if _, ok := patch["url"]; !ok && delivery.IsBroker(next.Type) {
		next.URL = ""
	}
	if _, ok := patch["config"]; !ok && !delivery.IsBroker(next.Type) {
		next.Config = nil
	}
}
