package wake

import (
	"context"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/heraldstreams/herald/store"
	"github.com/heraldstreams/herald/subscription"
)

// TestEngineSubscriptionOfAnotherReplica: a subscription created through
// another engine sharing the store (another replica) reaches this
// engine's cache through the invalidation feed, so a stream created right
// after gets its consumer and its wake from this engine alone; deleting
// it elsewhere takes it out of the cache.
func TestEngineSubscriptionOfAnotherReplica(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		hook := &receiver{}
		st := newMemStore()
		keys := rigKeyring(t)
		b := startEngine(t, st, hook, keys, 0, false)
		defer b.Stop(context.Background())
		a := startEngine(t, st, hook, keys, 0, false)
		synctest.Wait()
		if _, err := a.CreateSubscription(context.Background(), &CreateSubscriptionParams{ID: "sub", Pattern: "/agents/*", Webhook: hookURL}); err != nil {
			t.Fatal(err)
		}
		a.Stop(context.Background()) // only b runs from now on
		st.appendData("/agents/new", 5)
		synctest.Wait()
		w := hook.wakes()
		if len(w) != 1 || w[0].Payload.PrimaryStream != "/agents/new" {
			t.Fatalf("wakes = %+v, want one for /agents/new", w)
		}
		if _, err := st.SubscriptionDelete(context.Background(), &store.SubscriptionDeleteParams{ID: "sub"}); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if got := b.matching("/agents/other"); len(got) != 0 {
			t.Fatalf("matching after a delete elsewhere = %v", got)
		}
	})
}

// TestEngineFreshSubscriptionsBeforeSpawn: a stream change processed
// while an invalidation is not yet applied reads the subscriptions from
// the store before deciding what to spawn.
func TestEngineFreshSubscriptionsBeforeSpawn(t *testing.T) {
	t.Parallel()
	st := newMemStore()
	e, err := NewEngine(EngineConfig{Store: st, Sender: newSender(&receiver{}), Keyring: rigKeyring(t), CallbackBaseURL: "https://herald.test"})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Stop(context.Background())
	// A subscription the engine has not applied: stored, and announced
	// in the feed, which nothing applies.
	feed, stop := st.hub.Invalidations()
	defer stop()
	e.invalidations = feed
	st.putSilently("sub", "/x/*")
	st.hub.Invalidate(store.Invalidation{Kind: store.CacheSubscription, ID: "sub"})
	st.mu.Lock()
	st.streams["/x/a"] = &store.Stream{ID: 99, Path: "/x/a", Tail: 1}
	st.mu.Unlock()
	if err := e.processStream(context.Background(), "/x/a", flagChanged|flagSpawn); err != nil {
		t.Fatal(err)
	}
	if _, err := st.ConsumerGet(context.Background(), subscription.ConsumerID("sub", "/x/a")); err != nil {
		t.Fatalf("no consumer spawned from the stored subscription: %v", err)
	}
}

// TestEngineResetReloads: when the store's feed says that everything is
// invalid (a shared store's feed was lost and is back), the engine reads
// every subscription again; and the periodic refresh catches a change no
// invalidation announced.
func TestEngineResetReloads(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		st := newMemStore()
		e := startEngine(t, st, &receiver{}, rigKeyring(t), 0, false)
		defer e.Stop(context.Background())
		synctest.Wait()
		st.putSilently("silent", "/a/*")
		synctest.Wait()
		if got := e.matching("/a/x"); len(got) != 0 {
			t.Fatalf("matching before any reload = %v", got)
		}
		st.hub.Reset()
		synctest.Wait()
		if got := e.matching("/a/x"); !slices.Equal(got, []string{"silent"}) {
			t.Fatalf("matching after a reset = %v", got)
		}
		st.putSilently("later", "/b/*")
		time.Sleep(DefaultRefreshInterval + DefaultSweepInterval)
		synctest.Wait()
		if got := e.matching("/b/x"); !slices.Equal(got, []string{"later"}) {
			t.Fatalf("matching after the refresh interval = %v", got)
		}
	})
}

// TestExclusiveEngineReadsNoSubscriptionsOnATimer: with an exclusive
// store (the embedded one, whose invalidation feed is the process's own
// and says when it lost something) no periodic refresh reads every
// subscription: an idle server reads none; a reset of the feed still
// reads them all.
func TestExclusiveEngineReadsNoSubscriptionsOnATimer(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		st := newMemStore()
		e := startEngine(t, st, &receiver{}, rigKeyring(t), 0, true)
		defer e.Stop(context.Background())
		synctest.Wait()
		lists := func() int {
			st.mu.Lock()
			defer st.mu.Unlock()
			return st.lists
		}
		start := lists()
		time.Sleep(10 * DefaultRefreshInterval)
		synctest.Wait()
		if n := lists() - start; n != 0 {
			t.Fatalf("an idle exclusive engine listed the subscriptions %d times in %v", n, 10*DefaultRefreshInterval)
		}
		st.putSilently("silent", "/a/*")
		st.hub.Reset()
		synctest.Wait()
		if got := e.matching("/a/x"); !slices.Equal(got, []string{"silent"}) {
			t.Fatalf("matching after a reset = %v", got)
		}
	})
}

// putSilently stores a subscription without announcing it, as a change
// that the invalidation feed lost.
func (m *memStore) putSilently(id, pattern string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.subs[id] = store.Subscription{ID: id, Pattern: pattern, Webhook: hookURL, Secret: "whsec_x"}
}
