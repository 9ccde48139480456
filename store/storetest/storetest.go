// Package storetest is the conformance suite of the storage contract. Every
// backend runs it from its own test file:
//
//	func TestStore(t *testing.T) { storetest.Run(t, factory) }
//
// A backend is done when the suite passes, not when it compiles.
package storetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/heraldstreams/herald/store"
)

// Factory makes stores for the suite. Open returns a fresh, empty store;
// Reopen closes s and opens the same durable state again. Peer opens
// another handle on s's database, as a replica does, closed at the end
// of the test; for a store whose Peers is false it returns the error its
// backend's open gives.
type Factory interface {
	Open(t *testing.T) store.Store
	Reopen(t *testing.T, s store.Store) store.Store
	Peer(t *testing.T, s store.Store) (store.Store, error)
}

// run runs one test of the suite, in parallel with the others: a
// factory's stores share nothing (each test opens its own, and the peers
// of its own).
func run(t *testing.T, f Factory, name string, test func(*testing.T, Factory)) {
	t.Run(name, func(t *testing.T) {
		t.Parallel()
		test(t, f)
	})
}

// t0 is the pinned "now" of the suite.
var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// Run runs the whole suite against the backend.
func Run(t *testing.T, f Factory) {
	run(t, f, "Create", testCreate)
	run(t, f, "AppendRead", testAppendRead)
	run(t, f, "Close", testClose)
	run(t, f, "Producers", testProducers)
	run(t, f, "ProducerClose", testProducerClose)
	run(t, f, "ContentTypeKept", testContentTypeKept)
	run(t, f, "StreamSeq", testStreamSeq)
	run(t, f, "Expiry", testExpiry)
	run(t, f, "Delete", testDelete)
	run(t, f, "Forks", testForks)
	run(t, f, "RecreateExpiredFork", testRecreateExpiredFork)
	run(t, f, "Notifier", testNotifier)
	run(t, f, "Invalidations", testInvalidations)
	run(t, f, "ReservedInvalidations", testReservedInvalidations)
	run(t, f, "Concurrency", testConcurrency)
	run(t, f, "Durability", testDurability)
	runSubscriptions(t, f)
	runDSSubscriptions(t, f)
	runDeliveries(t, f)
	runReplays(t, f)
	runKeys(t, f)
	runPeers(t, f)
	runReplicas(t, f)
	runEventTypes(t, f)
	runSecrets(t, f)
}

func mustCreate(t *testing.T, s store.Store, p *store.StreamCreateParams) store.Stream {
	t.Helper()
	if p.Now.IsZero() {
		p.Now = t0
	}
	res, err := s.StreamCreate(context.Background(), p)
	if err != nil {
		t.Fatalf("create %s: %v", p.Path, err)
	}
	return res.Stream
}

func mustAppend(t *testing.T, s store.Store, p *store.StreamAppendParams) *store.StreamAppendResult {
	t.Helper()
	if p.Now.IsZero() {
		p.Now = t0
	}
	res, err := s.StreamAppend(context.Background(), p)
	if err != nil {
		t.Fatalf("append %s: %v", p.Path, err)
	}
	return res
}

func readAll(t *testing.T, s store.Store, path string, from int64, now time.Time) []byte {
	t.Helper()
	var out []byte
	for {
		res, err := s.StreamRead(context.Background(), &store.StreamReadParams{Path: path, From: from, MaxBytes: 7, Now: now})
		if err != nil {
			t.Fatalf("read %s at %d: %v", path, from, err)
		}
		out = append(out, res.Data...)
		if res.Next == res.Stream.Tail {
			return out
		}
		if res.Next <= from {
			t.Fatalf("read %s made no progress at %d", path, from)
		}
		from = res.Next
	}
}

func expectErr(t *testing.T, err, want error) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Fatalf("error = %v, want %v", err, want)
	}
}

func testCreate(t *testing.T, f Factory) {
	s := f.Open(t)
	ctx := context.Background()
	st := mustCreate(t, s, &store.StreamCreateParams{Path: "/a", ContentType: "text/plain", Data: []byte("hello")})
	if st.Tail != 5 || st.ContentType != "text/plain" || st.ID == 0 {
		t.Fatalf("created stream = %+v", st)
	}
	// Same configuration: idempotent success, not created again, data kept.
	res, err := s.StreamCreate(ctx, &store.StreamCreateParams{Path: "/a", ContentType: "text/plain", Now: t0})
	if err != nil || res.Created || res.Stream.Tail != 5 {
		t.Fatalf("idempotent create = %+v, %v", res, err)
	}
	// Other content type, TTL, or closure: conflict.
	for _, p := range []*store.StreamCreateParams{
		{Path: "/a", ContentType: "application/json"},
		{Path: "/a", ContentType: "text/plain", TTL: time.Minute},
		{Path: "/a", ContentType: "text/plain", Closed: true},
	} {
		p.Now = t0
		_, err := s.StreamCreate(ctx, p)
		expectErr(t, err, store.ErrStreamExists)
	}
	got, err := s.StreamGet(ctx, &store.StreamGetParams{Path: "/a", Now: t0})
	if err != nil || got.Tail != 5 {
		t.Fatalf("get = %+v, %v", got, err)
	}
	_, err = s.StreamGet(ctx, &store.StreamGetParams{Path: "/missing", Now: t0})
	expectErr(t, err, store.ErrNotFound)

	closed := mustCreate(t, s, &store.StreamCreateParams{Path: "/closed", ContentType: "text/plain", Closed: true, Data: []byte("final")})
	if !closed.Closed || closed.Tail != 5 {
		t.Fatalf("create closed = %+v", closed)
	}
}

func testAppendRead(t *testing.T, f Factory) {
	s := f.Open(t)
	ctx := context.Background()
	mustCreate(t, s, &store.StreamCreateParams{Path: "/b", ContentType: "application/octet-stream"})
	var want []byte
	var last int64
	for i := range 20 {
		chunk := bytes.Repeat([]byte{byte(i)}, i+1)
		res := mustAppend(t, s, &store.StreamAppendParams{Path: "/b", ContentType: "application/octet-stream", Data: chunk})
		if res.Outcome != store.Appended || res.Start != last || res.Stream.Tail != last+int64(len(chunk)) {
			t.Fatalf("append %d = %+v", i, res)
		}
		last = res.Stream.Tail
		want = append(want, chunk...)
	}
	if got := readAll(t, s, "/b", -1, t0); !bytes.Equal(got, want) {
		t.Fatalf("read back %d bytes, want %d", len(got), len(want))
	}
	// Reading from a middle position returns the rest, byte-exact.
	if got := readAll(t, s, "/b", 10, t0); !bytes.Equal(got, want[10:]) {
		t.Fatalf("read from 10 = %v", got)
	}
	res, err := s.StreamRead(ctx, &store.StreamReadParams{Path: "/b", From: last, Now: t0})
	if err != nil || len(res.Data) != 0 || res.Next != last {
		t.Fatalf("read at tail = %+v, %v", res, err)
	}
	_, err = s.StreamRead(ctx, &store.StreamReadParams{Path: "/b", From: last + 1, Now: t0})
	expectErr(t, err, store.ErrPositionBeyondTail)
	_, err = s.StreamAppend(ctx, &store.StreamAppendParams{Path: "/b", ContentType: "text/plain", Data: []byte("x"), Now: t0})
	expectErr(t, err, store.ErrContentTypeMismatch)
	_, err = s.StreamAppend(ctx, &store.StreamAppendParams{Path: "/nope", ContentType: "text/plain", Data: []byte("x"), Now: t0})
	expectErr(t, err, store.ErrNotFound)
}

func testClose(t *testing.T, f Factory) {
	s := f.Open(t)
	ctx := context.Background()
	mustCreate(t, s, &store.StreamCreateParams{Path: "/c", ContentType: "text/plain"})
	res := mustAppend(t, s, &store.StreamAppendParams{Path: "/c", ContentType: "text/plain", Data: []byte("last"), Close: true})
	if !res.Stream.Closed || res.Stream.Tail != 4 || res.Outcome != store.Appended {
		t.Fatalf("append+close = %+v", res)
	}
	_, err := s.StreamAppend(ctx, &store.StreamAppendParams{Path: "/c", ContentType: "text/plain", Data: []byte("more"), Now: t0})
	var ce *store.ClosedError
	if !errors.As(err, &ce) || ce.Tail != 4 {
		t.Fatalf("append to closed = %v", err)
	}
	// Close-only on a closed stream is idempotent.
	res = mustAppend(t, s, &store.StreamAppendParams{Path: "/c", Close: true})
	if res.Outcome != store.Closed || !res.Stream.Closed || res.Stream.Tail != 4 {
		t.Fatalf("close again = %+v", res)
	}
	if got := readAll(t, s, "/c", -1, t0); string(got) != "last" {
		t.Fatalf("read closed = %q", got)
	}
}

func testProducers(t *testing.T, f Factory) {
	s := f.Open(t)
	ctx := context.Background()
	mustCreate(t, s, &store.StreamCreateParams{Path: "/p", ContentType: "text/plain"})
	app := func(epoch, seq int64, data string, close bool) (*store.StreamAppendResult, error) {
		return s.StreamAppend(ctx, &store.StreamAppendParams{Path: "/p", ContentType: "text/plain", Data: []byte(data), Close: close,
			Producer: &store.Producer{ID: "w1", Epoch: epoch, Seq: seq}, Now: t0})
	}
	if res, err := app(0, 0, "a", false); err != nil || res.Outcome != store.Appended || res.ProducerSeq != 0 {
		t.Fatalf("first = %+v, %v", res, err)
	}
	if res, err := app(0, 1, "b", false); err != nil || res.Outcome != store.Appended || res.ProducerSeq != 1 {
		t.Fatalf("second = %+v, %v", res, err)
	}
	// A retry is a duplicate and writes nothing.
	if res, err := app(0, 1, "b", false); err != nil || res.Outcome != store.Duplicate || res.Stream.Tail != 2 || res.ProducerSeq != 1 {
		t.Fatalf("retry = %+v, %v", res, err)
	}
	_, err := app(0, 5, "x", false)
	var gap *store.ProducerSeqGapError
	if !errors.As(err, &gap) || gap.Expected != 2 || gap.Received != 5 {
		t.Fatalf("gap = %v", err)
	}
	_, err = app(1, 3, "x", false)
	expectErr(t, err, store.ErrProducerEpochSeq)
	if res, err := app(1, 0, "c", false); err != nil || res.ProducerEpoch != 1 {
		t.Fatalf("new epoch = %+v, %v", res, err)
	}
	_, err = app(0, 2, "zombie", false)
	var stale *store.ProducerEpochStaleError
	if !errors.As(err, &stale) || stale.Current != 1 {
		t.Fatalf("stale = %v", err)
	}
	// Closing append, then its retry is a duplicate; anything else conflicts.
	if _, err := app(1, 1, "end", true); err != nil {
		t.Fatal(err)
	}
	if res, err := app(1, 1, "end", true); err != nil || res.Outcome != store.Duplicate {
		t.Fatalf("retry of closing append = %+v, %v", res, err)
	}
	_, err = app(1, 2, "late", false)
	var ce *store.ClosedError
	if !errors.As(err, &ce) {
		t.Fatalf("append after close = %v", err)
	}
	if got := readAll(t, s, "/p", -1, t0); string(got) != "abcend" {
		t.Fatalf("data = %q", got)
	}
}

func testStreamSeq(t *testing.T, f Factory) {
	s := f.Open(t)
	ctx := context.Background()
	mustCreate(t, s, &store.StreamCreateParams{Path: "/s", ContentType: "text/plain"})
	mustAppend(t, s, &store.StreamAppendParams{Path: "/s", ContentType: "text/plain", Data: []byte("1"), Seq: "0002"})
	for _, seq := range []string{"0002", "0001"} {
		_, err := s.StreamAppend(ctx, &store.StreamAppendParams{Path: "/s", ContentType: "text/plain", Data: []byte("x"), Seq: seq, Now: t0})
		expectErr(t, err, store.ErrSeqRegression)
	}
	mustAppend(t, s, &store.StreamAppendParams{Path: "/s", ContentType: "text/plain", Data: []byte("2"), Seq: "0003"})
	if got := readAll(t, s, "/s", -1, t0); string(got) != "12" {
		t.Fatalf("data = %q", got)
	}
}

func testExpiry(t *testing.T, f Factory) {
	s := f.Open(t)
	ctx := context.Background()
	mustCreate(t, s, &store.StreamCreateParams{Path: "/ttl", ContentType: "text/plain", TTL: 10 * time.Second})
	mustCreate(t, s, &store.StreamCreateParams{Path: "/abs", ContentType: "text/plain", ExpiresAt: t0.Add(5 * time.Second)})
	// A read at +8s renews the sliding TTL; a HEAD does not.
	readAll(t, s, "/ttl", -1, t0.Add(8*time.Second))
	if _, err := s.StreamGet(ctx, &store.StreamGetParams{Path: "/ttl", Now: t0.Add(17 * time.Second)}); err != nil {
		t.Fatalf("renewed stream expired: %v", err)
	}
	_, err := s.StreamGet(ctx, &store.StreamGetParams{Path: "/ttl", Now: t0.Add(18 * time.Second)})
	expectErr(t, err, store.ErrNotFound)
	// Herald's own reads (Internal) are not accesses: no renewal.
	mustCreate(t, s, &store.StreamCreateParams{Path: "/ttl-internal", ContentType: "text/plain", TTL: 10 * time.Second, Data: []byte("x")})
	if _, err := s.StreamRead(ctx, &store.StreamReadParams{Path: "/ttl-internal", Now: t0.Add(8 * time.Second), Internal: true}); err != nil {
		t.Fatal(err)
	}
	_, err = s.StreamGet(ctx, &store.StreamGetParams{Path: "/ttl-internal", Now: t0.Add(10 * time.Second)})
	expectErr(t, err, store.ErrNotFound)
	_, err = s.StreamGet(ctx, &store.StreamGetParams{Path: "/abs", Now: t0.Add(5 * time.Second)})
	expectErr(t, err, store.ErrNotFound)
	// An expired path can be created again.
	mustCreate(t, s, &store.StreamCreateParams{Path: "/abs", ContentType: "text/plain", Now: t0.Add(6 * time.Second)})
	n, err := s.StreamDeleteExpired(ctx, &store.StreamDeleteExpiredParams{Now: t0.Add(20 * time.Second)})
	if err != nil || n != 2 { // /ttl and /ttl-internal
		t.Fatalf("delete expired = %d, %v", n, err)
	}
}

func testDelete(t *testing.T, f Factory) {
	s := f.Open(t)
	ctx := context.Background()
	first := mustCreate(t, s, &store.StreamCreateParams{Path: "/d", ContentType: "text/plain", Data: []byte("x")})
	if err := s.StreamDelete(ctx, &store.StreamDeleteParams{Path: "/d", Now: t0}); err != nil {
		t.Fatal(err)
	}
	expectErr(t, s.StreamDelete(ctx, &store.StreamDeleteParams{Path: "/d", Now: t0}), store.ErrNotFound)
	_, err := s.StreamRead(ctx, &store.StreamReadParams{Path: "/d", Now: t0})
	expectErr(t, err, store.ErrNotFound)
	// Re-created: a new identity, empty.
	again := mustCreate(t, s, &store.StreamCreateParams{Path: "/d", ContentType: "text/plain"})
	if again.ID == first.ID || again.Tail != 0 {
		t.Fatalf("re-created = %+v (first id %d)", again, first.ID)
	}
}

func testForks(t *testing.T, f Factory) {
	s := f.Open(t)
	ctx := context.Background()
	mustCreate(t, s, &store.StreamCreateParams{Path: "/src", ContentType: "text/plain", TTL: time.Hour, Data: []byte("abc")})
	mustAppend(t, s, &store.StreamAppendParams{Path: "/src", ContentType: "text/plain", Data: []byte("def")})
	fork := mustCreate(t, s, &store.StreamCreateParams{Path: "/fork", ForkSource: "/src", ForkOffset: 3, ForkSubOffset: 1})
	if fork.Tail != 4 || fork.ContentType != "text/plain" || fork.TTL != time.Hour || fork.ForkPosition != 4 {
		t.Fatalf("fork = %+v", fork)
	}
	mustAppend(t, s, &store.StreamAppendParams{Path: "/fork", ContentType: "text/plain", Data: []byte("XY")})
	mustAppend(t, s, &store.StreamAppendParams{Path: "/src", ContentType: "text/plain", Data: []byte("ghi")})
	if got := readAll(t, s, "/fork", -1, t0); string(got) != "abcdXY" {
		t.Fatalf("fork data = %q", got)
	}
	if got := readAll(t, s, "/src", -1, t0); string(got) != "abcdefghi" {
		t.Fatalf("source data = %q", got)
	}
	// Fork of a fork, at the default (tail) offset.
	mustCreate(t, s, &store.StreamCreateParams{Path: "/fork2", ForkSource: "/fork", ForkOffset: -1})
	if got := readAll(t, s, "/fork2", -1, t0); string(got) != "abcdXY" {
		t.Fatalf("fork2 data = %q", got)
	}
	for _, c := range []struct {
		p    store.StreamCreateParams
		want error
	}{
		{store.StreamCreateParams{Path: "/f1", ForkSource: "/none", ForkOffset: -1}, store.ErrNotFound},
		{store.StreamCreateParams{Path: "/f2", ForkSource: "/src", ForkOffset: 100}, store.ErrForkOffsetBeyondTail},
		{store.StreamCreateParams{Path: "/f3", ForkSource: "/src", ForkOffset: 3, ForkSubOffset: 4}, store.ErrForkSubOffset},
		{store.StreamCreateParams{Path: "/f4", ForkSource: "/src", ForkOffset: -1, ContentType: "application/json"}, store.ErrContentTypeMismatch},
	} {
		c.p.Now = t0
		_, err := s.StreamCreate(ctx, &c.p)
		expectErr(t, err, c.want)
	}
	// JSON sub-offsets count messages.
	mustCreate(t, s, &store.StreamCreateParams{Path: "/j", ContentType: "application/json", Data: []byte("1\n2\n3\n"), Messages: 3})
	jf := mustCreate(t, s, &store.StreamCreateParams{Path: "/jf", ForkSource: "/j", ForkOffset: 0, ForkSubOffset: 2})
	if got := readAll(t, s, "/jf", -1, t0); string(got) != "1\n2\n" || jf.Tail != 4 {
		t.Fatalf("json fork = %q tail %d", got, jf.Tail)
	}

	// Deleting a source with forks soft-deletes it: gone for clients, its
	// path blocked, its data still read through the fork.
	if err := s.StreamDelete(ctx, &store.StreamDeleteParams{Path: "/src", Now: t0}); err != nil {
		t.Fatal(err)
	}
	_, err := s.StreamGet(ctx, &store.StreamGetParams{Path: "/src", Now: t0})
	expectErr(t, err, store.ErrStreamGone)
	expectErr(t, s.StreamDelete(ctx, &store.StreamDeleteParams{Path: "/src", Now: t0}), store.ErrStreamGone)
	_, err = s.StreamCreate(ctx, &store.StreamCreateParams{Path: "/src", ContentType: "text/plain", Now: t0})
	expectErr(t, err, store.ErrStreamGone)
	_, err = s.StreamCreate(ctx, &store.StreamCreateParams{Path: "/f5", ForkSource: "/src", ForkOffset: -1, Now: t0})
	expectErr(t, err, store.ErrForkSourceGone)
	if got := readAll(t, s, "/fork2", -1, t0); string(got) != "abcdXY" {
		t.Fatalf("fork2 after source delete = %q", got)
	}
	// Deleting the forks cascades to the soft-deleted source.
	for _, p := range []string{"/fork2", "/fork"} {
		if err := s.StreamDelete(ctx, &store.StreamDeleteParams{Path: p, Now: t0}); err != nil {
			t.Fatalf("delete %s: %v", p, err)
		}
	}
	_, err = s.StreamGet(ctx, &store.StreamGetParams{Path: "/src", Now: t0})
	expectErr(t, err, store.ErrNotFound)
}

func testNotifier(t *testing.T, f Factory) {
	s := f.Open(t)
	st := mustCreate(t, s, &store.StreamCreateParams{Path: "/n", ContentType: "text/plain"})
	feed, stop := s.Notifier().Listen(16)
	defer stop()
	wait := s.Notifier().Wait(st.ID)
	select {
	case <-wait:
		t.Fatal("wait fired before any change")
	default:
	}
	mustAppend(t, s, &store.StreamAppendParams{Path: "/n", ContentType: "text/plain", Data: []byte("x")})
	<-wait // closed by the append; a hang here fails the test by timeout
	<-feed.Ready()
	changes, dropped := feed.Take()
	if len(changes) != 1 || dropped {
		t.Fatalf("changes = %+v (dropped %t)", changes, dropped)
	}
	if c := changes[0]; c.StreamID != st.ID || c.Tail != 1 || c.Path != "/n" {
		t.Fatalf("change = %+v", c)
	}
}

func testConcurrency(t *testing.T, f Factory) {
	s := f.Open(t)
	ctx := context.Background()
	mustCreate(t, s, &store.StreamCreateParams{Path: "/many", ContentType: "application/octet-stream"})
	const writers, each = 16, 25
	type got struct{ start, tail int64 }
	results := make(chan got, writers*each)
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				res, err := s.StreamAppend(ctx, &store.StreamAppendParams{Path: "/many", ContentType: "application/octet-stream",
					Data: []byte(fmt.Sprintf("%02d-%02d;", w, i)), Now: t0})
				if err != nil {
					t.Error(err)
					return
				}
				results <- got{res.Start, res.Stream.Tail}
			}
		}()
	}
	wg.Wait()
	close(results)
	// Strictly increasing, gapless: the ranges tile [0, total).
	seen := make(map[int64]int64)
	for r := range results {
		if _, dup := seen[r.start]; dup {
			t.Fatalf("two appends got position %d", r.start)
		}
		seen[r.start] = r.tail
	}
	pos := int64(0)
	for range writers * each {
		next, ok := seen[pos]
		if !ok {
			t.Fatalf("gap at position %d", pos)
		}
		pos = next
	}
	if got := readAll(t, s, "/many", -1, t0); int64(len(got)) != pos {
		t.Fatalf("read %d bytes, tail %d", len(got), pos)
	}

	// Racing idempotent producers with the same (id, epoch, seq): one wins.
	mustCreate(t, s, &store.StreamCreateParams{Path: "/race", ContentType: "text/plain"})
	var appended, dups int
	var mu sync.Mutex
	for range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := s.StreamAppend(ctx, &store.StreamAppendParams{Path: "/race", ContentType: "text/plain", Data: []byte("once"),
				Producer: &store.Producer{ID: "p", Epoch: 0, Seq: 0}, Now: t0})
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			defer mu.Unlock()
			if res.Outcome == store.Appended {
				appended++
			} else {
				dups++
			}
		}()
	}
	wg.Wait()
	if appended != 1 || dups != 19 {
		t.Fatalf("appended %d, duplicates %d", appended, dups)
	}
	if got := readAll(t, s, "/race", -1, t0); string(got) != "once" {
		t.Fatalf("data = %q", got)
	}
}

func testDurability(t *testing.T, f Factory) {
	s := f.Open(t)
	mustCreate(t, s, &store.StreamCreateParams{Path: "/keep", ContentType: "text/plain", TTL: time.Hour, Data: []byte("a")})
	mustAppend(t, s, &store.StreamAppendParams{Path: "/keep", ContentType: "text/plain", Data: []byte("b"), Seq: "5",
		Producer: &store.Producer{ID: "w", Epoch: 2, Seq: 0}})
	mustAppend(t, s, &store.StreamAppendParams{Path: "/keep", Close: true})
	mustCreate(t, s, &store.StreamCreateParams{Path: "/keep-fork", ForkSource: "/keep", ForkOffset: 1})
	mustCreate(t, s, &store.StreamCreateParams{Path: "/prod", ContentType: "text/plain"})
	mustAppend(t, s, &store.StreamAppendParams{Path: "/prod", ContentType: "text/plain", Data: []byte("x"),
		Producer: &store.Producer{ID: "w", Epoch: 2, Seq: 0}})
	s = f.Reopen(t, s)
	ctx := context.Background()
	st, err := s.StreamGet(ctx, &store.StreamGetParams{Path: "/keep", Now: t0})
	if err != nil || !st.Closed || st.Tail != 2 || st.TTL != time.Hour || st.LastSeq != "5" {
		t.Fatalf("after reopen = %+v, %v", st, err)
	}
	res, err := s.StreamAppend(ctx, &store.StreamAppendParams{Path: "/keep", ContentType: "text/plain", Data: []byte("b"),
		Producer: &store.Producer{ID: "w", Epoch: 1, Seq: 1}, Now: t0})
	var ce *store.ClosedError
	if !errors.As(err, &ce) {
		t.Fatalf("append after reopen = %+v, %v", res, err)
	}
	if got := readAll(t, s, "/keep-fork", -1, t0); string(got) != "a" {
		t.Fatalf("fork after reopen = %q", got)
	}
	_, err = s.StreamAppend(ctx, &store.StreamAppendParams{Path: "/prod", ContentType: "text/plain", Data: []byte("y"),
		Producer: &store.Producer{ID: "w", Epoch: 1, Seq: 0}, Now: t0})
	var stale *store.ProducerEpochStaleError
	if !errors.As(err, &stale) || stale.Current != 2 {
		t.Fatalf("producer state after reopen: %v", err)
	}
	dup, err := s.StreamAppend(ctx, &store.StreamAppendParams{Path: "/prod", ContentType: "text/plain", Data: []byte("x"),
		Producer: &store.Producer{ID: "w", Epoch: 2, Seq: 0}, Now: t0})
	if err != nil || dup.Outcome != store.Duplicate {
		t.Fatalf("retry after reopen = %+v, %v", dup, err)
	}
}
