package storetest

import (
	"bytes"
	"context"
	"errors"
	"slices"
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
	run(t, f, "DSKindsShareRows", testDSKindsShareRows)
	run(t, f, "DSSigningKeys", testDSSigningKeys)
}

// dsSub is a reserved-API subscription as the engine stores it: a
// consumer of kind ConsumerReserved with one explicit link.
func dsSub(id, tenant, hash string) store.Consumer {
	return store.Consumer{ID: "__ds/" + id, Kind: store.ConsumerReserved, SubscriptionID: "__ds/" + id, Tenant: tenant,
		Incarnation: "inc-" + id, Config: `{"type":"webhook"}`, ConfigHash: hash, Pattern: "/ev/*", State: "IDLE",
		Streams: []store.ConsumerStream{{Path: "/manual/a", Explicit: true, Acked: "-1"}}}
}

func testDSCreateReconfirmConflict(t *testing.T, f Factory) {
	s := f.Open(t)
	ctx := context.Background()
	res, err := s.DSSubscriptionCreate(ctx, &store.DSSubscriptionCreateParams{Consumer: dsSub("s1", "", "h1"), Now: t0})
	if err != nil || !res.Created || res.Consumer.Version != 1 || !res.Consumer.CreatedAt.Equal(t0) {
		t.Fatalf("create = %+v, %v", res, err)
	}
	again, err := s.DSSubscriptionCreate(ctx, &store.DSSubscriptionCreateParams{Consumer: dsSub("s1", "", "h1"), Now: t0.Add(time.Hour)})
	if err != nil || again.Created || !again.Consumer.CreatedAt.Equal(t0) || len(again.Consumer.Streams) != 1 {
		t.Fatalf("re-confirm = %+v, %v", again, err)
	}
	for _, other := range []store.Consumer{dsSub("s1", "", "h2"), dsSub("s1", "acme", "h1")} {
		if _, err := s.DSSubscriptionCreate(ctx, &store.DSSubscriptionCreateParams{Consumer: other, Now: t0}); !errors.Is(err, store.ErrSubscriptionExists) {
			t.Fatalf("create with another configuration or owner: %v, want ErrSubscriptionExists", err)
		}
	}
	got, err := s.ConsumerGet(ctx, "__ds/s1")
	if err != nil || got.Kind != store.ConsumerReserved || got.ConfigHash != "h1" || got.Incarnation != "inc-s1" || got.Pattern != "/ev/*" ||
		got.Config != `{"type":"webhook"}` || !got.CreatedAt.Equal(t0) || len(got.Streams) != 1 || !got.Streams[0].Explicit || got.Streams[0].Glob {
		t.Fatalf("get = %+v, %v", got, err)
	}
	if list, err := s.DSSubscriptionList(ctx); err != nil || len(list) != 1 || list[0].ID != "__ds/s1" || list[0].Streams != nil {
		t.Fatalf("list = %+v, %v", list, err)
	}
}

func testDSBackfillAtTail(t *testing.T, f Factory) {
	s := f.Open(t)
	ctx := context.Background()
	mustCreate(t, s, &store.StreamCreateParams{Path: "/ev/a", ContentType: "text/plain", Data: []byte("hello")})
	mustCreate(t, s, &store.StreamCreateParams{Path: "/ev/b/deep", ContentType: "text/plain"})
	mustCreate(t, s, &store.StreamCreateParams{Path: "/manual/a", ContentType: "text/plain", Data: []byte("x")})
	res, err := s.DSSubscriptionCreate(ctx, &store.DSSubscriptionCreateParams{Consumer: dsSub("s1", "", "h"), Prefix: "/", Now: t0,
		Match: func(st *store.Stream) (store.ConsumerStream, bool) {
			if st.Path == "/ev/b/deep" {
				return store.ConsumerStream{}, false
			}
			return store.ConsumerStream{Path: st.Path, Glob: true, Acked: "tail-" + st.Path}, true
		}})
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.ConsumerGet(ctx, "__ds/s1")
	if err != nil {
		t.Fatal(err)
	}
	want := []store.ConsumerStream{
		// Linked both ways: the explicit link keeps its cursor.
		{Path: "/manual/a", Glob: true, Explicit: true, Acked: "-1"},
		{Path: "/ev/a", Glob: true, Acked: "tail-/ev/a"},
	}
	if !slices.Equal(got.Streams, want) || len(res.Consumer.Streams) != 2 {
		t.Fatalf("links = %+v, want %+v", got.Streams, want)
	}
	linking, err := s.ConsumerListByStream(ctx, &store.ConsumerListByStreamParams{Path: "/ev/a"})
	if err != nil || len(linking) != 1 || linking[0].ID != "__ds/s1" {
		t.Fatalf("linking /ev/a = %+v, %v", linking, err)
	}
}

func testDSUpdateCompareAndSet(t *testing.T, f Factory) {
	s := f.Open(t)
	ctx := context.Background()
	if _, err := s.DSSubscriptionCreate(ctx, &store.DSSubscriptionCreateParams{Consumer: dsSub("s1", "", "h"), Now: t0}); err != nil {
		t.Fatal(err)
	}
	c, err := s.ConsumerGet(ctx, "__ds/s1")
	if err != nil {
		t.Fatal(err)
	}
	c.State, c.Epoch, c.WakeID, c.Holder, c.WakeWritten = "LIVE", 3, "w_1", "worker-1", true
	c.LivenessDeadline, c.DueAt = t0.Add(time.Second), t0.Add(time.Second)
	c.Streams = []store.ConsumerStream{{Path: "/ev/x", Glob: true, Acked: "0001", Notified: "0002"}}
	v, err := s.ConsumerUpdate(ctx, &store.ConsumerUpdateParams{Consumer: *c, ExpectVersion: 1})
	if err != nil || v != 2 {
		t.Fatalf("update = %d, %v", v, err)
	}
	if _, err := s.ConsumerUpdate(ctx, &store.ConsumerUpdateParams{Consumer: *c, ExpectVersion: 1}); !errors.Is(err, store.ErrConsumerConflict) {
		t.Fatalf("stale update: %v, want ErrConsumerConflict", err)
	}
	s = f.Reopen(t, s)
	got, err := s.ConsumerGet(ctx, "__ds/s1")
	if err != nil || got.State != "LIVE" || got.Holder != "worker-1" || !got.WakeWritten || got.Version != 2 || !got.DueAt.Equal(t0.Add(time.Second)) ||
		got.ConfigHash != "h" || got.Kind != store.ConsumerReserved || !slices.Equal(got.Streams, c.Streams) {
		t.Fatalf("after reopen = %+v, %v", got, err)
	}
	// The index follows the links: the explicit link went.
	if left, err := s.ConsumerListByStream(ctx, &store.ConsumerListByStreamParams{Path: "/manual/a"}); err != nil || len(left) != 0 {
		t.Fatalf("linking /manual/a after the update = %+v, %v", left, err)
	}
}

func testDSDeleteOwner(t *testing.T, f Factory) {
	s := f.Open(t)
	ctx := context.Background()
	if _, err := s.DSSubscriptionCreate(ctx, &store.DSSubscriptionCreateParams{Consumer: dsSub("s1", "acme", "h"), Now: t0}); err != nil {
		t.Fatal(err)
	}
	if err := s.ConsumerDelete(ctx, &store.ConsumerDeleteParams{ID: "__ds/s1", Tenant: "other"}); !errors.Is(err, store.ErrConsumerNotFound) {
		t.Fatalf("delete by another tenant: %v", err)
	}
	if err := s.ConsumerDelete(ctx, &store.ConsumerDeleteParams{ID: "__ds/s1", Tenant: "acme"}); err != nil {
		t.Fatal(err)
	}
	if ids, err := s.ConsumerListByStream(ctx, &store.ConsumerListByStreamParams{Path: "/manual/a"}); err != nil || len(ids) != 0 {
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
		if _, err := s.DSSubscriptionCreate(ctx, &store.DSSubscriptionCreateParams{Consumer: sub, Now: t0}); err != nil {
			t.Fatal(err)
		}
	}
	claim := func(h store.Store, now time.Time, limit int) ([]string, time.Time, error) {
		res, err := h.ConsumerClaimDue(ctx, &store.ConsumerClaimDueParams{Now: now, Lease: 30 * time.Second, Limit: limit})
		if err != nil {
			return nil, time.Time{}, err
		}
		var ids []string
		for _, c := range res.Consumers {
			ids = append(ids, c.ID)
		}
		return ids, res.NextDueAt, nil
	}
	peer := peerOf(t, f, s)
	seen := claimConcurrently(t, []store.Store{s, peer}, 4, func(h store.Store) ([]string, error) {
		ids, _, err := claim(h, t0, 1)
		return ids, err
	})
	if len(seen) != 2 || seen["__ds/a"] != 1 || seen["__ds/b"] != 1 {
		t.Fatalf("claims = %v, want a and b once each", seen)
	}
	ids, next, err := claim(s, t0.Add(31*time.Second), 10)
	if err != nil || len(ids) != 2 || !next.Equal(t0.Add(time.Minute)) {
		t.Fatalf("after the lease = %v, next %v, %v; want a and b again, next at c's", ids, next, err)
	}
	a, err := s.ConsumerGet(ctx, "__ds/a")
	if err != nil {
		t.Fatal(err)
	}
	a.DueAt = time.Time{}
	if _, err := s.ConsumerUpdate(ctx, &store.ConsumerUpdateParams{Consumer: *a, ExpectVersion: a.Version}); err != nil {
		t.Fatal(err)
	}
	if ids, _, err := claim(s, t0.Add(32*time.Second), 10); err != nil || len(ids) != 0 {
		t.Fatalf("claims after the update cleared a's deadline = %v, %v; want none (b's claim runs)", ids, err)
	}
}

// testDSKindsShareRows: both kinds of consumer share the rows, the
// memberships index and the timer claim, each row saying its kind: one
// engine finds, claims and reconciles them all.
func testDSKindsShareRows(t *testing.T, f Factory) {
	s := f.Open(t)
	ctx := context.Background()
	sub := dsSub("s1", "", "h")
	sub.DueAt = t0
	sub.Streams = []store.ConsumerStream{{Path: "/shared", Explicit: true, Acked: "-1"}}
	if _, err := s.DSSubscriptionCreate(ctx, &store.DSSubscriptionCreateParams{Consumer: sub, Now: t0}); err != nil {
		t.Fatal(err)
	}
	c := consumer("q:%2Fshared", "q", "/shared", "/shared")
	c.DueAt = t0
	if _, err := s.ConsumerInsert(ctx, &store.ConsumerInsertParams{Consumers: []store.Consumer{c}}); err != nil {
		t.Fatal(err)
	}
	kinds := func(list []store.Consumer) []string {
		var out []string
		for _, c := range list {
			out = append(out, c.ID+"="+c.Kind)
		}
		return out
	}
	want := []string{"__ds/s1=" + store.ConsumerReserved, "q:%2Fshared=" + store.ConsumerWake}
	got, err := s.ConsumerListByStream(ctx, &store.ConsumerListByStreamParams{Path: "/shared"})
	if err != nil || !slices.Equal(kinds(got), want) {
		t.Fatalf("consumers of /shared = %v, %v; want %v", kinds(got), err, want)
	}
	due, err := s.ConsumerClaimDue(ctx, &store.ConsumerClaimDueParams{Now: t0, Lease: time.Minute})
	if err != nil || !slices.Equal(kinds(due.Consumers), want) {
		t.Fatalf("due timers = %v, %v; want %v", kinds(due.Consumers), err, want)
	}
	if paths, err := s.ConsumerPathList(ctx, &store.ConsumerPathListParams{}); err != nil || !slices.Equal(paths, []string{"/shared"}) {
		t.Fatalf("consumer paths = %v, %v", paths, err)
	}
	// A query-string subscription of the reserved one's id is another
	// subscription: deleting it leaves the reserved one.
	if _, err := s.SubscriptionCreate(ctx, &store.SubscriptionCreateParams{Subscription: store.Subscription{ID: "s1", Pattern: "/q/*",
		Webhook: "https://example.com/h", Secret: "whsec_x"}, Now: t0}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.SubscriptionDelete(ctx, &store.SubscriptionDeleteParams{ID: "s1"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ConsumerGet(ctx, "__ds/s1"); err != nil {
		t.Fatalf("the reserved-API subscription after deleting the query-string one of its id: %v", err)
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
