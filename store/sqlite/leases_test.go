package sqlite_test

import (
	"context"
	"testing"
	"time"

	"github.com/heraldstreams/herald/store"
)

// Leases live in the rows, and one process owns the database (the lock
// file): a delivery leased when the process stopped is claimable at once
// after a restart, without waiting for its lease to end, since Open ends
// the leases of the process before.
func TestLeasesEndWithTheProcess(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	dir := t.TempDir()
	s := open(t, dir)
	if _, err := s.EndpointCreate(ctx, &store.EndpointCreateParams{Now: now, Endpoint: store.Endpoint{ID: "ep", URL: "https://example.com/",
		EventTypes: []string{"*"}, Streams: []string{"/**"}, Active: true, Ordering: "none", Secret: "whsec_a"}}); err != nil {
		t.Fatal(err)
	}
	d := func(event string, leased bool) store.Delivery {
		out := store.Delivery{EndpointID: "ep", EventID: event, EventType: "t.x", Stream: "/s", Body: []byte(`{}`), NextAttemptAt: now}
		if leased {
			out.LeaseUntil = now.Add(time.Hour)
		}
		return out
	}
	res, err := s.DeliveryEnqueue(ctx, &store.DeliveryEnqueueParams{Stream: "/s", Now: now, Deliveries: []store.Delivery{d("a", true), d("b", false)}})
	if err != nil || len(res.Leased) != 1 {
		t.Fatalf("enqueue = %+v, %v", res, err)
	}
	claim := func(st store.Store) []string {
		t.Helper()
		c, err := st.DeliveryClaim(ctx, &store.DeliveryClaimParams{EndpointID: "ep", Limit: 10, Lease: time.Hour, Now: now})
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, d := range c.Deliveries {
			ids = append(ids, d.EventID)
		}
		return ids
	}
	if got := claim(s); len(got) != 1 || got[0] != "b" {
		t.Fatalf("claim = %v, want [b]: a is leased", got)
	}
	s = reopen(t, dir, s)
	if got := claim(s); len(got) != 2 {
		t.Fatalf("claim after a restart = %v, want both: no sender of the old process is alive", got)
	}
}

// reopen closes s and opens the store in dir again.
func reopen(t *testing.T, dir string, s store.Store) store.Store {
	t.Helper()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return open(t, dir)
}
