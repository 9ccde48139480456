package dispatch

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/heraldstreams/herald/auth"
	"github.com/heraldstreams/herald/delivery"
	"github.com/heraldstreams/herald/internal/telemetry"
	"github.com/heraldstreams/herald/protocol"
	"github.com/heraldstreams/herald/store"
)

// parsedMessage is one stream message read as an event.
type parsedMessage struct {
	target *delivery.Target
	tenant string
	// ownID: the id is the message's own, not one named for it.
	ownID bool
	// bodies are the event rendered by each profile that needed it.
	bodies map[*delivery.Profile][]byte
}

// body returns the event as profile p renders it.
func (m *parsedMessage) body(p *delivery.Profile) ([]byte, error) {
	if b, ok := m.bodies[p]; ok {
		return b, nil
	}
	b, err := p.Body(m.target.Event, m.tenant)
	if err != nil {
		return nil, err
	}
	if m.bodies == nil {
		m.bodies = make(map[*delivery.Profile][]byte, 1)
	}
	m.bodies[p] = b
	return b, nil
}

// wireMessage is a stream message as the matcher reads it: an event
// envelope, plus the tenant that POST /v1/events records.
type wireMessage struct {
	ID        json.RawMessage `json:"id"`
	Type      json.RawMessage `json:"type"`
	Timestamp json.RawMessage `json:"timestamp"`
	Data      json.RawMessage `json:"data"`
	Tenant    json.RawMessage `json:"tenant"`
}

// eventIDs names events appended without an id (*pageIDs).
type eventIDs interface {
	id(ctx context.Context, pos int64) (string, error)
}

// parseMessage reads one stream message, at position pos of the stream
// at path, as an event, or returns nil when it is not one (not an object,
// or no valid string type). A message without a valid id is named by ids,
// so its id is stable across restarts and replays (and unique across
// installations, see store.EventIDSpan); a missing timestamp is now. The
// error is ids' only.
func parseMessage(ctx context.Context, raw []byte, path string, pos int64, ids eventIDs, now time.Time) (*parsedMessage, error) {
	var w wireMessage
	if err := json.Unmarshal(raw, &w); err != nil {
		return nil, nil
	}
	ev := &delivery.Event{}
	if err := json.Unmarshal(w.Type, &ev.Type); err != nil || delivery.ValidateEventType(ev.Type) != nil {
		return nil, nil
	}
	ownID := json.Unmarshal(w.ID, &ev.ID) == nil && delivery.ValidateEventID(ev.ID) == nil
	if !ownID {
		id, err := ids.id(ctx, pos)
		if err != nil {
			return nil, err
		}
		ev.ID = id
	}
	ev.Timestamp = now.UTC()
	var ts string
	if json.Unmarshal(w.Timestamp, &ts) == nil {
		if t, err := time.Parse(time.RFC3339, ts); err == nil {
			ev.Timestamp = t
		}
	}
	ev.Data = json.RawMessage("null")
	if len(w.Data) > 0 {
		ev.Data = w.Data
	}
	m := &parsedMessage{target: delivery.NewTarget(ev, path), ownID: ownID}
	if len(w.Tenant) > 0 && json.Unmarshal(w.Tenant, &m.tenant) != nil {
		m.tenant = ""
	}
	return m, nil
}

// receives reports whether the endpoint receives the message: an
// endpoint awaiting verification receives nothing (its cursor moves on).
func (le *liveEndpoint) receives(m *parsedMessage) bool {
	if le.ep.Verification.Pending() {
		return false
	}
	if le.ep.Tenant != "" && le.ep.Tenant != m.tenant {
		return false
	}
	return le.filters.Match(m.target)
}

// pageEvent is one event of a page: where its message starts, where the
// next one does.
type pageEvent struct {
	pos, next int64
	m         *parsedMessage
}

// readEvents reads the whole messages of data, which starts at position
// from of the stream at path, as events. An event whose own id was seen
// before in its tenant at another place (published through the API, or
// appended earlier, to any stream of this installation, within the
// retention) is a duplicate and left out, as is every repeat of a
// tenant's id in the page; the ids met for the first time are returned
// as sightings, to be recorded with the page's deliveries. Event ids are
// unique per tenant: the same id of another tenant is another event.
func (e *Engine) readEvents(ctx context.Context, path string, from int64, data []byte, ids eventIDs, now time.Time) ([]pageEvent, []store.EventSighting, error) {
	var evs []pageEvent
	var own []store.EventKey
	for pos := from; len(data) > 0; {
		i := bytes.IndexByte(data, '\n')
		m, err := parseMessage(ctx, data[:i], path, pos, ids, now)
		if err != nil {
			return nil, nil, err
		}
		next := pos + int64(i+1)
		if m != nil {
			if owner, ok := auth.StreamOwner(e.cfg.TenantStreamPrefix, path); ok {
				// A stream in a tenant's namespace holds only its events:
				// a message naming another tenant is delivered as the
				// namespace's, never as the tenant it names.
				m.tenant = owner
			}
			evs = append(evs, pageEvent{pos: pos, next: next, m: m})
			if m.ownID {
				own = append(own, m.key())
			}
		}
		data, pos = data[i+1:], next
	}
	if len(own) == 0 {
		return evs, nil, nil
	}
	seen, err := e.st.EventIDsSeen(ctx, own)
	if err != nil {
		return nil, nil, err
	}
	var sightings []store.EventSighting
	met := make(map[store.EventKey]bool, len(own))
	kept := evs[:0]
	for _, ev := range evs {
		if key := ev.m.key(); ev.m.ownID {
			at, known := seen[key]
			if met[key] || known && (at.Stream != path || at.Position != ev.pos) {
				continue
			}
			met[key] = true
			if !known {
				sightings = append(sightings, store.EventSighting{Tenant: key.Tenant, EventID: key.ID, Position: ev.pos, EventType: ev.m.target.Event.Type})
			}
		}
		kept = append(kept, ev)
	}
	return kept, sightings, nil
}

// key names the message's event id in its tenant's space.
func (m *parsedMessage) key() store.EventKey {
	return store.EventKey{Tenant: m.tenant, ID: m.target.Event.ID}
}

// matchState is one endpoint's progress on the stream being matched.
type matchState struct {
	le     *liveEndpoint
	cursor store.DeliveryCursor
	found  bool
	start  int64
}

// MatchStream stores the deliveries of every message of the stream that
// is past an endpoint's cursor and advances the cursors, page by page,
// each page in one transaction. It is safe to run again at any time: a
// lost race (another replica) is retried from the stored cursors.
func (e *Engine) MatchStream(ctx context.Context, path string) error {
	eps := e.endpointsFor(path)
	if len(eps) == 0 {
		return nil
	}
	conflicts := 0
	for ctx.Err() == nil {
		more, err := e.matchPage(ctx, path, eps)
		switch {
		case errors.Is(err, store.ErrCursorConflict):
			if conflicts++; conflicts >= casAttempts {
				return err
			}
		case err != nil:
			return err
		case !more:
			return nil
		}
	}
	return ctx.Err()
}

// matchPage matches one page of the stream; more is true when there is
// more to match.
func (e *Engine) matchPage(ctx context.Context, path string, eps []*liveEndpoint) (more bool, err error) {
	now := e.now()
	st, err := e.st.StreamGet(ctx, &store.StreamGetParams{Path: path, Now: now})
	if errors.Is(err, store.ErrNotFound) || errors.Is(err, store.ErrStreamGone) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if !protocol.IsJSON(st.ContentType) {
		return false, nil
	}
	cursors, err := e.st.DeliveryCursors(ctx, &store.DeliveryCursorsParams{Stream: path})
	if err != nil {
		return false, err
	}
	byEP := make(map[string]store.DeliveryCursor, len(cursors))
	for _, c := range cursors {
		byEP[c.EndpointID] = c
	}
	var states []*matchState
	from := st.Tail
	for _, le := range eps {
		ms := &matchState{le: le, start: st.ForkPosition}
		if c, ok := byEP[le.ep.ID]; ok {
			ms.cursor, ms.found = c, true
			if c.StreamID == st.ID {
				ms.start = c.Position
			}
		}
		if ms.start >= st.Tail && ms.found && ms.cursor.StreamID == st.ID {
			continue
		}
		states = append(states, ms)
		from = min(from, ms.start)
	}
	if len(states) == 0 {
		return false, nil
	}
	var data []byte
	next := from
	if from < st.Tail {
		res, err := e.st.StreamRead(ctx, &store.StreamReadParams{Path: path, From: from, MaxBytes: matchPage, Now: now, Internal: true})
		if err != nil {
			return false, err
		}
		// Only whole messages: a page ends after a '\n'.
		data = res.Data[:bytes.LastIndexByte(res.Data, '\n')+1]
		if len(data) == 0 {
			return false, fmt.Errorf("delivery: stream %s has no whole message at position %d", path, from)
		}
		next = from + int64(len(data))
	}
	var deliveries []store.Delivery
	ids := e.newPageIDs(st.ID, from, next)
	evs, sightings, err := e.readEvents(ctx, path, from, data, ids, now)
	if err != nil {
		return false, err
	}
	for _, ev := range evs {
		for _, ms := range states {
			if ms.start > ev.pos || !ms.le.receives(ev.m) {
				continue
			}
			if d, ok := e.newDelivery(ms.le, ev.m, ev.pos, now); ok {
				deliveries = append(deliveries, d)
			}
		}
	}
	params := &store.DeliveryEnqueueParams{Stream: path, Spans: ids.writes, Deliveries: deliveries, Sightings: sightings, Now: now}
	for _, ms := range states {
		pos := max(next, ms.start)
		if ms.found && ms.cursor.StreamID == st.ID && ms.cursor.Position == pos {
			continue
		}
		params.Cursors = append(params.Cursors, store.CursorAdvance{
			EndpointID: ms.le.ep.ID, Found: ms.found, ExpectStreamID: ms.cursor.StreamID, ExpectPosition: ms.cursor.Position,
			StreamID: st.ID, Position: pos,
		})
	}
	if len(params.Cursors) == 0 && len(deliveries) == 0 && len(params.Spans) == 0 && len(sightings) == 0 {
		return false, nil
	}
	parent := trace.SpanContextFromContext(ctx)
	if tp := telemetry.Traceparent(parent); tp != "" {
		for i := range deliveries {
			deliveries[i].TraceParent = tp
		}
	}
	write, leaseNow := e.leases.begin(e.now)
	hand := e.leaseFresh(parent, states, deliveries, leaseNow)
	params.Limits = hand.limits()
	res, err := e.st.DeliveryEnqueue(ctx, params)
	var leased []store.Delivery
	if err == nil {
		leased = res.Leased
	}
	e.leases.end(write, leased, err)
	if err != nil {
		hand.settle(nil)
		return false, err
	}
	e.metrics.matched.Add(float64(len(deliveries)))
	hand.settle(res.Leased)
	return next < st.Tail, nil
}

// handover is the fresh deliveries of one enqueue that go leased to
// runners with free slots, without a claim. Each send waits for the
// enqueue's outcome before it POSTs: the store leases a fresh delivery
// only within the endpoint's limits across replicas, and one it did not
// keep leased (over the limits, the delivery existed, or the enqueue
// failed) is not sent: it waits for a claim, or is matched again.
type handover struct {
	e      *Engine
	eps    map[string]*handoverEndpoint
	ticket *ticket
}

type handoverEndpoint struct {
	le       *liveEndpoint
	r        *runner
	unleased bool // some deliveries are inserted pending: the runner claims them
}

// ticket tells the sends of a handover which deliveries the store kept.
type ticket struct {
	done chan struct{}
	kept map[deliveryKey]store.Delivery // written before done is closed
}

type deliveryKey struct{ endpoint, event string }

// leaseFresh reserves runner slots for the deliveries, marks as many of
// each endpoint's (the earliest) to be inserted leased, and starts their
// sends (a batching endpoint's in batches), whose spans are children of
// parent (the match's span).
func (e *Engine) leaseFresh(parent trace.SpanContext, states []*matchState, deliveries []store.Delivery, now time.Time) *handover {
	h := &handover{e: e, eps: make(map[string]*handoverEndpoint, len(states)), ticket: &ticket{done: make(chan struct{})}}
	want := make(map[string]int, len(states))
	for _, d := range deliveries {
		if !d.NextAttemptAt.After(now) {
			want[d.EndpointID]++
		}
	}
	e.mu.RLock()
	for _, ms := range states {
		id := ms.le.ep.ID
		h.eps[id] = &handoverEndpoint{le: ms.le, r: e.runners[id]}
	}
	e.mu.RUnlock()
	// A slot is a POST: a batching endpoint takes fresh deliveries only
	// in full batches (a partial one waits for a claim, which holds it
	// for batch.max_wait_ms to fill), each batch one send. A slot is
	// spent when its batch is full, so an endpoint with a slot left has
	// room for one more delivery.
	slots := make(map[string]int, len(h.eps))
	for id, he := range h.eps {
		if he.r != nil {
			slots[id] = he.r.reserve(want[id] / batchSize(he.le))
		}
	}
	lease := now.Add(e.cfg.Lease)
	groups := make(map[string][]store.Delivery)
	for i := range deliveries {
		d := &deliveries[i]
		id := d.EndpointID
		he := h.eps[id]
		if slots[id] == 0 || d.NextAttemptAt.After(now) {
			he.unleased = true
			continue
		}
		d.LeaseUntil = lease
		groups[id] = append(groups[id], *d)
		if len(groups[id]) == batchSize(he.le) {
			slots[id]--
			he.r.sendEarly(parent, he.le, groups[id], h.ticket)
			groups[id] = nil
		}
	}
	for id, n := range slots {
		if n > 0 {
			h.eps[id].r.unreserve(n)
		}
	}
	return h
}

// limits are the shared limits of the endpoints the handover leases.
func (h *handover) limits() map[string]store.DeliveryLimits {
	out := make(map[string]store.DeliveryLimits, len(h.eps))
	for id, he := range h.eps {
		out[id] = h.e.limits(he.le)
	}
	return out
}

// settle hands the enqueue's outcome to the sends (kept: the deliveries
// the store inserted leased; nil when it failed) and wakes the runners
// that have pending deliveries to claim.
func (h *handover) settle(kept []store.Delivery) {
	h.ticket.kept = make(map[deliveryKey]store.Delivery, len(kept))
	for _, d := range kept {
		h.ticket.kept[deliveryKey{d.EndpointID, d.EventID}] = d
	}
	close(h.ticket.done)
	for _, he := range h.eps {
		if he.r != nil && (he.unleased || kept == nil) {
			he.r.wake()
		}
	}
}

// newDelivery is the delivery of a message to an endpoint, its body in
// the endpoint's profile; the store assigns its id. ok is false when the
// event cannot be rendered (it is then not delivered, and logged).
func (e *Engine) newDelivery(le *liveEndpoint, m *parsedMessage, pos int64, now time.Time) (d store.Delivery, ok bool) {
	body, err := m.body(le.profile)
	if err != nil {
		e.log.Warn("event not delivered: it cannot be rendered in the endpoint's profile", "endpoint", le.ep.ID,
			"profile", le.profile.Name, "stream", m.target.Stream, "event", m.target.Event.ID, "err", err)
		return d, false
	}
	at, _ := delivery.NextAttempt(le.schedule, 0, now, 0)
	return store.Delivery{
		EndpointID: le.ep.ID, EventID: m.target.Event.ID, EventTenant: m.tenant, EventType: m.target.Event.Type,
		Stream: m.target.Stream, Position: pos, Body: body, NextAttemptAt: at,
	}, true
}
