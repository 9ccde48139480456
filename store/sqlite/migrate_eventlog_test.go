package sqlite

import (
	"testing"

	"github.com/heraldstreams/herald/store/storetest"
)

// TestMigrationKeepsEventTypesForTheLog upgrades a store written before
// migration 0029: an event recorded then takes the type of one of its
// deliveries (none without one), and the log lists every event.
func TestMigrationKeepsEventTypesForTheLog(t *testing.T) {
	t.Parallel()
	dir := storeAt(t, "0028_segments", append([]string{
		`INSERT INTO endpoints (id, url, event_types, streams, tenant, active, ordering, retry_schedule, headers, secret, created_at, updated_at)
			VALUES ('ep', 'https://example.com', '["*"]', '["/**"]', '', 1, 'none', '[0]', '{}', 'whsec_a', 0, 0)`,
	}, storetest.EventLogRowsBefore()...)...)
	storetest.CheckEventLogAfter(t, openStore(t, Config{Dir: dir}))
}
