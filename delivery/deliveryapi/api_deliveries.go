package deliveryapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/heraldstreams/herald/delivery"
	"github.com/heraldstreams/herald/delivery/dispatch"
	"github.com/heraldstreams/herald/httpapi/apierr"
	"github.com/heraldstreams/herald/protocol"
	"github.com/heraldstreams/herald/store"
)

// deliveryJSON is a delivery as the API shows it.
type deliveryJSON struct {
	ID             string  `json:"id"`
	EndpointID     string  `json:"endpoint_id"`
	EventID        string  `json:"event_id"`
	EventType      string  `json:"event_type"`
	Stream         string  `json:"stream"`
	Offset         string  `json:"offset"`
	Status         string  `json:"status"`
	AttemptCount   int     `json:"attempt_count"`
	NextAttemptAt  *string `json:"next_attempt_at"`
	LastStatusCode int     `json:"last_status_code"`
	LastError      string  `json:"last_error,omitempty"`
	BatchID        string  `json:"batch_id,omitempty"`
	CreatedAt      *string `json:"created_at"`
	UpdatedAt      *string `json:"updated_at"`
	FinishedAt     *string `json:"finished_at"`
	// Lease is there while a replica holds the delivery (in flight).
	Lease    *leaseJSON      `json:"lease,omitempty"`
	Payload  json.RawMessage `json:"payload,omitempty"`
	Attempts []attemptJSON   `json:"attempts,omitempty"`
}

// leaseJSON is the claim a replica holds on a delivery it is sending: the
// replica (as its heartbeat and logs name it) and when the lease ends,
// after which another replica may send the delivery again.
type leaseJSON struct {
	Replica string  `json:"replica"`
	Until   *string `json:"until"`
}

type attemptJSON struct {
	At           *string  `json:"at"`
	StatusCode   int      `json:"status_code"`
	ResponseBody string   `json:"response_body"`
	Latency      duration `json:"latency"`
	Error        string   `json:"error,omitempty"`
	BatchID      string   `json:"batch_id,omitempty"`
}

// deliveryView is d as the API shows it at now: a lease that ended
// before now (its holder died, and no one claimed it again yet) is not
// shown, as nobody is sending the delivery.
func deliveryView(d *store.Delivery, now time.Time) deliveryJSON {
	v := deliveryJSON{
		ID: d.ID, EndpointID: d.EndpointID, EventID: d.EventID, EventType: d.EventType, Stream: d.Stream,
		Offset: protocol.FormatOffset(d.Position), Status: d.Status, AttemptCount: d.Attempts,
		LastStatusCode: d.LastStatusCode, LastError: d.LastError, BatchID: d.BatchID,
		CreatedAt: formatTime(d.CreatedAt), UpdatedAt: formatTime(d.UpdatedAt), FinishedAt: formatTime(d.FinishedAt),
	}
	if d.Status == store.DeliveryPending || d.Status == store.DeliveryFailed {
		v.NextAttemptAt = formatTime(d.NextAttemptAt)
		if d.LeaseOwner != "" && d.LeaseUntil.After(now) {
			v.Lease = &leaseJSON{Replica: d.LeaseOwner, Until: formatTime(d.LeaseUntil)}
		}
	}
	if len(d.Body) > 0 {
		v.Payload = d.Body
	}
	return v
}

type listDeliveriesJSON struct {
	Data       []deliveryJSON `json:"data"`
	NextCursor *string        `json:"next_cursor"`
	// Total is how many deliveries pass the filters, on every page; only
	// with ?count=true.
	Total *int `json:"total,omitempty"`
}

var deliveryStatuses = map[string]bool{
	store.DeliveryPending: true, store.DeliveryFailed: true, store.DeliveryDelivered: true, store.DeliveryExhausted: true,
}

func (a *API) listDeliveries(w http.ResponseWriter, r *http.Request) {
	q, limit, err := listQuery(r, "status", "event_type", "since", "until", "count")
	if err != nil {
		a.fail(w, r, err)
		return
	}
	var count bool
	switch q.Get("count") {
	case "", "false":
	case "true":
		count = true
	default:
		a.fail(w, r, badRequest(delivery.CodeInvalidParameter, "count", "count is true or false"))
		return
	}
	p := &store.DeliveryListParams{EndpointID: pathID(r), Status: q.Get("status"), EventType: q.Get("event_type")}
	if p.Status != "" && !deliveryStatuses[p.Status] {
		a.fail(w, r, badRequest(delivery.CodeInvalidParameter, "status", "status is one of pending, failed, delivered, exhausted"))
		return
	}
	if p.EventType != "" {
		if err := delivery.ValidateEventType(p.EventType); err != nil {
			a.fail(w, r, err)
			return
		}
	}
	if err := timeRange(q, &p.Since, &p.Until); err != nil {
		a.fail(w, r, err)
		return
	}
	// A cursor is the id of the last delivery of a page.
	p.Before = q.Get("cursor")
	p.Limit = limit + 1
	ds, err := a.e.Store().DeliveryList(r.Context(), p)
	if errors.Is(err, store.ErrInvalidCursor) {
		err = errBadCursor
	}
	if err != nil {
		a.fail(w, r, err)
		return
	}
	var out listDeliveriesJSON
	now := a.e.Now()
	out.Data, out.NextCursor = pageOf(ds, limit, func(d *store.Delivery) string { return d.ID },
		func(d *store.Delivery) deliveryJSON { return deliveryView(d, now) })
	if count {
		n, err := a.e.Store().DeliveryCount(r.Context(), p)
		if err != nil {
			a.fail(w, r, err)
			return
		}
		out.Total = &n
	}
	writeJSON(w, http.StatusOK, out)
}

func (a *API) getDelivery(w http.ResponseWriter, r *http.Request) {
	if err := checkQuery(r); err != nil {
		a.fail(w, r, err)
		return
	}
	ctx := r.Context()
	d, err := a.e.Store().DeliveryGet(ctx, pathID(r))
	if err != nil {
		a.fail(w, r, err)
		return
	}
	atts, err := a.e.Store().DeliveryAttempts(ctx, d.ID)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	v := deliveryView(d, a.e.Now())
	v.Attempts = attemptViews(atts)
	writeJSON(w, http.StatusOK, v)
}

// timeRange reads the since and until parameters of a list (RFC 3339)
// into since and until, left zero when absent.
func timeRange(q url.Values, since, until *time.Time) error {
	for _, f := range []struct {
		name string
		dst  *time.Time
	}{{"since", since}, {"until", until}} {
		if s := q.Get(f.name); s != "" {
			t, err := time.Parse(time.RFC3339, s)
			if err != nil {
				return badRequest(delivery.CodeInvalidParameter, f.name, "%s must be RFC 3339, like 2026-01-02T15:04:05Z", f.name)
			}
			*f.dst = t
		}
	}
	return nil
}

// attemptViews are a delivery's attempts as the API shows them.
func attemptViews(atts []store.DeliveryAttempt) []attemptJSON {
	out := []attemptJSON{}
	for _, at := range atts {
		out = append(out, attemptJSON{At: formatTime(at.At), StatusCode: at.StatusCode,
			ResponseBody: string(at.ResponseBody), Latency: duration(at.Latency), Error: at.Error,
			BatchID: at.BatchID})
	}
	return out
}

func (a *API) retryDelivery(w http.ResponseWriter, r *http.Request) {
	if _, err := readBody(w, r, maxRequestBody, true); err != nil {
		a.fail(w, r, err)
		return
	}
	d, err := a.e.RetryDelivery(r.Context(), pathID(r))
	if err != nil {
		a.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusAccepted, deliveryView(d, a.e.Now()))
}

// publishJSON is the answer to POST /v1/events.
type publishJSON struct {
	Event     delivery.Event `json:"event"`
	Stream    string         `json:"stream"`
	Offset    string         `json:"offset"`
	Duplicate bool           `json:"duplicate"`
	// DeprecatedType: the enforced catalogue marks the type deprecated.
	DeprecatedType bool `json:"deprecated_type,omitempty"`
}

func (a *API) publish(w http.ResponseWriter, r *http.Request) {
	limit := int64(a.e.Config().MaxEventBytes) + 4096 // room for stream and tenant
	body, err := readBody(w, r, limit, false)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(body, &fields); err != nil || fields == nil {
		a.fail(w, r, badRequest(delivery.CodeInvalidEvent, "", "an event is a JSON object: {\"type\", \"data\", and optionally \"id\", \"timestamp\", \"stream\", \"tenant\"}"))
		return
	}
	var stream, tenant string
	for name, dst := range map[string]*string{"stream": &stream, "tenant": &tenant} {
		if raw, ok := fields[name]; ok {
			if err := json.Unmarshal(raw, dst); err != nil {
				a.fail(w, r, badRequest(delivery.CodeInvalidEvent, name, "%s must be a string", name))
				return
			}
			delete(fields, name)
		}
	}
	rest, err := json.Marshal(fields)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	ev, err := delivery.ParseEvent(rest, &delivery.ParseEventParams{Now: a.e.Now(), MaxBytes: a.e.Config().MaxEventBytes})
	if err != nil {
		a.fail(w, r, err)
		return
	}
	if tenant, err = stampTenant(r.Context(), tenant); err != nil {
		a.fail(w, r, err)
		return
	}
	if stream, err = publishStream(r.Context(), stream, a.e.Config().DefaultStream); err != nil {
		a.fail(w, r, err)
		return
	}
	if tenant, err = streamTenant(a.e.Config().TenantStreamPrefix, stream, tenant); err != nil {
		a.fail(w, r, err)
		return
	}
	res, err := a.e.Publish(r.Context(), &dispatch.PublishParams{Event: ev, Stream: stream, Tenant: tenant})
	if err != nil {
		a.fail(w, r, publishError(err))
		return
	}
	status := http.StatusAccepted
	if res.Duplicate {
		status = http.StatusOK
	}
	writeJSON(w, status, publishJSON{Event: res.Event, Stream: res.Stream, Offset: res.Offset, Duplicate: res.Duplicate,
		DeprecatedType: res.DeprecatedType})
}

// parseOffset reads a replay offset: "-1" (the start) or an offset token.
func parseOffset(s string) (int64, error) {
	o, err := protocol.ParseOffset(s)
	if err != nil || o.Kind == protocol.OffsetKindNow {
		return 0, badRequest(delivery.CodeInvalidParameter, "offset", "offset must be -1 or an offset token like 0000000000000000_0000000000000000")
	}
	if o.Kind == protocol.OffsetKindStart {
		return 0, nil
	}
	return o.Position, nil
}

// publishError names the stream conditions a publish meets as the
// publisher's, not a stream route's: a missing or deleted stream is 409
// STREAM_GONE (not 404 STREAM_NOT_FOUND), a stream of another content
// type 409 STREAM_NOT_JSON (not CONTENT_TYPE_MISMATCH). The store's
// words stay in the message.
func publishError(err error) error {
	switch {
	case errors.Is(err, store.ErrNotFound), errors.Is(err, store.ErrStreamGone):
		return fmt.Errorf("%w: %s", apierr.ErrPublishStreamGone, apierr.PublicMessage(err))
	case errors.Is(err, store.ErrContentTypeMismatch):
		return fmt.Errorf("%w: %s", apierr.ErrPublishStreamNotJSON, apierr.PublicMessage(err))
	}
	return err
}
