package storetest

import (
	"context"
	"testing"

	"github.com/heraldstreams/herald/store"
)

// EventLogRowsBefore are the statements that write, in the schema before
// the event log (published events without their type), two events: one
// with a delivery of type order.paid to the endpoint "ep", one without.
// The delivery's body is the text '{}', which both SQLite's BLOB and
// PostgreSQL's bytea take as the two bytes.
func EventLogRowsBefore() []string {
	return []string{
		`INSERT INTO published_events (tenant, event_id, stream, position, created_at) VALUES ('acme', 'o-1', '/events', 0, 1), ('', 'o-2', '/events', 10, 2)`,
		`INSERT INTO deliveries (endpoint_id, event_tenant, event_id, event_type, stream, position, body, status, next_attempt_at, created_at, updated_at)
			VALUES ('ep', 'acme', 'o-1', 'order.paid', '/events', 0, '{}', 'delivered', 0, 0, 0)`,
	}
}

// CheckEventLogAfter checks a store migrated over EventLogRowsBefore: the
// event recorded then takes the type of its delivery (none without one),
// and the log lists both.
func CheckEventLogAfter(t *testing.T, s store.Store) {
	t.Helper()
	res, err := s.EventList(context.Background(), &store.EventListParams{Limit: 10})
	if err != nil || len(res.Events) != 2 || res.Events[0].ID != "o-2" || res.Events[0].Type != "" ||
		res.Events[1].Type != "order.paid" || res.Events[1].Outcome() != store.OutcomeDelivered {
		t.Fatalf("the log after the upgrade = %+v, %v", res, err)
	}
}
