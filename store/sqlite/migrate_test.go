package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"slices"
	"testing"

	"github.com/heraldstreams/herald/store"
)

// TestMigrationMovesMembershipsIntoTheConsumer upgrades a store written by
// the schema before migration 0006 (memberships as rows of
// consumer_streams) and checks that every consumer keeps its streams, in
// order, with their offsets, and is still found by stream.
func TestMigrationMovesMembershipsIntoTheConsumer(t *testing.T) {
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

// TestMigrationMakesExistingSubscriptionsThePlatforms upgrades a store
// written before migration 0019: its subscriptions become the platform's
// (tenant ""), keep every column, and a tenant's view lists none of them.
func TestMigrationMakesExistingSubscriptionsThePlatforms(t *testing.T) {
	ctx := context.Background()
	dir := storeAt(t, "0018_delivery_batches", `INSERT INTO subscriptions (id, pattern, webhook, secret, description, created_at)
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
