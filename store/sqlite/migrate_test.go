package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/heraldstreams/herald/store"
	"github.com/heraldstreams/herald/store/storetest"
)

// TestMigrationMovesMembershipsIntoTheConsumer upgrades a store written by
// the schema before migration 0006 (memberships as rows of
// consumer_streams) and checks that every consumer keeps its streams, in
// order, with their offsets, and is still found by stream.
func TestMigrationMovesMembershipsIntoTheConsumer(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := storeAt(t, "0005_consumers_state",
		`INSERT INTO consumers (id, subscription_id, primary_stream, state, epoch, version) VALUES
			('s:%2Fa', 's', '/a', 'IDLE', 3, 7), ('s:%2Fb', 's', '/b', 'LIVE', 1, 2), ('s:%2Fc', 's', '/c', 'IDLE', 0, 1)`,
		`INSERT INTO consumer_streams (consumer_id, path, acked, notified, ord) VALUES
			('s:%2Fa', '/z', 'z1', '', 1), ('s:%2Fa', '/a', 'a1', 'a2', 0), ('s:%2Fa', '/x', 'x1', 'x1', 2),
			('s:%2Fb', '/b', 'b1', '', 0)`,
	)

	s := openStore(t, Config{Dir: dir})
	want := map[string][]store.ConsumerStream{
		"s:%2Fa": {{Path: "/a", Acked: "a1", Notified: "a2"}, {Path: "/z", Acked: "z1"}, {Path: "/x", Acked: "x1", Notified: "x1"}},
		"s:%2Fb": {{Path: "/b", Acked: "b1"}},
		"s:%2Fc": nil,
	}
	for id, streams := range want {
		c, err := s.ConsumerGet(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(c.Streams, streams) {
			t.Errorf("%s: streams %+v, want %+v", id, c.Streams, streams)
		}
	}
	if c, _ := s.ConsumerGet(ctx, "s:%2Fa"); c.Epoch != 3 || c.Version != 7 {
		t.Errorf("consumer columns changed: epoch %d, version %d", c.Epoch, c.Version)
	}
	byStream, err := s.ConsumerListByStream(ctx, &store.ConsumerListByStreamParams{Path: "/z"})
	if err != nil || len(byStream) != 1 || byStream[0].ID != "s:%2Fa" {
		t.Fatalf("consumers of /z: %+v, %v", byStream, err)
	}
	// The migrated memberships index is the one updates maintain.
	a := byStream[0]
	a.Streams = a.Streams[:2]
	if _, err := s.ConsumerUpdate(ctx, &store.ConsumerUpdateParams{Consumer: a, ExpectVersion: a.Version}); err != nil {
		t.Fatal(err)
	}
	if left, err := s.ConsumerListByStream(ctx, &store.ConsumerListByStreamParams{Path: "/x"}); err != nil || len(left) != 0 {
		t.Fatalf("consumers of /x after unsubscribing: %+v, %v", left, err)
	}
}

// TestMigrationKeepsConsumersWithoutIncarnation upgrades a store written
// before migration 0010: its consumers keep every column and read with
// the empty incarnation, which accepts the tokens issued before the
// upgrade (they carry none); new consumers store theirs.
func TestMigrationKeepsConsumersWithoutIncarnation(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := storeAt(t, "0009_keys", `INSERT INTO consumers (id, subscription_id, primary_stream, state, epoch, wake_id, paths, cursors, version)
		VALUES ('s:%2Fa', 's', '/a', 'LIVE', 4, 'w_4', '["/a"]', '[["a1","a2"]]', 9)`)

	s := openStore(t, Config{Dir: dir})
	c, err := s.ConsumerGet(ctx, "s:%2Fa")
	if err != nil {
		t.Fatal(err)
	}
	want := []store.ConsumerStream{{Path: "/a", Acked: "a1", Notified: "a2"}}
	if c.Incarnation != "" || c.State != "LIVE" || c.Epoch != 4 || c.WakeID != "w_4" || c.Version != 9 || !slices.Equal(c.Streams, want) {
		t.Fatalf("consumer after the upgrade: %+v", c)
	}
	fresh := store.Consumer{ID: "s:%2Fb", SubscriptionID: "s", Incarnation: "i_b", PrimaryStream: "/b", State: "IDLE"}
	if _, err := s.ConsumerInsert(ctx, &store.ConsumerInsertParams{Consumers: []store.Consumer{fresh}}); err != nil {
		t.Fatal(err)
	}
	if c, err := s.ConsumerGet(ctx, "s:%2Fb"); err != nil || c.Incarnation != "i_b" {
		t.Fatalf("new consumer: %+v, %v", c, err)
	}
}

// storeAt makes a data directory whose database has the migrations up to
// and including until, then the statements run on it, and returns it.
func storeAt(t *testing.T, until string, statements ...string) string {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, "herald.db"))
	if err != nil {
		t.Fatal(err)
	}
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	err = migrate(ctx, conn, until)
	for _, q := range statements {
		if err != nil {
			break
		}
		_, err = conn.ExecContext(ctx, q)
	}
	if err := errors.Join(err, conn.Close(), db.Close()); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestMigrationKeysEventIDsByTenant upgrades a store written before
// migration 0019 (event ids and deliveries keyed by id alone): each
// recorded id takes the tenant of the message it names (none when the
// message has no string tenant or the stream is gone), deliveries keep
// their seq and take their event's tenant, the seq sequence goes on
// after the highest seq ever given, and the same id of another tenant
// is then a new event.
func TestMigrationKeysEventIDsByTenant(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	m1, m2, m3 := `{"id":"o-1","type":"t.x","tenant":"acme"}`+"\n", `{"id":"o-2","type":"t.x","tenant":7}`+"\n", `{"id":"o-3","type":"t.x"}`+"\n"
	msgs, p2, p3 := m1+m2+m3, strconv.Itoa(len(m1)), strconv.Itoa(len(m1+m2))
	dir := storeAt(t, "0018_delivery_batches",
		`INSERT INTO streams (id, path, content_type, tail, accessed_at, created_at) VALUES (1, '/events', 'application/json', 200, 0, 0)`,
		`INSERT INTO chunks (stream_id, start_pos, end_pos, data) VALUES (1, 0, `+strconv.Itoa(len(msgs))+`, CAST('`+msgs+`' AS BLOB))`,
		`INSERT INTO published_events (event_id, stream, position, created_at) VALUES ('o-1', '/events', 0, 1), ('o-2', '/events', `+p2+`, 1),
			('o-3', '/events', `+p3+`, 1), ('gone', '/deleted', 0, 1)`,
		`INSERT INTO endpoints (id, url, event_types, streams, tenant, active, ordering, retry_schedule, headers, secret, created_at, updated_at)
			VALUES ('ep', 'https://example.com', '["*"]', '["/**"]', '', 1, 'none', '[0]', '{}', 'whsec_a', 0, 0)`,
		`INSERT INTO deliveries (seq, endpoint_id, event_id, event_type, stream, position, body, status, next_attempt_at, created_at, updated_at)
			VALUES (7, 'ep', 'o-1', 't.x', '/events', 0, X'7B7D', 'delivered', 0, 0, 0), (9, 'ep', 'o-3', 't.x', '/events', `+p3+`, X'7B7D', 'pending', 0, 0, 0)`,
		`DELETE FROM deliveries WHERE seq = 9`, // the highest seq given is gone: it must not be given again
		`INSERT INTO deliveries (seq, endpoint_id, event_id, event_type, stream, position, body, status, next_attempt_at, created_at, updated_at)
			VALUES (8, 'ep', 'o-3', 't.x', '/events', `+p3+`, X'7B7D', 'pending', 0, 0, 0)`,
	)
	s := openStore(t, Config{Dir: dir})
	keys := []store.EventKey{{Tenant: "acme", ID: "o-1"}, {ID: "o-2"}, {ID: "o-3"}, {ID: "gone"}, {ID: "o-1"}}
	seen, err := s.EventIDsSeen(ctx, keys)
	if err != nil || len(seen) != 4 || seen[keys[0]].Position != 0 || seen[keys[1]].Position != int64(len(m1)) || seen[keys[3]].Stream != "/deleted" {
		t.Fatalf("ids after the upgrade = %v, %v", seen, err)
	}
	list, err := s.DeliveryList(ctx, &store.DeliveryListParams{EndpointID: "ep"})
	if err != nil || len(list) != 2 || list[0].Seq != 8 || list[1].Seq != 7 || list[1].EventTenant != "acme" || list[0].EventTenant != "" {
		t.Fatalf("deliveries after the upgrade = %+v, %v", list, err)
	}
	res, err := s.DeliveryEnqueue(ctx, &store.DeliveryEnqueueParams{Stream: "/events", Now: time.Now(), Deliveries: []store.Delivery{
		{EndpointID: "ep", EventID: "o-1", EventType: "t.x", Stream: "/events", Position: 0, Body: []byte("{}")},
		{EndpointID: "ep", EventID: "o-1", EventTenant: "acme", EventType: "t.x", Stream: "/events", Position: 0, Body: []byte("{}")}}})
	if err != nil || res.Queued != 1 {
		t.Fatalf("enqueue after the upgrade = %+v, %v; want the platform's o-1 only", res, err)
	}
	list, err = s.DeliveryList(ctx, &store.DeliveryListParams{EndpointID: "ep", Limit: 1})
	if err != nil || len(list) != 1 || list[0].Seq != 10 {
		t.Fatalf("the new delivery = %+v, %v; want seq 10", list, err)
	}
	pub, err := s.EventPublish(ctx, &store.EventPublishParams{Stream: "/events", Tenant: "acme", EventID: "o-3",
		Data: []byte(`{"id":"o-3","type":"t.x","tenant":"acme"}` + "\n"), Now: time.Now()})
	if err != nil || pub.Duplicate {
		t.Fatalf("acme's o-3 after the upgrade = %+v, %v; want a new event", pub, err)
	}
}

// TestMigrationMakesExistingSubscriptionsThePlatforms upgrades a store
// written before migration 0020: its subscriptions become the platform's
// (tenant ""), keep every column, and a tenant's view lists none of them.
func TestMigrationMakesExistingSubscriptionsThePlatforms(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := storeAt(t, "0019_event_ids_per_tenant", `INSERT INTO subscriptions (id, pattern, webhook, secret, description, created_at)
		VALUES ('old', '/agents/**', 'https://example.com/h', 'whsec_old', 'd', 5)`)

	s := openStore(t, Config{Dir: dir})
	got, err := s.SubscriptionGet(ctx, "old")
	if err != nil {
		t.Fatal(err)
	}
	if got.Tenant != "" || got.Pattern != "/agents/**" || got.Webhook != "https://example.com/h" || got.Secret != "whsec_old" || got.Description != "d" {
		t.Fatalf("subscription after the upgrade: %+v", got)
	}
	if list, err := s.SubscriptionList(ctx, &store.SubscriptionListParams{Tenant: "acme"}); err != nil || len(list) != 0 {
		t.Fatalf("a tenant's list after the upgrade: %+v, %v", list, err)
	}
}

// TestMigrationMakesReservedSubscriptionsConsumers upgrades a store
// written before migration 0027 (the reserved API's subscriptions in
// ds_subscriptions and ds_links): storetest.CheckReservedRowsMoved.
func TestMigrationMakesReservedSubscriptionsConsumers(t *testing.T) {
	t.Parallel()
	dir := storeAt(t, "0026_stream_changes", storetest.ReservedRowsBefore()...)
	storetest.CheckReservedRowsMoved(t, openStore(t, Config{Dir: dir}))
}

// TestMigrationsApplyWholeOrNotAtAll: the pending migrations run in one
// transaction, so a store whose upgrade fails part-way (here migration
// 0031 finds an index it drops gone) is left at the schema it had, not
// between two versions, and opens again once the cause is repaired.
func TestMigrationsApplyWholeOrNotAtAll(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := storeAt(t, "0029_event_log", `DROP INDEX deliveries_lease_owner`)
	if s, err := Open(ctx, Config{Dir: dir}); err == nil {
		_ = s.Close()
		t.Fatal("a store whose migration 0031 fails opened")
	}
	latest := func() string {
		db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, "herald.db"))
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		var v string
		if err := db.QueryRowContext(ctx, `SELECT max(version) FROM schema_migrations`).Scan(&v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	if v := latest(); v != "0029_event_log" {
		t.Fatalf("after the failed upgrade the schema is at %s, want 0029_event_log (0030 rolled back with 0031)", v)
	}
	db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, "herald.db"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, `CREATE INDEX deliveries_lease_owner ON deliveries (lease_owner)`); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	s, err := Open(ctx, Config{Dir: dir})
	if err != nil {
		t.Fatalf("the repaired store does not open: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}
