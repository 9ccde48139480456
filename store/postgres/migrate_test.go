package postgres_test

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/heraldstreams/herald/store"
	"github.com/heraldstreams/herald/store/storetest"
	"github.com/jackc/pgx/v5"
)

// TestMigrationKeysEventIDsByTenant puts a schema back in its shape
// before migration 0003 (event ids and deliveries keyed by id alone),
// with rows written then, and opens it again: each recorded id takes the
// tenant of the message it names (none when the message has no string
// tenant, does not read as JSON, or its stream is gone), deliveries take
// their event's tenant, and the same id of another tenant is then a new
// event.
func TestMigrationKeysEventIDsByTenant(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	schema := newSchema(t)
	s := open(t, schema)
	migrationEndpoint(t, s)
	m1, m2, m3, m4 := `{"id":"o-1","type":"t.x","tenant":"acme"}`+"\n", `{"id":"o-2","type":"t.x","tenant":7}`+"\n",
		`{"id":"o-3","type":"t.x"}`+"\n", "\xff not json\n"
	msgs := m1 + m2 + m3 + m4
	p2, p3, p4 := strconv.Itoa(len(m1)), strconv.Itoa(len(m1+m2)), strconv.Itoa(len(m1+m2+m3))
	conn := connect(t)
	for _, q := range []string{
		`SET search_path = ` + pgx.Identifier{schema}.Sanitize(),
		`DELETE FROM schema_migrations WHERE version = '0003_event_ids_per_tenant'`,
		`ALTER TABLE published_events DROP CONSTRAINT published_events_pkey`,
		`ALTER TABLE published_events DROP COLUMN tenant`,
		`ALTER TABLE published_events ADD PRIMARY KEY (event_id)`,
		`ALTER TABLE deliveries DROP CONSTRAINT deliveries_endpoint_id_event_tenant_event_id_key`,
		`ALTER TABLE deliveries DROP COLUMN event_tenant`,
		`ALTER TABLE deliveries ADD CONSTRAINT deliveries_endpoint_id_event_id_key UNIQUE (endpoint_id, event_id)`,
		`INSERT INTO streams (path, content_type, tail, accessed_at, created_at) VALUES ('/events', 'application/json', ` +
			strconv.Itoa(len(msgs)) + `, 0, 0)`,
		`INSERT INTO chunks (stream_id, start_pos, end_pos, data) SELECT id, 0, ` + strconv.Itoa(len(msgs)) + `, $1 FROM streams WHERE path = '/events'`,
		`INSERT INTO published_events (event_id, stream, position, created_at) VALUES ('o-1', '/events', 0, 1), ('o-2', '/events', ` + p2 + `, 1),
			('o-3', '/events', ` + p3 + `, 1), ('o-4', '/events', ` + p4 + `, 1), ('gone', '/deleted', 0, 1)`,
		`INSERT INTO deliveries (endpoint_id, event_id, event_type, stream, position, body, status, next_attempt_at, created_at, updated_at)
			VALUES ('ep', 'o-1', 't.x', '/events', 0, '\x7b7d', 'delivered', 0, 0, 0), ('ep', 'o-3', 't.x', '/events', ` + p3 + `, '\x7b7d', 'pending', 0, 0, 0)`,
	} {
		var args []any
		if q[:11] == "INSERT INTO" && q[12:18] == "chunks" {
			args = []any{[]byte(msgs)}
		}
		if _, err := conn.Exec(ctx, q, args...); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}

	s = open(t, schema) // migrates
	keys := []store.EventKey{{Tenant: "acme", ID: "o-1"}, {ID: "o-2"}, {ID: "o-3"}, {ID: "o-4"}, {ID: "gone"}, {ID: "o-1"}}
	seen, err := s.EventIDsSeen(ctx, keys)
	if err != nil || len(seen) != 5 || seen[keys[0]].Position != 0 || seen[keys[1]].Position != int64(len(m1)) || seen[keys[4]].Stream != "/deleted" {
		t.Fatalf("ids after the upgrade = %v, %v", seen, err)
	}
	list, err := s.DeliveryList(ctx, &store.DeliveryListParams{EndpointID: "ep"})
	if err != nil || len(list) != 2 || list[1].EventID != "o-1" || list[1].EventTenant != "acme" || list[0].EventTenant != "" {
		t.Fatalf("deliveries after the upgrade = %+v, %v", list, err)
	}
	res, err := s.DeliveryEnqueue(ctx, &store.DeliveryEnqueueParams{Stream: "/events", Now: time.Now(), Deliveries: []store.Delivery{
		{EndpointID: "ep", EventID: "o-1", EventType: "t.x", Stream: "/events", Position: 0, Body: []byte("{}")},
		{EndpointID: "ep", EventID: "o-1", EventTenant: "acme", EventType: "t.x", Stream: "/events", Position: 0, Body: []byte("{}")}}})
	if err != nil || res.Queued != 1 {
		t.Fatalf("enqueue after the upgrade = %+v, %v; want the platform's o-1 only", res, err)
	}
	pub, err := s.EventPublish(ctx, &store.EventPublishParams{Stream: "/events", Tenant: "acme", EventID: "o-3",
		Data: []byte(`{"id":"o-3","type":"t.x","tenant":"acme"}` + "\n"), Now: time.Now()})
	if err != nil || pub.Duplicate {
		t.Fatalf("acme's o-3 after the upgrade = %+v, %v; want a new event", pub, err)
	}
}

// TestMigrationMakesExistingSubscriptionsThePlatforms: a subscription
// stored before migration 0004 (no owner column) becomes the platform's
// (tenant "") with every other column kept, and a tenant's view lists
// none of it.
func TestMigrationMakesExistingSubscriptionsThePlatforms(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	schema := newSchema(t)
	s := open(t, schema)
	sub := store.Subscription{ID: "old", Pattern: "/agents/**", Webhook: "https://example.com/h", Secret: "whsec_old", Description: "d"}
	if _, err := s.SubscriptionCreate(ctx, &store.SubscriptionCreateParams{Subscription: sub, Now: time.Unix(5, 0)}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// Back to the schema before 0003, the row kept.
	conn, err := pgx.Connect(ctx, serverURL(t))
	if err != nil {
		t.Fatal(err)
	}
	_, err = conn.Exec(ctx, `SET search_path TO `+pgx.Identifier{schema}.Sanitize()+`;
		ALTER TABLE subscriptions DROP COLUMN tenant;
		DELETE FROM schema_migrations WHERE version = '0004_subscription_tenant'`)
	if cerr := conn.Close(ctx); err != nil || cerr != nil {
		t.Fatalf("undo the migration: %v, %v", err, cerr)
	}

	s = open(t, schema)
	got, err := s.SubscriptionGet(ctx, "old")
	if err != nil {
		t.Fatal(err)
	}
	if got.Tenant != "" || got.Pattern != sub.Pattern || got.Webhook != sub.Webhook || got.Secret != sub.Secret || got.Description != sub.Description {
		t.Fatalf("subscription after the upgrade: %+v", got)
	}
	if list, err := s.SubscriptionList(ctx, &store.SubscriptionListParams{Tenant: "acme"}); err != nil || len(list) != 0 {
		t.Fatalf("a tenant's list after the upgrade: %+v, %v", list, err)
	}
}

// TestMigrationMakesReservedSubscriptionsConsumers puts a schema back in
// its shape before migration 0011 (the reserved API's subscriptions in
// ds_subscriptions and ds_links), with rows written then, and opens it
// again: storetest.CheckReservedRowsMoved.
func TestMigrationMakesReservedSubscriptionsConsumers(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	schema := newSchema(t)
	s := open(t, schema)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	old, err := os.ReadFile("migrations/0006_ds_subscriptions.sql")
	if err != nil {
		t.Fatal(err)
	}
	conn := connect(t)
	for _, q := range append([]string{
		`SET search_path = ` + pgx.Identifier{schema}.Sanitize(),
		`DELETE FROM schema_migrations WHERE version = '0011_reserved_consumers'`,
		`ALTER TABLE consumers DROP COLUMN kind, DROP COLUMN tenant, DROP COLUMN config, DROP COLUMN config_hash, DROP COLUMN pattern,
			DROP COLUMN created_at, DROP COLUMN holder, DROP COLUMN wake_written`,
		// The old tables, without the signing keys the store kept.
		strings.Split(string(old), "CREATE TABLE ds_signing_keys")[0],
	}, storetest.ReservedRowsBefore()...) {
		if _, err := conn.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	storetest.CheckReservedRowsMoved(t, open(t, schema)) // migrates
}

// connect opens a connection to the test server, closed when the test
// ends, to put a schema back in an older shape.
func connect(t *testing.T) *pgx.Conn {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, serverURL(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := conn.Close(ctx); err != nil {
			t.Error(err)
		}
	})
	return conn
}
