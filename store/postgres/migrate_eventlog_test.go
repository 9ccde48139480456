package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/heraldstreams/herald/store"
)

// TestMigrationKeepsEventTypesForTheLog: an event recorded before
// migration 0011 takes the type of its first delivery (none without
// one), and the log lists every event.
func TestMigrationKeepsEventTypesForTheLog(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	schema := newSchema(t)
	migrationEndpoint(t, open(t, schema))
	conn := connect(t)
	for _, q := range []string{
		`SET search_path = ` + pgx.Identifier{schema}.Sanitize(),
		`DELETE FROM schema_migrations WHERE version = '0012_event_log'`,
		`DROP INDEX deliveries_event`,
		`DROP INDEX published_events_time`,
		`DROP INDEX published_events_tenant_time`,
		`DROP INDEX published_events_type_time`,
		`DROP INDEX published_events_stream_time`,
		`ALTER TABLE published_events DROP COLUMN event_type`,
		`CREATE INDEX published_events_created ON published_events (created_at)`,
		`INSERT INTO published_events (tenant, event_id, stream, position, created_at) VALUES ('acme', 'o-1', '/events', 0, 1), ('', 'o-2', '/events', 10, 2)`,
		`INSERT INTO deliveries (endpoint_id, event_tenant, event_id, event_type, stream, position, body, status, next_attempt_at, created_at, updated_at)
			VALUES ('ep', 'acme', 'o-1', 'order.paid', '/events', 0, '\x7b7d', 'delivered', 0, 0, 0)`,
	} {
		if _, err := conn.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	s := open(t, schema) // migrates
	res, err := s.EventList(ctx, &store.EventListParams{Limit: 10})
	if err != nil || len(res.Events) != 2 || res.Events[0].ID != "o-2" || res.Events[0].Type != "" ||
		res.Events[1].Type != "order.paid" || res.Events[1].Outcome() != store.OutcomeDelivered {
		t.Fatalf("the log after the upgrade = %+v, %v", res, err)
	}
}

// migrationEndpoint stores the endpoint "ep" the migration tests give
// their deliveries.
func migrationEndpoint(t *testing.T, s store.Store) {
	t.Helper()
	ep := store.Endpoint{ID: "ep", URL: "https://example.com", EventTypes: []string{"*"}, Streams: []string{"/**"}, Active: true,
		Ordering: "none", RetrySchedule: []time.Duration{0}, Secret: "whsec_a"}
	if _, err := s.EndpointCreate(context.Background(), &store.EndpointCreateParams{Endpoint: ep, Now: time.Now()}); err != nil {
		t.Fatal(err)
	}
}
