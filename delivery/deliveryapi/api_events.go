package deliveryapi

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strconv"
	"time"

	"github.com/heraldstreams/herald/auth"
	"github.com/heraldstreams/herald/delivery"
	"github.com/heraldstreams/herald/delivery/dispatch"
	"github.com/heraldstreams/herald/protocol"
	"github.com/heraldstreams/herald/store"
)

// The event log: GET /v1/events lists the recorded events newest first,
// GET /v1/events/{id} shows one with every delivery it made. A tenant is
// a boundary here as elsewhere: a credential of a tenant sees its
// tenant's events only (another tenant's id is 404 EVENT_NOT_FOUND), and
// a key made with stream paths the events of streams within them.

// eventJSON is a recorded event as the API shows it.
type eventJSON struct {
	ID        string  `json:"id"`
	Tenant    string  `json:"tenant"`
	Type      string  `json:"type"`
	Stream    string  `json:"stream"`
	Offset    string  `json:"offset"`
	CreatedAt *string `json:"created_at"`
	// Outcome is what became of its deliveries (store.Outcome...).
	Outcome    string         `json:"outcome"`
	Deliveries map[string]int `json:"deliveries"`
	// Event is the event as its endpoints receive it (GET of one event
	// only; null when its stream no longer holds it).
	Event *delivery.Event `json:"event,omitempty"`
	// Matched are its deliveries, one per endpoint it matched, with
	// their attempts (GET of one event only).
	Matched []deliveryJSON `json:"matched,omitempty"`
}

func eventView(e *store.EventRecord) eventJSON {
	return eventJSON{ID: e.ID, Tenant: e.Tenant, Type: e.Type, Stream: e.Stream, Offset: protocol.FormatOffset(e.Position),
		CreatedAt: formatTime(e.CreatedAt), Outcome: e.Outcome(), Deliveries: e.Deliveries}
}

type listEventsJSON struct {
	Data       []eventJSON `json:"data"`
	NextCursor *string     `json:"next_cursor"`
}

// eventOutcomes are the outcomes ?outcome= takes.
var eventOutcomes = map[string]bool{
	store.OutcomeNone: true, store.OutcomeExhausted: true, store.OutcomeFailed: true, store.OutcomePending: true, store.OutcomeDelivered: true,
}

// eventScanPerPage bounds the events one page filtered by outcome reads,
// per event of the page (and eventScanMax in all), so a rare outcome
// costs a short page with a next_cursor, never a scan of the whole log.
const (
	eventScanPerPage = 20
	eventScanMax     = 5000
)

// eventCursor is a next_cursor of the event log: the place's time (Unix
// ns), tenant and id, in URL-safe base64.
func eventCursor(c *store.EventCursor) string {
	b, _ := json.Marshal([]string{strconv.FormatInt(c.CreatedAt.UnixNano(), 10), c.Tenant, c.ID}) // strings always marshal
	return base64.RawURLEncoding.EncodeToString(b)
}

func parseEventCursor(s string) (*store.EventCursor, error) {
	b, err := base64.RawURLEncoding.DecodeString(s)
	var parts []string
	if err != nil || json.Unmarshal(b, &parts) != nil || len(parts) != 3 {
		return nil, errBadCursor
	}
	ns, err := strconv.ParseInt(parts[0], 10, 64)
	if err != nil {
		return nil, errBadCursor
	}
	return &store.EventCursor{CreatedAt: time.Unix(0, ns), Tenant: parts[1], ID: parts[2]}, nil
}

func (a *API) listEvents(w http.ResponseWriter, r *http.Request) {
	q, limit, err := listQuery(r, "type", "stream", "tenant", "since", "until", "outcome", "id")
	if err != nil {
		a.fail(w, r, err)
		return
	}
	ctx := r.Context()
	p := &store.EventListParams{Type: q.Get("type"), Stream: q.Get("stream"), Outcome: q.Get("outcome"), Limit: limit, Scan: limit}
	if p.Type != "" {
		if err := delivery.ValidateEventType(p.Type); err != nil {
			a.fail(w, r, err)
			return
		}
	}
	if p.Stream != "" {
		if err := dispatch.ValidateStream(p.Stream); err != nil {
			a.fail(w, r, err)
			return
		}
	}
	if p.Outcome != "" {
		if !eventOutcomes[p.Outcome] {
			a.fail(w, r, badRequest(delivery.CodeInvalidParameter, "outcome", "outcome is one of none, pending, failed, exhausted, delivered"))
			return
		}
		p.Scan = min(limit*eventScanPerPage, eventScanMax)
	}
	if err := timeRange(q, &p.Since, &p.Until); err != nil {
		a.fail(w, r, err)
		return
	}
	if c := q.Get("cursor"); c != "" {
		if p.Before, err = parseEventCursor(c); err != nil {
			a.fail(w, r, err)
			return
		}
	}
	if p.ByTenant, p.Tenant, err = eventTenant(ctx, q.Has("tenant"), q.Get("tenant")); err != nil {
		a.fail(w, r, err)
		return
	}
	if id := q.Get("id"); id != "" {
		// A search by id: the one event of that id in the tenant, if any.
		a.eventByID(w, r, p, id)
		return
	}
	res, err := a.e.Store().EventList(ctx, p)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	pr, err := principalOf(ctx)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	out := listEventsJSON{Data: []eventJSON{}}
	for i := range res.Events {
		if eventWithinPaths(pr, res.Events[i].Stream) {
			out.Data = append(out.Data, eventView(&res.Events[i]))
		}
	}
	if res.Next != nil {
		next := eventCursor(res.Next)
		out.NextCursor = &next
	}
	writeJSON(w, http.StatusOK, out)
}

// eventByID answers the list of the event id of p's tenant: it or nothing.
func (a *API) eventByID(w http.ResponseWriter, r *http.Request, p *store.EventListParams, id string) {
	out := listEventsJSON{Data: []eventJSON{}}
	ev, err := a.visibleEvent(r.Context(), store.EventKey{Tenant: p.Tenant, ID: id})
	switch {
	case err == nil:
		out.Data = append(out.Data, eventView(ev))
	case err != store.ErrEventNotFound:
		a.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, out)
}

// eventTenant is the tenant a request of the event log reads: a
// credential of a tenant reads its own whatever ?tenant says; one that
// sees every tenant reads ?tenant's when given ("" the platform's), else
// every tenant's.
func eventTenant(ctx context.Context, given bool, tenant string) (bool, string, error) {
	own, err := tenantOf(ctx)
	if err != nil || own != "" {
		return own != "", own, err
	}
	return given, tenant, nil
}

// visibleEvent returns the event of key when the request's credential may
// see it; else store.ErrEventNotFound, as for a missing one.
func (a *API) visibleEvent(ctx context.Context, key store.EventKey) (*store.EventRecord, error) {
	ev, err := a.e.Store().EventGet(ctx, key)
	if err != nil {
		return nil, err
	}
	pr, err := principalOf(ctx)
	if err != nil {
		return nil, err
	}
	if !eventWithinPaths(pr, ev.Stream) {
		return nil, store.ErrEventNotFound
	}
	return ev, nil
}

// eventWithinPaths reports whether a credential limited to stream paths
// reaches the stream of an event. A tenant's events are its own wherever
// the platform appended them (the tenant is the boundary), so a
// credential without paths of its own sees them all.
func eventWithinPaths(pr *auth.Principal, stream string) bool {
	return len(pr.Paths) == 0 || pr.AllowsPath(stream)
}

// eventKeyOf is the event a request of GET /v1/events/{id} names: the id
// in the credential's tenant, or, for one that sees every tenant, in
// ?tenant's ("" the platform's).
// A credential of a tenant naming another tenant finds nothing there.
func eventKeyOf(r *http.Request) (store.EventKey, error) {
	q := r.URL.Query()
	_, tenant, err := eventTenant(r.Context(), true, q.Get("tenant"))
	if err == nil && q.Has("tenant") && q.Get("tenant") != tenant {
		err = store.ErrEventNotFound
	}
	return store.EventKey{Tenant: tenant, ID: pathID(r)}, err
}

func (a *API) getEvent(w http.ResponseWriter, r *http.Request) {
	if err := checkQuery(r, "tenant"); err != nil {
		a.fail(w, r, err)
		return
	}
	ctx := r.Context()
	key, err := eventKeyOf(r)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	ev, err := a.visibleEvent(ctx, key)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	v := eventView(ev)
	if v.Event, err = a.e.StoredEvent(ctx, ev.Stream, ev.Position, key); err != nil {
		a.fail(w, r, err)
		return
	}
	ds, err := a.e.Store().EventDeliveries(ctx, key)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	now := a.e.Now()
	v.Matched = []deliveryJSON{}
	for i := range ds {
		dv := deliveryView(&ds[i], now)
		atts, err := a.e.Store().DeliveryAttempts(ctx, ds[i].ID)
		if err != nil {
			a.fail(w, r, err)
			return
		}
		dv.Attempts = attemptViews(atts)
		v.Matched = append(v.Matched, dv)
	}
	writeJSON(w, http.StatusOK, v)
}
