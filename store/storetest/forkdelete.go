package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/heraldstreams/herald/store"
)

// testRecreateExpiredFork: an expired fork whose soft-deleted source
// other forks still hold is removed when its path is created again, and
// the path is free: the source stays for the other fork.
func testRecreateExpiredFork(t *testing.T, f Factory) {
	s := f.Open(t)
	ctx := context.Background()
	mustCreate(t, s, &store.StreamCreateParams{Path: "/src", ContentType: "text/plain", Data: []byte("abc")})
	mustCreate(t, s, &store.StreamCreateParams{Path: "/f1", ForkSource: "/src", ForkOffset: -1, TTL: time.Minute})
	mustCreate(t, s, &store.StreamCreateParams{Path: "/f2", ForkSource: "/src", ForkOffset: -1})
	if err := s.StreamDelete(ctx, &store.StreamDeleteParams{Path: "/src", Now: t0}); err != nil {
		t.Fatalf("delete the source: %v", err)
	}
	later := t0.Add(2 * time.Minute)
	res, err := s.StreamCreate(ctx, &store.StreamCreateParams{Path: "/f1", ContentType: "text/plain", Now: later})
	if err != nil || !res.Created || res.Stream.ForkSource != "" {
		t.Fatalf("create over the expired fork = %+v, %v; want a new stream", res, err)
	}
	if got := readAll(t, s, "/f2", -1, later); string(got) != "abc" {
		t.Fatalf("the other fork reads %q", got)
	}
}
