package sqlite

import (
	"context"
	"testing"

	"github.com/heraldstreams/herald/store"
)

// TestMigrationKeepsEventTypesForTheLog upgrades a store written before
// migration 0029: an event recorded then takes the type of one of its
// deliveries (none without one), and the log lists every event.
func TestMigrationKeepsEventTypesForTheLog(t *testing.T) {
	ctx := context.Background()
	dir := storeAt(t, "0028_segments",
		`INSERT INTO published_events (tenant, event_id, stream, position, created_at) VALUES ('acme', 'o-1', '/events', 0, 1), ('', 'o-2', '/events', 10, 2)`,
		`INSERT INTO endpoints (id, url, event_types, streams, tenant, active, ordering, retry_schedule, headers, secret, created_at, updated_at)
			VALUES ('ep', 'https://example.com', '["*"]', '["/**"]', '', 1, 'none', '[0]', '{}', 'whsec_a', 0, 0)`,
		`INSERT INTO deliveries (endpoint_id, event_tenant, event_id, event_type, stream, position, body, status, next_attempt_at, created_at, updated_at)
			VALUES ('ep', 'acme', 'o-1', 'order.paid', '/events', 0, X'7B7D', 'delivered', 0, 0, 0)`,
	)
	s := openStore(t, Config{Dir: dir})
	res, err := s.EventList(ctx, &store.EventListParams{Limit: 10})
	if err != nil || len(res.Events) != 2 || res.Events[0].ID != "o-2" || res.Events[0].Type != "" ||
		res.Events[1].Type != "order.paid" || res.Events[1].Outcome() != store.OutcomeDelivered {
		t.Fatalf("the log after the upgrade = %+v, %v", res, err)
	}
}
