package sqlite

import (
	"context"
	"errors"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/heraldstreams/herald/store"
)

// testDeliveryIDs are delivery ids under a fixed key.
func testDeliveryIDs(t testing.TB) *deliveryIDs {
	t.Helper()
	x, err := newDeliveryIDs([]byte("0123456789abcdef0123456789abcdef"))
	if err != nil {
		t.Fatal(err)
	}
	return x
}

// FuzzParseDeliveryID: an id parses exactly when it is the id of a
// positive seq.
func FuzzParseDeliveryID(f *testing.F) {
	x := testDeliveryIDs(f)
	for _, s := range []string{x.id(1), x.id(math.MaxInt64), x.id(0), x.id(-1), strings.ToUpper(x.id(2)), "dlv_1", "dlv_", "x",
		"dlv_00000000000000000000000000000000", x.id(3) + "0"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, id string) {
		seq, ok := x.seq(id)
		if ok != (seq > 0 && x.id(seq) == id) {
			t.Fatalf("seq(%q) = %d, %v", id, seq, ok)
		}
	})
}

// TestDeliveryIDsAreOpaque: ids round-trip, and consecutive seqs give ids
// that share nothing guessable (each hex digit of an id differs from the
// previous id's as often as chance has it).
func TestDeliveryIDsAreOpaque(t *testing.T) {
	x := testDeliveryIDs(t)
	same, digits := 0, 0
	prev := x.id(1)
	for seq := int64(1); seq <= 2000; seq++ {
		id := x.id(seq)
		if got, ok := x.seq(id); !ok || got != seq {
			t.Fatalf("seq(id(%d)) = %d, %v", seq, got, ok)
		}
		if seq > 1 {
			for i := len(deliveryIDPrefix); i < len(id); i++ {
				digits++
				if id[i] == prev[i] {
					same++
				}
			}
		}
		prev = id
	}
	// 1 in 16 by chance: about 4000 of 64000.
	if same < 3000 || same > 5000 {
		t.Fatalf("%d of %d hex digits equal to the previous id's", same, digits)
	}
	if other, err := newDeliveryIDs([]byte("fedcba9876543210fedcba9876543210")); err != nil || other.id(1) == x.id(1) {
		t.Fatalf("another key gives the same id: %v", err)
	}
	if _, err := newDeliveryIDs([]byte("short")); err == nil {
		t.Fatal("a short key was accepted")
	}
}

// TestMigrationGivesStoredDeliveriesOpaqueIDs upgrades a store written
// before delivery id keys: its deliveries get ids of the new shape, the
// same at every start, and found by them.
func TestMigrationGivesStoredDeliveriesOpaqueIDs(t *testing.T) {
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
