package store

import (
	"context"
	"errors"
	"time"
)

// EventLogStore is the part of the contract that reads the event log:
// the events Herald recorded (published through the API, or met with an
// id of their own in a stream), newest first, with where each went. It is
// served from indexes: the events by time, by tenant, by type and by
// stream, and the deliveries by event; no read scans a whole table.
type EventLogStore interface {
	// EventList returns recorded events newest first (by CreatedAt,
	// then Tenant, then ID, all descending) that pass params' filters,
	// each with its delivery counts. It reads at most params.Scan events
	// (the outcome is known only once read): the result holds up to
	// params.Limit of them, and Next, when more may follow, is where the
	// next page starts (the last event read, kept or not).
	EventList(ctx context.Context, params *EventListParams) (*EventListResult, error)
	// EventGet returns one recorded event of a tenant with its delivery
	// counts, or ErrEventNotFound.
	EventGet(ctx context.Context, key EventKey) (*EventRecord, error)
	// EventDeliveries returns the deliveries of one event, one per
	// endpoint it matched, by Seq, without bodies.
	EventDeliveries(ctx context.Context, key EventKey) ([]Delivery, error)
}

// ErrEventNotFound: no event of that id was recorded in that tenant (or
// it was pruned).
var ErrEventNotFound = errors.New("store: event not found")

// Event outcomes: what became of an event's deliveries, the first that
// applies of: none (it matched no endpoint), exhausted (one is a dead
// letter), failed (one is retrying), pending (one waits), delivered
// (every one was).
const (
	OutcomeNone      = "none"
	OutcomeExhausted = DeliveryExhausted
	OutcomeFailed    = DeliveryFailed
	OutcomePending   = DeliveryPending
	OutcomeDelivered = DeliveryDelivered
)

// EventRecord is a recorded event: its key, type, where its message is,
// when it was recorded, and how many of its deliveries are of each
// status.
type EventRecord struct {
	EventKey
	// Type is "" for an event recorded before types were kept that
	// matched no endpoint.
	Type       string
	Stream     string
	Position   int64
	CreatedAt  time.Time
	Deliveries map[string]int
}

// Outcome is what became of the event's deliveries (see OutcomeNone).
func (e *EventRecord) Outcome() string {
	for _, s := range []string{DeliveryExhausted, DeliveryFailed, DeliveryPending, DeliveryDelivered} {
		if e.Deliveries[s] > 0 {
			return s
		}
	}
	return OutcomeNone
}

// EventCursor is a place in the event log: the event at it and those
// after it (older) follow.
type EventCursor struct {
	CreatedAt time.Time
	Tenant    string
	ID        string
}

// EventListParams are the inputs of EventList. Empty filters select
// everything.
type EventListParams struct {
	// ByTenant limits the list to Tenant's events ("" the platform's).
	ByTenant bool
	Tenant   string
	Type     string
	Stream   string
	// Since and Until bound CreatedAt: Since <= CreatedAt < Until.
	Since, Until time.Time
	// Outcome is one of the Outcome constants, or "".
	Outcome string
	// Before, when set, starts after this place (see EventListResult.Next).
	Before *EventCursor
	Limit  int
	// Scan bounds how many events one call reads (at least Limit).
	Scan int
}

// EventListResult is the output of EventList.
type EventListResult struct {
	Events []EventRecord
	// Next is where the next page starts; nil at the end of the log.
	Next *EventCursor
}

// EventPublishParams are the inputs of EventPublish.
type EventPublishParams struct {
	Stream string
	// Tenant owns EventID ("" the platform): ids are unique per tenant.
	Tenant  string
	EventID string
	// EventType is the event's type, kept for the event log.
	EventType string
	// Data is one framed JSON message (compact, then '\n').
	Data []byte
	Now  time.Time
}

// EventPublishResult is the output of EventPublish.
type EventPublishResult struct {
	Stream    string
	Position  int64 // where the message starts
	Duplicate bool
}
