package storetest

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/heraldstreams/herald/store"
)

func runDSSubscriptions(t *testing.T, f Factory) {
	run(t, f, "DSCreateReconfirmConflict", testDSCreateReconfirmConflict)
	run(t, f, "DSBackfillAtTail", testDSBackfillAtTail)
	run(t, f, "DSUpdateCompareAndSet", testDSUpdateCompareAndSet)
	run(t, f, "DSDeleteOwner", testDSDeleteOwner)
	run(t, f, "DSClaimDueOnce", testDSClaimDueOnce)
	run(t, f, "DSSigningKeys", testDSSigningKeys)
}

func dsSub(id, tenant, hash string) store.DSSubscription {
	return store.DSSubscription{ID: id, Tenant: tenant, Incarnation: "inc-" + id, Config: `{"type":"webhook"}`, ConfigHash: hash,
		Pattern: "/ev/*", State: `{"Phase":"idle"}`, Links: []store.DSLink{{Path: "/manual/a", Explicit: true, Acked: "-1"}}}
}

func testDSCreateReconfirmConflict(t *testing.T, f Factory) {
	s := f.Open(t)
	ctx := context.Background()
	res, err := s.DSSubscriptionCreate(ctx, &store.DSSubscriptionCreateParams{Subscription: dsSub("s1", "", "h1"), Now: t0})
	if err != nil || !res.Created || res.Subscription.Version != 1 || !res.Subscription.CreatedAt.Equal(t0) {
		t.Fatalf("create = %+v, %v", res, err)
	}
	again, err := s.DSSubscriptionCreate(ctx, &store.DSSubscriptionCreateParams{Subscription: dsSub("s1", "", "h1"), Now: t0.Add(time.Hour)})
	if err != nil || again.Created || !again.Subscription.CreatedAt.Equal(t0) || len(again.Subscription.Links) != 1 {
		t.Fatalf("re-confirm = %+v, %v", again, err)
	}
	for _, other := range []store.DSSubscription{dsSub("s1", "", "h2"), dsSub("s1", "acme", "h1")} {
		if _, err := s.DSSubscriptionCreate(ctx, &store.DSSubscriptionCreateParams{Subscription: other, Now: t0}); !errors.Is(err, store.ErrSubscriptionExists) {
			t.Fatalf("create with another configuration or owner: %v, want ErrSubscriptionExists", err)
		}
	}
	got, err := s.DSSubscriptionGet(ctx, "s1")
	if err != nil || got.ConfigHash != "h1" || got.Incarnation != "inc-s1" || len(got.Links) != 1 || !got.Links[0].Explicit {
		t.Fatalf("get = %+v, %v", got, err)
	}
	if _, err := s.DSSubscriptionGet(ctx, "nope"); !errors.Is(err, store.ErrSubscriptionNotFound) {
		t.Fatalf("get absent: %v", err)
	}
}

func testDSBackfillAtTail(t *testing.T, f Factory) {
	s := f.Open(t)
	ctx := context.Background()
	mustCreate(t, s, &store.StreamCreateParams{Path: "/ev/a", ContentType: "text/plain", Data: []byte("hello")})
	mustCreate(t, s, &store.StreamCreateParams{Path: "/ev/b/deep", ContentType: "text/plain"})
	mustCreate(t, s, &store.StreamCreateParams{Path: "/manual/a", ContentType: "text/plain", Data: []byte("x")})
	sub := dsSub("s1", "", "h")
	res, err := s.DSSubscriptionCreate(ctx, &store.DSSubscriptionCreateParams{Subscription: sub, Prefix: "/", Now: t0,
		Match: func(st *store.Stream) (store.DSLink, bool) {
			if st.Path == "/ev/b/deep" {
				return store.DSLink{}, false
			}
			return store.DSLink{Path: st.Path, Glob: true, Acked: "tail-" + st.Path}, true
		}})
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.DSSubscriptionGet(ctx, "s1")
	if err != nil {
		t.Fatal(err)
	}
	want := []store.DSLink{
		{Path: "/ev/a", Glob: true, Acked: "tail-/ev/a"},
		// Linked both ways: the explicit link keeps its cursor.
		{Path: "/manual/a", Glob: true, Explicit: true, Acked: "-1"},
	}
	if len(got.Links) != len(want) || got.Links[0] != want[0] || got.Links[1] != want[1] || len(res.Subscription.Links) != 2 {
		t.Fatalf("links = %+v, want %+v", got.Links, want)
	}
	ids, err := s.DSSubscriptionsLinking(ctx, "/ev/a")
	if err != nil || len(ids) != 1 || ids[0] != "s1" {
		t.Fatalf("linking /ev/a = %v, %v", ids, err)
	}
}

func testDSUpdateCompareAndSet(t *testing.T, f Factory) {
	s := f.Open(t)
	ctx := context.Background()
	if _, err := s.DSSubscriptionCreate(ctx, &store.DSSubscriptionCreateParams{Subscription: dsSub("s1", "", "h"), Now: t0}); err != nil {
		t.Fatal(err)
	}
	links := []store.DSLink{{Path: "/ev/x", Glob: true, Acked: "0001", Notified: "0002"}}
	v, err := s.DSSubscriptionUpdate(ctx, &store.DSSubscriptionUpdateParams{ID: "s1", State: `{"Phase":"live"}`, DueAt: t0.Add(time.Second), Links: links, ExpectVersion: 1})
	if err != nil || v != 2 {
		t.Fatalf("update = %d, %v", v, err)
	}
	if _, err := s.DSSubscriptionUpdate(ctx, &store.DSSubscriptionUpdateParams{ID: "s1", State: `{}`, ExpectVersion: 1}); !errors.Is(err, store.ErrConsumerConflict) {
		t.Fatalf("stale update: %v, want ErrConsumerConflict", err)
	}
	if _, err := s.DSSubscriptionUpdate(ctx, &store.DSSubscriptionUpdateParams{ID: "gone", State: `{}`, ExpectVersion: 1}); !errors.Is(err, store.ErrSubscriptionNotFound) {
		t.Fatalf("update absent: %v", err)
	}
	s = f.Reopen(t, s)
	got, err := s.DSSubscriptionGet(ctx, "s1")
	if err != nil || got.State != `{"Phase":"live"}` || got.Version != 2 || !got.DueAt.Equal(t0.Add(time.Second)) || len(got.Links) != 1 || got.Links[0] != links[0] {
		t.Fatalf("after reopen = %+v, %v", got, err)
	}
}

func testDSDeleteOwner(t *testing.T, f Factory) {
	s := f.Open(t)
	ctx := context.Background()
	if _, err := s.DSSubscriptionCreate(ctx, &store.DSSubscriptionCreateParams{Subscription: dsSub("s1", "acme", "h"), Now: t0}); err != nil {
		t.Fatal(err)
	}
	if err := s.DSSubscriptionDelete(ctx, "s1", "other"); !errors.Is(err, store.ErrSubscriptionNotFound) {
		t.Fatalf("delete by another tenant: %v", err)
	}
	if err := s.DSSubscriptionDelete(ctx, "s1", "acme"); err != nil {
		t.Fatal(err)
	}
	if ids, err := s.DSSubscriptionsLinking(ctx, "/manual/a"); err != nil || len(ids) != 0 {
		t.Fatalf("links after delete = %v, %v", ids, err)
	}
	if list, err := s.DSSubscriptionList(ctx); err != nil || len(list) != 0 {
		t.Fatalf("list after delete = %v, %v", list, err)
	}
}

// testDSClaimDueOnce: a due timer is claimed by one handle (of a
// replica's too) until the claim's lease ends or an update ends it.
func testDSClaimDueOnce(t *testing.T, f Factory) {
	s := f.Open(t)
	ctx := context.Background()
	for _, id := range []string{"a", "b", "c"} {
		sub := dsSub(id, "", "h")
		sub.DueAt = t0
		if id == "c" {
			sub.DueAt = t0.Add(time.Minute)
		}
		if _, err := s.DSSubscriptionCreate(ctx, &store.DSSubscriptionCreateParams{Subscription: sub, Now: t0}); err != nil {
			t.Fatal(err)
		}
	}
	peer := peerOf(t, f, s)
	seen := claimConcurrently(t, []store.Store{s, peer}, 4, func(h store.Store) ([]string, error) {
		ids, _, err := h.DSSubscriptionClaimDue(ctx, t0, 30*time.Second, 1)
		return ids, err
	})
	if len(seen) != 2 || seen["a"] != 1 || seen["b"] != 1 {
		t.Fatalf("claims = %v, want a and b once each", seen)
	}
	ids, next, err := s.DSSubscriptionClaimDue(ctx, t0.Add(31*time.Second), 30*time.Second, 10)
	if err != nil || len(ids) != 2 || !next.Equal(t0.Add(time.Minute)) {
		t.Fatalf("after the lease = %v, next %v, %v; want a and b again, next at c's", ids, next, err)
	}
	if _, err := s.DSSubscriptionUpdate(ctx, &store.DSSubscriptionUpdateParams{ID: "a", State: `{}`, ExpectVersion: 1}); err != nil {
		t.Fatal(err)
	}
	if ids, _, err := s.DSSubscriptionClaimDue(ctx, t0.Add(32*time.Second), 30*time.Second, 10); err != nil || len(ids) != 0 {
		t.Fatalf("claims after the update cleared a's deadline = %v, %v", ids, err)
	}
}

func testDSSigningKeys(t *testing.T, f Factory) {
	s := f.Open(t)
	ctx := context.Background()
	k1 := store.SigningKey{Kid: "ds_one", Seed: bytes.Repeat([]byte{1}, 32), CreatedAt: t0}
	keys, err := s.SigningKeyInit(ctx, k1)
	if err != nil || len(keys) != 1 || keys[0].Kid != "ds_one" || !bytes.Equal(keys[0].Seed, k1.Seed) {
		t.Fatalf("init = %+v, %v", keys, err)
	}
	// A second start offers another key: the stored one stays.
	keys, err = s.SigningKeyInit(ctx, store.SigningKey{Kid: "ds_other", Seed: bytes.Repeat([]byte{9}, 32), CreatedAt: t0})
	if err != nil || len(keys) != 1 || keys[0].Kid != "ds_one" {
		t.Fatalf("second init = %+v, %v", keys, err)
	}
	later := t0.Add(time.Hour)
	keys, err = s.SigningKeyRotate(ctx, store.SigningKey{Kid: "ds_two", Seed: bytes.Repeat([]byte{2}, 32), CreatedAt: later})
	if err != nil || len(keys) != 2 || keys[0].Kid != "ds_two" || !keys[0].RetiredAt.IsZero() || keys[1].Kid != "ds_one" || !keys[1].RetiredAt.Equal(later) {
		t.Fatalf("rotate = %+v, %v", keys, err)
	}
	s = f.Reopen(t, s)
	keys, err = s.SigningKeyList(ctx)
	if err != nil || len(keys) != 2 || keys[0].Kid != "ds_two" || !bytes.Equal(keys[1].Seed, k1.Seed) {
		t.Fatalf("list after reopen = %+v, %v", keys, err)
	}
	sf, ok := f.(SecretsFactory)
	if !ok {
		t.Fatal("the factory does not implement storetest.SecretsFactory: signing keys at rest go untested")
	}
	sealed := sf.OpenBox(t, newBox(t, newKey(t, "kek1")))
	if _, err := sealed.SigningKeyInit(ctx, k1); err != nil {
		t.Fatal(err)
	}
	stored := sf.Stored(t, sealed, "ds_signing_keys", "secret")
	if len(stored) != 1 || strings.Contains(stored[0], "AQEBAQEB") {
		t.Fatalf("the signing key is stored as %q, want it sealed", stored)
	}
	if keys, err := sealed.SigningKeyList(ctx); err != nil || !bytes.Equal(keys[0].Seed, k1.Seed) {
		t.Fatalf("sealed key reads back as %+v, %v", keys, err)
	}
}
