package postgres_test

import (
	"context"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/heraldstreams/herald/store"
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
	ep := store.Endpoint{ID: "ep", URL: "https://example.com", EventTypes: []string{"*"}, Streams: []string{"/**"}, Active: true,
		Ordering: "none", RetrySchedule: []time.Duration{0}, Secret: "whsec_a"}
	if _, err := s.EndpointCreate(ctx, &store.EndpointCreateParams{Endpoint: ep, Now: time.Now()}); err != nil {
		t.Fatal(err)
	}
	m1, m2, m3, m4 := `{"id":"o-1","type":"t.x","tenant":"acme"}`+"\n", `{"id":"o-2","type":"t.x","tenant":7}`+"\n",
		`{"id":"o-3","type":"t.x"}`+"\n", "\xff not json\n"
	msgs := m1 + m2 + m3 + m4
	p2, p3, p4 := strconv.Itoa(len(m1)), strconv.Itoa(len(m1+m2)), strconv.Itoa(len(m1+m2+m3))
	conn, err := pgx.Connect(ctx, serverURL(t))
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := conn.Close(ctx); err != nil {
			t.Error(err)
		}
	}()
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
// again: each becomes a consumer row of kind reserved with its state in
// the consumer's columns and its links as memberships, found by stream
// and claimed as every consumer's timer.
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
	lease := time.Date(2026, 1, 2, 3, 4, 5, 678_000_000, time.UTC)
	next := lease.Add(30*time.Second + 500*time.Millisecond)
	conn, err := pgx.Connect(ctx, serverURL(t))
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := conn.Close(ctx); err != nil {
			t.Error(err)
		}
	}()
	for _, q := range []string{
		`SET search_path = ` + pgx.Identifier{schema}.Sanitize(),
		`DELETE FROM schema_migrations WHERE version = '0011_reserved_consumers'`,
		`ALTER TABLE consumers DROP COLUMN kind, DROP COLUMN tenant, DROP COLUMN config, DROP COLUMN config_hash, DROP COLUMN pattern,
			DROP COLUMN created_at, DROP COLUMN holder, DROP COLUMN wake_written`,
		// The old tables, without the signing keys the store kept.
		strings.Split(string(old), "CREATE TABLE ds_signing_keys")[0],
		`INSERT INTO ds_subscriptions (id, tenant, incarnation, config, config_hash, pattern, created_at, state, due_at, version) VALUES
			('hook', 'acme', 'inc1', '{"type":"webhook"}', 'h1', '/ev/*', 5, '{"Phase":"waking","Generation":4,"WakeID":"w_1","Holder":"",` +
			`"LeaseUntil":"2026-01-02T03:04:05.678Z","Attempts":2,"Sending":true,"NextAttemptAt":"2026-01-02T03:04:36.178Z","Failed":true,"WakeWritten":false}', ` +
			strconv.FormatInt(next.UnixNano(), 10) + `, 9),
			('pull', '', 'inc2', '{"type":"pull-wake"}', 'h2', '', 6, '{"Phase":"idle","Generation":1,"WakeID":"w_0","Holder":"",` +
			`"LeaseUntil":"0001-01-01T00:00:00Z","Attempts":0,"Sending":false,"NextAttemptAt":"0001-01-01T00:00:00Z","Failed":false,"WakeWritten":true}', 0, 3)`,
		`INSERT INTO ds_links (subscription_id, path, glob, explicit, acked, notified) VALUES
			('hook', '/ev/b', 1, 0, 'b1', 'b2'), ('hook', '/ev/a', 1, 1, 'a1', ''), ('pull', '/x', 0, 1, '-1', '')`,
	} {
		if _, err := conn.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}

	s = open(t, schema) // migrates
	hook, err := s.ConsumerGet(ctx, "__ds/hook")
	if err != nil {
		t.Fatal(err)
	}
	wantLinks := []store.ConsumerStream{{Path: "/ev/a", Acked: "a1", Glob: true, Explicit: true}, {Path: "/ev/b", Acked: "b1", Notified: "b2", Glob: true}}
	if hook.Kind != store.ConsumerReserved || hook.SubscriptionID != "__ds/hook" || hook.Tenant != "acme" || hook.Incarnation != "inc1" ||
		hook.ConfigHash != "h1" || hook.Pattern != "/ev/*" || hook.CreatedAt.UnixNano() != 5 || hook.State != "WAKING" || hook.Epoch != 4 ||
		hook.WakeID != "w_1" || hook.Attempts != 2 || !hook.LivenessDeadline.Equal(lease) || !hook.WakingDeadline.Equal(next) ||
		!hook.NextRetryAt.IsZero() || hook.FailingSince.IsZero() || !hook.DueAt.Equal(next) || hook.Version != 9 || hook.WakeWritten ||
		!slices.Equal(hook.Streams, wantLinks) {
		t.Fatalf("the webhook subscription after the upgrade: %+v", hook)
	}
	pull, err := s.ConsumerGet(ctx, "__ds/pull")
	if err != nil {
		t.Fatal(err)
	}
	if pull.State != "IDLE" || pull.Epoch != 1 || !pull.WakeWritten || !pull.LivenessDeadline.IsZero() || !pull.WakingDeadline.IsZero() ||
		!pull.FailingSince.IsZero() || !pull.DueAt.IsZero() || !slices.Equal(pull.Streams, []store.ConsumerStream{{Path: "/x", Acked: "-1", Explicit: true}}) {
		t.Fatalf("the pull-wake subscription after the upgrade: %+v", pull)
	}
	linking, err := s.ConsumerListByStream(ctx, &store.ConsumerListByStreamParams{Path: "/ev/b"})
	if err != nil || len(linking) != 1 || linking[0].ID != "__ds/hook" {
		t.Fatalf("subscriptions linking /ev/b: %+v, %v", linking, err)
	}
	due, err := s.ConsumerClaimDue(ctx, &store.ConsumerClaimDueParams{Now: next, Lease: time.Minute})
	if err != nil || len(due.Consumers) != 1 || due.Consumers[0].ID != "__ds/hook" {
		t.Fatalf("due reserved-API timers: %+v, %v", due, err)
	}
}
