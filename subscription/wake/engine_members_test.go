package wake

import (
	"context"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/heraldstreams/herald/store"
	"github.com/heraldstreams/herald/store/sqlite"
	"github.com/heraldstreams/herald/subscription"
)

// countingStore counts the engine's reads of a stream's consumers.
type countingStore struct {
	EngineStore
	byStream atomic.Int64
}

func (c *countingStore) ConsumerListByStream(ctx context.Context, p *store.ConsumerListByStreamParams) ([]store.Consumer, error) {
	c.byStream.Add(1)
	return c.EngineStore.ConsumerListByStream(ctx, p)
}

// With no consumer in the store, a tail change asks the store nothing
// (over a million streams, nearly every change is of a stream the member
// cache does not hold); the first subscription ends that, and its
// consumers are woken as before.
func TestEngineAsksNothingWithoutConsumers(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	synctest.Test(t, func(t *testing.T) {
		hook := &receiver{}
		st, err := sqlite.Open(context.Background(), sqlite.Config{Dir: dir, TouchFlushInterval: time.Hour, CheckpointInterval: time.Hour, RelaxedInterval: -1})
		if err != nil {
			t.Fatal(err)
		}
		cs := &countingStore{EngineStore: st}
		r := &rig{t: t, dir: dir, st: st, hook: hook, keys: rigKeyring(t)}
		r.eng = startEngine(t, cs, hook, r.keys, 0, true)
		defer r.close()
		synctest.Wait() // the reconciliation at start finds no consumer

		for _, p := range []string{"/a/1", "/a/2", "/b/1"} {
			r.createStream(p, "x")
			r.appendData(p, "y")
		}
		synctest.Wait()
		if n := cs.byStream.Load(); n != 0 {
			t.Fatalf("%d reads of a stream's consumers with none in the store", n)
		}

		r.subscribe("sub", "/a/*")
		synctest.Wait()
		r.appendData("/a/1", "z")
		synctest.Wait()
		w := hook.wakes()
		if len(w) != 1 || w[0].Payload.ConsumerID != subscription.ConsumerID("sub", "/a/1") {
			t.Fatalf("wakes after the subscription = %+v", w)
		}
		if cs.byStream.Load() == 0 {
			t.Fatal("the consumers of a stream were not read once a subscription had some")
		}
	})
}

// A listing that found no consumer proves nothing when a membership was
// added while the store was read.
func TestMemberCacheNoneOnlyWhenNothingAdded(t *testing.T) {
	t.Parallel()
	m := newMemberCache(true)
	mark := m.addedMark()
	m.observe(nil, &store.Consumer{ID: "c", Streams: []store.ConsumerStream{{Path: "/s"}}})
	m.noneSince(mark)
	if _, _, cached := m.get("/s"); cached {
		t.Fatal("a path is known empty after a membership was added during the listing")
	}

	m.noneSince(m.addedMark())
	if got, _, cached := m.get("/s"); !cached || len(got) != 0 {
		t.Fatalf("get after an empty listing = %v, %v; want no consumer, known", got, cached)
	}
	m.clear() // the store added consumers on the engine's behalf
	if _, _, cached := m.get("/s"); cached {
		t.Fatal("a path is known empty after the store added consumers")
	}
}
