package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/heraldstreams/herald/store"
	"github.com/heraldstreams/herald/store/storetest"
)

// TestMigrationKeepsEventTypesForTheLog: an event recorded before
// migration 0012 takes the type of its first delivery (none without
// one), and the log lists every event.
func TestMigrationKeepsEventTypesForTheLog(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	schema := newSchema(t)
	migrationEndpoint(t, open(t, schema))
	conn := connect(t)
	for _, q := range append([]string{
		`SET search_path = ` + pgx.Identifier{schema}.Sanitize(),
		`DELETE FROM schema_migrations WHERE version = '0012_event_log'`,
		`DROP INDEX deliveries_event`,
		`DROP INDEX published_events_time`,
		`DROP INDEX published_events_tenant_time`,
		`DROP INDEX published_events_type_time`,
		`DROP INDEX published_events_stream_time`,
		`ALTER TABLE published_events DROP COLUMN event_type`,
		`CREATE INDEX published_events_created ON published_events (created_at)`,
	}, storetest.EventLogRowsBefore()...) {
		if _, err := conn.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	storetest.CheckEventLogAfter(t, open(t, schema)) // migrates
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
