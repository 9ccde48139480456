package sqlite_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/heraldstreams/herald/store"
)

// Memberships are stored as JSON in the consumer's row: any stream path
// round-trips, and an update that changes only offsets still finds the
// consumer by each of its streams.
func TestConsumerMembershipsKeepAnyPath(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := open(t, t.TempDir())
	paths := []string{"/plain", `/quote"d`, `/back\slash`, "/é/ü", "/<html>&", "/line\u2028sep", "/ctl\x01"}
	c := store.Consumer{ID: "sub:x", SubscriptionID: "sub", PrimaryStream: paths[0], State: "IDLE"}
	for _, p := range paths {
		c.Streams = append(c.Streams, store.ConsumerStream{Path: p, Acked: "a"})
	}
	if _, err := s.ConsumerInsert(ctx, &store.ConsumerInsertParams{Consumers: []store.Consumer{c}}); err != nil {
		t.Fatal(err)
	}
	version := int64(1)
	for round := range 2 {
		for i := range c.Streams {
			c.Streams[i].Notified = c.Streams[i].Path + string(rune('0'+round))
		}
		v, err := s.ConsumerUpdate(ctx, &store.ConsumerUpdateParams{Consumer: c, ExpectVersion: version})
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		version = v
	}
	got, err := s.ConsumerGet(ctx, c.ID)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got.Streams, c.Streams) || got.Version != version {
		t.Fatalf("stored %+v (version %d), want %+v (version %d)", got.Streams, got.Version, c.Streams, version)
	}
	for _, p := range paths {
		list, err := s.ConsumerListByStream(ctx, &store.ConsumerListByStreamParams{Path: p})
		if err != nil || len(list) != 1 || list[0].ID != c.ID {
			t.Errorf("consumers of %q: %+v, %v", p, list, err)
		}
	}
	// A stale version is still refused.
	if _, err := s.ConsumerUpdate(ctx, &store.ConsumerUpdateParams{Consumer: c, ExpectVersion: version - 1}); !errors.Is(err, store.ErrConsumerConflict) {
		t.Errorf("an update expecting a stale version: %v, want %v", err, store.ErrConsumerConflict)
	}
}
