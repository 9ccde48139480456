package storetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/heraldstreams/herald/store"
)

func runSubscriptions(t *testing.T, f Factory) {
	run(t, f, "SubscriptionCRUD", testSubscriptionCRUD)
	run(t, f, "SubscriptionOwners", testSubscriptionOwners)
	run(t, f, "ConsumerCAS", testConsumerCAS)
	run(t, f, "ConsumerQueries", testConsumerQueries)
	run(t, f, "ConsumerStalled", testConsumerStalled)
	run(t, f, "ConsumerRace", testConsumerRace)
	run(t, f, "ConsumerReadsUnderLoad", testConsumerReadsUnderLoad)
	run(t, f, "StreamList", testStreamList)
	run(t, f, "StreamChanges", testStreamChanges)
	run(t, f, "CheckedMarks", testCheckedMarks)
}

func consumer(id, sub, primary string, paths ...string) store.Consumer {
	c := store.Consumer{ID: id, SubscriptionID: sub, PrimaryStream: primary, State: "IDLE"}
	for _, p := range paths {
		c.Streams = append(c.Streams, store.ConsumerStream{Path: p, Acked: "-1"})
	}
	return c
}

func testSubscriptionCRUD(t *testing.T, f Factory) {
	s := f.Open(t)
	ctx := context.Background()
	mustCreate(t, s, &store.StreamCreateParams{Path: "/agents/a", ContentType: "text/plain", Data: []byte("abc"), Now: t0})
	mustCreate(t, s, &store.StreamCreateParams{Path: "/agents/skip", ContentType: "text/plain", Now: t0})
	mustCreate(t, s, &store.StreamCreateParams{Path: "/agents/old", ContentType: "text/plain", ExpiresAt: t0.Add(time.Second), Now: t0})
	mustCreate(t, s, &store.StreamCreateParams{Path: "/other/x", ContentType: "text/plain", Now: t0})
	sub := store.Subscription{ID: "h1", Pattern: "/agents/*", Webhook: "https://example.com/h", Secret: "whsec_x", Description: "d"}
	// Spawn sees the live streams under the prefix, with their tails, and
	// decides which get a consumer.
	var seen []string
	spawn := func(st *store.Stream) (store.Consumer, bool) {
		seen = append(seen, st.Path)
		if st.Path == "/agents/skip" {
			return store.Consumer{}, false
		}
		c := consumer("h1:"+st.Path, "h1", st.Path, st.Path)
		c.Streams[0].Acked = fmt.Sprint(st.Tail)
		return c, true
	}
	res, err := s.SubscriptionCreate(ctx, &store.SubscriptionCreateParams{Subscription: sub, Now: t0.Add(time.Minute),
		Prefix: "/agents/", Spawn: spawn})
	if err != nil || !res.Created || res.Subscription.Secret != "whsec_x" || !res.Subscription.CreatedAt.Equal(t0.Add(time.Minute)) {
		t.Fatalf("create = %+v, %v", res, err)
	}
	if slices.Sort(seen); !slices.Equal(seen, []string{"/agents/a", "/agents/skip"}) {
		t.Fatalf("spawn saw %v, want the live streams under the prefix", seen)
	}
	if c, err := s.ConsumerGet(ctx, "h1:/agents/a"); err != nil || c.Streams[0].Acked != "3" {
		t.Fatalf("initial consumer = %+v, %v", c, err)
	}
	_, err = s.ConsumerGet(ctx, "h1:/agents/skip")
	expectErr(t, err, store.ErrConsumerNotFound)
	// Same configuration: not created again, the stored secret returned,
	// no consumer spawned.
	again := sub
	again.Secret = "whsec_other"
	seen = nil
	res, err = s.SubscriptionCreate(ctx, &store.SubscriptionCreateParams{Subscription: again, Now: t0.Add(time.Hour),
		Prefix: "/agents/", Spawn: spawn})
	if err != nil || res.Created || res.Subscription.Secret != "whsec_x" || len(seen) != 0 {
		t.Fatalf("idempotent create = %+v, %v (spawn saw %v)", res, err, seen)
	}
	other := sub
	other.Webhook = "https://example.com/other"
	_, err = s.SubscriptionCreate(ctx, &store.SubscriptionCreateParams{Subscription: other, Now: t0})
	expectErr(t, err, store.ErrSubscriptionExists)

	if _, err := s.SubscriptionCreate(ctx, &store.SubscriptionCreateParams{Now: t0,
		Subscription: store.Subscription{ID: "h0", Pattern: "/**", Webhook: "https://example.com/all", Secret: "s"}}); err != nil {
		t.Fatal(err)
	}
	all, err := s.SubscriptionList(ctx, &store.SubscriptionListParams{})
	if err != nil || len(all) != 2 || all[0].ID != "h0" || all[1].ID != "h1" {
		t.Fatalf("list all = %+v, %v", all, err)
	}
	byPattern, err := s.SubscriptionList(ctx, &store.SubscriptionListParams{Pattern: "/agents/*"})
	if err != nil || len(byPattern) != 1 || byPattern[0].ID != "h1" {
		t.Fatalf("list by pattern = %+v, %v", byPattern, err)
	}
	got, err := s.SubscriptionGet(ctx, "h1")
	if err != nil || got.Pattern != "/agents/*" || got.Description != "d" {
		t.Fatalf("get = %+v, %v", got, err)
	}

	// Delete cascades to consumers.
	if n, err := s.SubscriptionDelete(ctx, &store.SubscriptionDeleteParams{ID: "h1"}); err != nil || n != 1 {
		t.Fatalf("delete = %d consumers removed, %v; want 1", n, err)
	}
	_, err = s.ConsumerGet(ctx, "h1:/agents/a")
	expectErr(t, err, store.ErrConsumerNotFound)
	_, err = s.SubscriptionGet(ctx, "h1")
	expectErr(t, err, store.ErrSubscriptionNotFound)
	_, err = s.SubscriptionDelete(ctx, &store.SubscriptionDeleteParams{ID: "h1"})
	expectErr(t, err, store.ErrSubscriptionNotFound)
	if left, err := s.ConsumerListByStream(ctx, &store.ConsumerListByStreamParams{Path: "/agents/a"}); err != nil || len(left) != 0 {
		t.Fatalf("memberships left after cascade: %+v, %v", left, err)
	}
}

func testConsumerCAS(t *testing.T, f Factory) {
	s := f.Open(t)
	ctx := context.Background()
	c := consumer("s:%2Fa", "s", "/a", "/a")
	c.Incarnation = "i_1"
	ids, err := s.ConsumerInsert(ctx, &store.ConsumerInsertParams{Consumers: []store.Consumer{c, c}})
	if err != nil || len(ids) != 1 {
		t.Fatalf("insert = %v, %v", ids, err)
	}
	if ids, err := s.ConsumerInsert(ctx, &store.ConsumerInsertParams{Consumers: []store.Consumer{c}}); err != nil || len(ids) != 0 {
		t.Fatalf("insert existing = %v, %v", ids, err)
	}
	got, err := s.ConsumerGet(ctx, c.ID)
	if err != nil || got.Version != 1 || got.Incarnation != "i_1" || got.State != "IDLE" || len(got.Streams) != 1 || got.Streams[0].Acked != "-1" {
		t.Fatalf("get = %+v, %v", got, err)
	}
	next := *got
	next.Incarnation = "i_2" // an update never changes it
	next.State, next.Epoch, next.WakeID = "WAKING", 1, "w_1"
	next.WakingDeadline = t0.Add(10 * time.Second)
	next.DueAt = next.WakingDeadline
	next.Streams = []store.ConsumerStream{{Path: "/a", Acked: "-1", Notified: "0005"}, {Path: "/b", Acked: "0001"}}
	v, err := s.ConsumerUpdate(ctx, &store.ConsumerUpdateParams{Consumer: next, ExpectVersion: 1})
	if err != nil || v != 2 {
		t.Fatalf("update = %d, %v", v, err)
	}
	// A writer holding the old version loses.
	_, err = s.ConsumerUpdate(ctx, &store.ConsumerUpdateParams{Consumer: next, ExpectVersion: 1})
	expectErr(t, err, store.ErrConsumerConflict)
	got, err = s.ConsumerGet(ctx, c.ID)
	if err != nil || got.Version != 2 || got.Incarnation != "i_1" || got.State != "WAKING" || got.Epoch != 1 || got.WakeID != "w_1" ||
		!got.WakingDeadline.Equal(t0.Add(10*time.Second)) || len(got.Streams) != 2 || got.Streams[0].Notified != "0005" || got.Streams[1].Path != "/b" {
		t.Fatalf("after update = %+v, %v", got, err)
	}
	expectErr(t, s.ConsumerDelete(ctx, &store.ConsumerDeleteParams{ID: c.ID, ExpectVersion: 1}), store.ErrConsumerConflict)
	if err := s.ConsumerDelete(ctx, &store.ConsumerDeleteParams{ID: c.ID, ExpectVersion: 2}); err != nil {
		t.Fatal(err)
	}
	_, err = s.ConsumerUpdate(ctx, &store.ConsumerUpdateParams{Consumer: next, ExpectVersion: 2})
	expectErr(t, err, store.ErrConsumerNotFound)
	expectErr(t, s.ConsumerDelete(ctx, &store.ConsumerDeleteParams{ID: c.ID}), store.ErrConsumerNotFound)
}

func testConsumerQueries(t *testing.T, f Factory) {
	s := f.Open(t)
	ctx := context.Background()
	a := consumer("s:%2Fa", "s", "/a", "/a", "/shared")
	a.DueAt = t0.Add(time.Second)
	b := consumer("s:%2Fb", "s", "/b", "/b", "/shared")
	b.State = "LIVE"
	b.DueAt = t0.Add(time.Minute)
	c := consumer("s:%2Fc", "s", "/c", "/shared")
	if _, err := s.ConsumerInsert(ctx, &store.ConsumerInsertParams{Consumers: []store.Consumer{a, b, c}}); err != nil {
		t.Fatal(err)
	}
	// Due timers are claimed: a claimed one is not returned again while
	// its lease runs, and the result tells the next timer.
	claim := func(at time.Time) *store.ConsumerClaimDueResult {
		t.Helper()
		res, err := s.ConsumerClaimDue(ctx, &store.ConsumerClaimDueParams{Now: at, Lease: 10 * time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	due := claim(t0.Add(2 * time.Second))
	if len(due.Consumers) != 1 || due.Consumers[0].ID != a.ID || len(due.Consumers[0].Streams) != 2 || !due.NextDueAt.Equal(b.DueAt) {
		t.Fatalf("due = %+v", due)
	}
	if due := claim(t0.Add(3 * time.Second)); len(due.Consumers) != 0 {
		t.Fatalf("due again while leased = %+v", due)
	}
	due = claim(t0.Add(time.Hour))
	if len(due.Consumers) != 2 || due.Consumers[0].ID != a.ID || due.Consumers[1].ID != b.ID || !due.NextDueAt.IsZero() {
		t.Fatalf("due after the lease = %+v", due)
	}
	// An update ends the lease: the timer it sets is claimable when due.
	stored, err := s.ConsumerGet(ctx, a.ID)
	if err != nil {
		t.Fatal(err)
	}
	stored.DueAt = t0.Add(time.Hour + time.Second)
	if _, err := s.ConsumerUpdate(ctx, &store.ConsumerUpdateParams{Consumer: *stored, ExpectVersion: stored.Version}); err != nil {
		t.Fatal(err)
	}
	if due := claim(t0.Add(time.Hour + 2*time.Second)); len(due.Consumers) != 1 || due.Consumers[0].ID != a.ID {
		t.Fatalf("due after an update = %+v", due)
	}
	shared, err := s.ConsumerListByStream(ctx, &store.ConsumerListByStreamParams{Path: "/shared"})
	if err != nil || len(shared) != 3 {
		t.Fatalf("by stream = %+v, %v", shared, err)
	}
	primary, err := s.ConsumerListByPrimary(ctx, &store.ConsumerListByStreamParams{Path: "/c"})
	if err != nil || len(primary) != 1 || primary[0].ID != c.ID {
		t.Fatalf("by primary = %+v, %v", primary, err)
	}
	// A subscription's consumers, in pages by ID.
	bySub, err := s.ConsumerListBySubscription(ctx, &store.ConsumerListBySubscriptionParams{SubscriptionID: "s"})
	if err != nil || len(bySub) != 3 || bySub[0].ID != a.ID || bySub[2].ID != c.ID || len(bySub[0].Streams) != 2 {
		t.Fatalf("by subscription = %+v, %v", bySub, err)
	}
	bySub, err = s.ConsumerListBySubscription(ctx, &store.ConsumerListBySubscriptionParams{SubscriptionID: "s", After: a.ID, Limit: 1})
	if err != nil || len(bySub) != 1 || bySub[0].ID != b.ID {
		t.Fatalf("by subscription after %s = %+v, %v", a.ID, bySub, err)
	}
	bySub, err = s.ConsumerListBySubscription(ctx, &store.ConsumerListBySubscriptionParams{SubscriptionID: "other"})
	if err != nil || len(bySub) != 0 {
		t.Fatalf("by another subscription = %+v, %v", bySub, err)
	}
	counts, err := s.ConsumerCount(ctx)
	if err != nil || counts["IDLE"] != 2 || counts["LIVE"] != 1 {
		t.Fatalf("count = %v, %v", counts, err)
	}
	// Every path some consumer is subscribed to, once, in pages.
	paths, err := s.ConsumerPathList(ctx, &store.ConsumerPathListParams{})
	if err != nil || !slices.Equal(paths, []string{"/a", "/b", "/shared"}) {
		t.Fatalf("paths = %v, %v", paths, err)
	}
	paths, err = s.ConsumerPathList(ctx, &store.ConsumerPathListParams{After: "/a", Limit: 1})
	if err != nil || !slices.Equal(paths, []string{"/b"}) {
		t.Fatalf("paths after /a = %v, %v", paths, err)
	}
	paths, err = s.ConsumerPathList(ctx, &store.ConsumerPathListParams{After: "/shared", Limit: 1})
	if err != nil || len(paths) != 0 {
		t.Fatalf("paths after the last = %v, %v", paths, err)
	}
	// Durable: all of it is there after a reopen.
	s = f.Reopen(t, s)
	got, err := s.ConsumerGet(ctx, b.ID)
	if err != nil || got.State != "LIVE" || !got.DueAt.Equal(t0.Add(time.Minute)) || len(got.Streams) != 2 {
		t.Fatalf("after reopen = %+v, %v", got, err)
	}
}

func testConsumerRace(t *testing.T, f Factory) {
	s := f.Open(t)
	ctx := context.Background()
	c := consumer("r:%2Fx", "r", "/x", "/x")
	if _, err := s.ConsumerInsert(ctx, &store.ConsumerInsertParams{Consumers: []store.Consumer{c}}); err != nil {
		t.Fatal(err)
	}
	// Many writers read version 1 and try to move the consumer on: one wins.
	var wg sync.WaitGroup
	var mu sync.Mutex
	wins, conflicts := 0, 0
	for i := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			next := c
			next.Epoch = int64(i + 1)
			_, err := s.ConsumerUpdate(ctx, &store.ConsumerUpdateParams{Consumer: next, ExpectVersion: 1})
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				wins++
			case errors.Is(err, store.ErrConsumerConflict):
				conflicts++
			default:
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if wins != 1 || conflicts != 15 {
		t.Fatalf("wins %d, conflicts %d", wins, conflicts)
	}
}

func testStreamList(t *testing.T, f Factory) {
	s := f.Open(t)
	ctx := context.Background()
	for _, p := range []string{"/agents/b", "/agents/a", "/other/x"} {
		mustCreate(t, s, &store.StreamCreateParams{Path: p, ContentType: "text/plain"})
	}
	mustCreate(t, s, &store.StreamCreateParams{Path: "/agents/old", ContentType: "text/plain", ExpiresAt: t0.Add(time.Second)})
	list, err := s.StreamList(ctx, &store.StreamListParams{Prefix: "/agents/", Now: t0.Add(time.Minute)})
	if err != nil || len(list) != 2 || list[0].Path != "/agents/a" || list[1].Path != "/agents/b" {
		t.Fatalf("list = %+v, %v", list, err)
	}
	// Pages: after a path, at most a limit.
	list, err = s.StreamList(ctx, &store.StreamListParams{Prefix: "/", Limit: 2, Now: t0.Add(time.Minute)})
	if err != nil || len(list) != 2 || list[0].Path != "/agents/a" || list[1].Path != "/agents/b" {
		t.Fatalf("first page = %+v, %v", list, err)
	}
	list, err = s.StreamList(ctx, &store.StreamListParams{Prefix: "/", After: "/agents/b", Limit: 2, Now: t0.Add(time.Minute)})
	if err != nil || len(list) != 1 || list[0].Path != "/other/x" {
		t.Fatalf("second page = %+v, %v", list, err)
	}
}

// testConsumerReadsUnderLoad: many more concurrent readers than a backend
// has connections, on a fresh store (nothing prepared or cached yet), all
// finish with the right answer. A backend that holds one connection while
// waiting for another hangs here.
func testConsumerReadsUnderLoad(t *testing.T, f Factory) {
	s := f.Open(t)
	ctx := context.Background()
	var cs []store.Consumer
	for _, id := range []string{"a", "b", "c", "d"} {
		cs = append(cs, consumer("s:%2F"+id, "s", "/"+id, "/"+id, "/shared"))
	}
	if _, err := s.ConsumerInsert(ctx, &store.ConsumerInsertParams{Consumers: cs}); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i := range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 10 {
				list, err := s.ConsumerListByStream(ctx, &store.ConsumerListByStreamParams{Path: "/shared"})
				if err != nil || len(list) != 4 {
					t.Errorf("reader %d: %d consumers, %v", i, len(list), err)
					return
				}
				c, err := s.ConsumerGet(ctx, cs[i%4].ID)
				if err != nil || len(c.Streams) != 2 {
					t.Errorf("reader %d: get = %+v, %v", i, c, err)
					return
				}
			}
		}()
	}
	wg.Wait()
}

// testSubscriptionOwners: a subscription keeps its owner (a tenant, or
// "" for the platform); a list, a delete and a consumer list limited to
// a tenant never reach another owner's subscription, and the same id
// under another owner is another configuration.
func testSubscriptionOwners(t *testing.T, f Factory) {
	s := f.Open(t)
	ctx := context.Background()
	mustCreate(t, s, &store.StreamCreateParams{Path: "/tenants/acme/a", ContentType: "text/plain", Now: t0})
	create := func(id, tenant, pattern string) {
		t.Helper()
		spawn := func(st *store.Stream) (store.Consumer, bool) {
			return consumer(id+":"+st.Path, id, st.Path, st.Path), true
		}
		sub := store.Subscription{ID: id, Tenant: tenant, Pattern: pattern, Webhook: "https://example.com/" + id, Secret: "whsec_" + id}
		prefix := strings.TrimSuffix(pattern, "**")
		res, err := s.SubscriptionCreate(ctx, &store.SubscriptionCreateParams{Subscription: sub, Now: t0, Prefix: prefix, Spawn: spawn})
		if err != nil || !res.Created || res.Subscription.Tenant != tenant {
			t.Fatalf("create %s of %q = %+v, %v", id, tenant, res, err)
		}
	}
	create("acme-sub", "acme", "/tenants/acme/**")
	create("globex-sub", "globex", "/tenants/globex/**")
	create("platform-sub", "", "/tenants/**")
	if got, err := s.SubscriptionGet(ctx, "acme-sub"); err != nil || got.Tenant != "acme" {
		t.Fatalf("get = %+v, %v", got, err)
	}
	// The same id and configuration under another owner is not the same
	// subscription.
	theirs := store.Subscription{ID: "acme-sub", Tenant: "globex", Pattern: "/tenants/acme/**", Webhook: "https://example.com/acme-sub", Secret: "s"}
	_, err := s.SubscriptionCreate(ctx, &store.SubscriptionCreateParams{Subscription: theirs, Now: t0})
	expectErr(t, err, store.ErrSubscriptionExists)
	theirs.Tenant = ""
	_, err = s.SubscriptionCreate(ctx, &store.SubscriptionCreateParams{Subscription: theirs, Now: t0})
	expectErr(t, err, store.ErrSubscriptionExists)

	ids := func(list []store.Subscription) []string {
		var out []string
		for _, sub := range list {
			out = append(out, sub.ID)
		}
		return out
	}
	for _, tc := range []struct {
		params store.SubscriptionListParams
		want   []string
	}{
		{store.SubscriptionListParams{}, []string{"acme-sub", "globex-sub", "platform-sub"}},
		{store.SubscriptionListParams{Tenant: "acme"}, []string{"acme-sub"}},
		{store.SubscriptionListParams{Tenant: "acme", Pattern: "/tenants/acme/**"}, []string{"acme-sub"}},
		{store.SubscriptionListParams{Tenant: "acme", Pattern: "/tenants/**"}, nil},
		{store.SubscriptionListParams{Tenant: "initech"}, nil},
	} {
		list, err := s.SubscriptionList(ctx, &tc.params)
		if err != nil || !slices.Equal(ids(list), tc.want) {
			t.Errorf("list %+v = %v, %v; want %v", tc.params, ids(list), err, tc.want)
		}
	}

	// Consumers are listed only for their subscription's owner (or the
	// platform's unlimited view).
	for _, tc := range []struct {
		tenant string
		want   int
	}{{"", 1}, {"acme", 0}, {"globex", 0}} {
		list, err := s.ConsumerListBySubscription(ctx, &store.ConsumerListBySubscriptionParams{SubscriptionID: "platform-sub", Tenant: tc.tenant})
		if err != nil || len(list) != tc.want {
			t.Errorf("consumers of platform-sub for %q = %+v, %v; want %d", tc.tenant, list, err, tc.want)
		}
	}
	if list, err := s.ConsumerListBySubscription(ctx, &store.ConsumerListBySubscriptionParams{SubscriptionID: "acme-sub", Tenant: "acme"}); err != nil || len(list) != 1 {
		t.Errorf("consumers of acme-sub for acme = %+v, %v", list, err)
	}

	// A delete limited to a tenant removes nothing of another owner.
	for _, tc := range []struct{ id, tenant string }{{"platform-sub", "acme"}, {"globex-sub", "acme"}, {"acme-sub", "globex"}} {
		_, err := s.SubscriptionDelete(ctx, &store.SubscriptionDeleteParams{ID: tc.id, Tenant: tc.tenant})
		expectErr(t, err, store.ErrSubscriptionNotFound)
		if _, err := s.SubscriptionGet(ctx, tc.id); err != nil {
			t.Fatalf("%s after a delete by %s: %v", tc.id, tc.tenant, err)
		}
	}
	if n, err := s.SubscriptionDelete(ctx, &store.SubscriptionDeleteParams{ID: "acme-sub", Tenant: "acme"}); err != nil || n != 1 {
		t.Fatalf("delete by its owner = %d, %v", n, err)
	}
	if n, err := s.SubscriptionDelete(ctx, &store.SubscriptionDeleteParams{ID: "globex-sub"}); err != nil || n != 0 {
		t.Fatalf("delete by the platform = %d, %v", n, err)
	}
}

// testConsumerStalled: a consumer's count of wakes without progress, and
// when they began, are stored by insert and update, read back by every
// query (claims included) and across a reopen, and counted.
func testConsumerStalled(t *testing.T, f Factory) {
	s := f.Open(t)
	ctx := context.Background()
	a := consumer("s:%2Fa", "s", "/a", "/a")
	a.StalledWakes, a.StalledSince = 3, t0
	a.DueAt = t0.Add(time.Second)
	b := consumer("s:%2Fb", "s", "/b", "/b")
	b.StalledWakes, b.StalledSince = 12, t0.Add(-time.Minute)
	c := consumer("s:%2Fc", "s", "/c", "/c")
	if _, err := s.ConsumerInsert(ctx, &store.ConsumerInsertParams{Consumers: []store.Consumer{a, b, c}}); err != nil {
		t.Fatal(err)
	}
	check := func(what string, got *store.Consumer, wakes int, since time.Time) {
		t.Helper()
		if got.StalledWakes != wakes || !got.StalledSince.Equal(since) {
			t.Fatalf("%s: %s stalled %d since %v, want %d since %v", what, got.ID, got.StalledWakes, got.StalledSince, wakes, since)
		}
	}
	count := func(atLeast, want int) {
		t.Helper()
		if n, err := s.ConsumerCountStalled(ctx, atLeast); err != nil || n != want {
			t.Fatalf("ConsumerCountStalled(%d) = %d, %v; want %d", atLeast, n, err, want)
		}
	}
	got, err := s.ConsumerGet(ctx, a.ID)
	if err != nil {
		t.Fatal(err)
	}
	check("get", got, 3, t0)
	count(10, 1)
	count(3, 2)
	count(1, 2)

	due, err := s.ConsumerClaimDue(ctx, &store.ConsumerClaimDueParams{Now: t0.Add(2 * time.Second), Lease: time.Minute})
	if err != nil || len(due.Consumers) != 1 {
		t.Fatalf("claim = %+v, %v", due, err)
	}
	check("claim", &due.Consumers[0], 3, t0)

	next := *got
	next.StalledWakes, next.StalledSince = 10, t0
	if _, err := s.ConsumerUpdate(ctx, &store.ConsumerUpdateParams{Consumer: next, ExpectVersion: got.Version}); err != nil {
		t.Fatal(err)
	}
	count(10, 2)
	stored, err := s.ConsumerGet(ctx, b.ID)
	if err != nil {
		t.Fatal(err)
	}
	cleared := *stored
	cleared.StalledWakes, cleared.StalledSince = 0, time.Time{}
	if _, err := s.ConsumerUpdate(ctx, &store.ConsumerUpdateParams{Consumer: cleared, ExpectVersion: stored.Version}); err != nil {
		t.Fatal(err)
	}
	count(10, 1)

	s = f.Reopen(t, s)
	list, err := s.ConsumerListBySubscription(ctx, &store.ConsumerListBySubscriptionParams{SubscriptionID: "s"})
	if err != nil || len(list) != 3 {
		t.Fatalf("list = %+v, %v", list, err)
	}
	check("list after reopen", &list[0], 10, t0)
	check("list after reopen", &list[1], 0, time.Time{})
	check("list after reopen", &list[2], 0, time.Time{})
	count(10, 1)
}
