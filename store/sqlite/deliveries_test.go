package sqlite

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/heraldstreams/herald/store"
)

// TestMigrationGivesStoredDeliveriesOpaqueIDs upgrades a store written
// before delivery id keys: its deliveries get ids of the new shape, the
// same at every start, and found by them.
func TestMigrationGivesStoredDeliveriesOpaqueIDs(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := storeAt(t, "0012_event_id_spans", `INSERT INTO deliveries (endpoint_id, event_id, event_type, stream, position, body, status,
		next_attempt_at, created_at, updated_at) VALUES ('ep', 'e1', 't.a', '/s', 0, '{}', 'pending', 0, 1, 1),
		('ep', 'e2', 't.a', '/s', 10, '{}', 'pending', 0, 2, 2)`)
	var ids [2][]string
	for start := range ids {
		s, err := Open(ctx, Config{Dir: dir})
		if err != nil {
			t.Fatal(err)
		}
		list, err := s.DeliveryList(ctx, &store.DeliveryListParams{EndpointID: "ep"})
		if err != nil || len(list) != 2 {
			t.Fatalf("start %d: list = %+v, %v", start, list, err)
		}
		for _, d := range list {
			if !strings.HasPrefix(d.ID, "dlv_") || len(d.ID) != 36 {
				t.Errorf("start %d: id %q is not dlv_ and 32 hex digits", start, d.ID)
			}
			if got, err := s.DeliveryGet(ctx, d.ID); err != nil || got.EventID != d.EventID {
				t.Errorf("start %d: get %s = %+v, %v", start, d.ID, got, err)
			}
			ids[start] = append(ids[start], d.ID)
		}
		if _, err := s.DeliveryGet(ctx, "dlv_1"); !errors.Is(err, store.ErrDeliveryNotFound) {
			t.Errorf("start %d: the old id shape: %v", start, err)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if !slices.Equal(ids[0], ids[1]) {
		t.Fatalf("ids changed across a restart: %v, then %v", ids[0], ids[1])
	}
}

// TestMigrationKeepsEventIDsOfStoredStreams upgrades a store written before
// id spans: each stream gets a span of an empty nonce over what it holds,
// so the events in it keep the ids they were delivered with.
func TestMigrationKeepsEventIDsOfStoredStreams(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := storeAt(t, "0009_keys", `INSERT INTO streams (id, path, content_type, tail, accessed_at, created_at) VALUES
		(3, '/full', 'application/json', 120, 0, 0), (4, '/empty', 'application/json', 0, 0, 0)`)
	s := openStore(t, Config{Dir: dir})
	got, err := s.EventIDSpans(ctx, &store.EventIDSpansParams{StreamID: 3, From: 0, To: 1000})
	if err != nil || len(got) != 1 || got[0] != (store.EventIDSpan{StreamID: 3, Start: 0, End: 120}) {
		t.Fatalf("spans of a stored stream = %+v, %v", got, err)
	}
	if got, err := s.EventIDSpans(ctx, &store.EventIDSpansParams{StreamID: 4, From: 0, To: 1000}); err != nil || len(got) != 0 {
		t.Fatalf("spans of an empty stream = %+v, %v", got, err)
	}
}
