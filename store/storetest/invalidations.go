package storetest

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/heraldstreams/herald/store"
)

// InvalidationWait bounds how long the suite waits for an invalidation.
const InvalidationWait = 10 * time.Second

// TakeInvalidations waits until feed holds invalidations and returns them,
// failing the test after InvalidationWait.
func TakeInvalidations(t *testing.T, feed *store.InvalidationFeed) (items []store.Invalidation, all bool) {
	t.Helper()
	select {
	case <-feed.Ready():
	case <-time.After(InvalidationWait):
		t.Fatal("no invalidation came")
	}
	return feed.Take()
}

// ExpectInvalidations takes invalidations from feed until it has seen
// every one of want (more may come: a backend may announce a change
// twice), failing when everything is invalidated instead.
func ExpectInvalidations(t *testing.T, feed *store.InvalidationFeed, want ...store.Invalidation) {
	t.Helper()
	missing := slices.Clone(want)
	for len(missing) > 0 {
		items, all := TakeInvalidations(t, feed)
		if all {
			t.Fatalf("everything was invalidated, want %v", missing)
		}
		missing = slices.DeleteFunc(missing, func(w store.Invalidation) bool { return slices.Contains(items, w) })
	}
}

// testInvalidations: creating and deleting a subscription, creating,
// changing, disabling (the breaker) and deleting an endpoint, and
// creating and deleting an API key, each reach the store's invalidation
// feeds once committed; a stream append does not, nor does deleting a key
// that does not exist.
func testInvalidations(t *testing.T, f Factory) {
	s := f.Open(t)
	ctx := context.Background()
	feed, stop := s.Notifier().Invalidations()
	defer stop()
	sub := func(id string) store.Invalidation { return store.Invalidation{Kind: store.CacheSubscription, ID: id} }
	ep := func(id string) store.Invalidation { return store.Invalidation{Kind: store.CacheEndpoint, ID: id} }

	mustCreate(t, s, &store.StreamCreateParams{Path: "/inv", ContentType: "text/plain", Now: t0})
	mustAppend(t, s, &store.StreamAppendParams{Path: "/inv", ContentType: "text/plain", Data: []byte("x"), Now: t0})
	select {
	case <-feed.Ready():
		items, all := feed.Take()
		t.Fatalf("a stream change invalidated %v (all: %v)", items, all)
	default:
	}

	if _, err := s.SubscriptionCreate(ctx, &store.SubscriptionCreateParams{
		Subscription: store.Subscription{ID: "s1", Pattern: "/inv", Webhook: "https://example.com/h", Secret: "whsec_x"}, Now: t0,
	}); err != nil {
		t.Fatal(err)
	}
	ExpectInvalidations(t, feed, sub("s1"))
	if _, err := s.SubscriptionDelete(ctx, &store.SubscriptionDeleteParams{ID: "s1"}); err != nil {
		t.Fatal(err)
	}
	ExpectInvalidations(t, feed, sub("s1"))

	created := mustEndpoint(t, s, endpoint("e1"))
	ExpectInvalidations(t, feed, ep("e1"))
	created.Description = "changed"
	if _, err := s.EndpointUpdate(ctx, &store.EndpointUpdateParams{Endpoint: *created, ExpectVersion: created.Version, Now: t0}); err != nil {
		t.Fatal(err)
	}
	ExpectInvalidations(t, feed, ep("e1"))
	h := store.EndpointHealth{ConsecutiveFailures: 10, LastFailureAt: t0, DisabledAt: t0, DisabledReason: "10 failures"}
	if _, err := s.DeliveryComplete(ctx, &store.DeliveryCompleteParams{EndpointID: "e1", Health: h,
		ExpectHealthVersion: mustHealthVersion(t, s, "e1"), Now: t0}); err != nil {
		t.Fatal(err)
	}
	ExpectInvalidations(t, feed, ep("e1"))
	if err := s.EndpointDelete(ctx, "e1"); err != nil {
		t.Fatal(err)
	}
	ExpectInvalidations(t, feed, ep("e1"))

	key := store.Invalidation{Kind: store.CacheKey, ID: "k1"}
	if _, err := s.KeyCreate(ctx, &store.KeyCreateParams{Key: store.Key{ID: "k1", Hash: []byte{1}, Scopes: []string{"admin"}}, Now: t0}); err != nil {
		t.Fatal(err)
	}
	ExpectInvalidations(t, feed, key)
	if err := s.KeyDelete(ctx, &store.KeyDeleteParams{ID: "k1"}); err != nil {
		t.Fatal(err)
	}
	ExpectInvalidations(t, feed, key)
	if err := s.KeyDelete(ctx, &store.KeyDeleteParams{ID: "k1"}); !errors.Is(err, store.ErrKeyNotFound) {
		t.Fatalf("deleting a deleted key: %v", err)
	}
	// A marker proves the failed delete announced nothing before it.
	if _, err := s.SubscriptionCreate(ctx, &store.SubscriptionCreateParams{
		Subscription: store.Subscription{ID: "s2", Pattern: "/inv", Webhook: "https://example.com/h", Secret: "whsec_x"}, Now: t0,
	}); err != nil {
		t.Fatal(err)
	}
	items, all := TakeInvalidations(t, feed)
	if all || slices.Contains(items, key) {
		t.Fatalf("a failed key delete announced %v (all: %v)", items, all)
	}
}

// testReservedInvalidations: creating and deleting a reserved-API
// subscription, and rotating the signing keys, reach the invalidation
// feeds once committed (every replica links new streams to the
// subscription, and signs with the new key); re-confirming a subscription
// and deleting a query-string consumer do not announce one.
func testReservedInvalidations(t *testing.T, f Factory) {
	s := f.Open(t)
	ctx := context.Background()
	feed, stop := s.Notifier().Invalidations()
	defer stop()
	reserved := store.Invalidation{Kind: store.CacheReservedSubscription, ID: "__ds/r1"}
	create := func() {
		t.Helper()
		if _, err := s.DSSubscriptionCreate(ctx, &store.DSSubscriptionCreateParams{Consumer: dsSub("r1", "", "h1"), Now: t0}); err != nil {
			t.Fatal(err)
		}
	}
	create()
	ExpectInvalidations(t, feed, reserved)
	create() // re-confirmed: nothing changed
	if err := s.ConsumerDelete(ctx, &store.ConsumerDeleteParams{ID: "__ds/r1"}); err != nil {
		t.Fatal(err)
	}
	items, all := TakeInvalidations(t, feed)
	if all || len(items) != 1 || items[0] != reserved {
		t.Fatalf("a re-confirmation and a delete announced %v (all: %v), want one %v", items, all, reserved)
	}

	if _, err := s.SigningKeyInit(ctx, store.SigningKey{Kid: "k-1", Seed: make([]byte, 32), CreatedAt: t0}); err != nil {
		t.Fatal(err)
	}
	ExpectInvalidations(t, feed, store.Invalidation{Kind: store.CacheSigningKey, ID: "k-1"})
	if _, err := s.SigningKeyRotate(ctx, store.SigningKey{Kid: "k-2", Seed: make([]byte, 32), CreatedAt: t0.Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	ExpectInvalidations(t, feed, store.Invalidation{Kind: store.CacheSigningKey, ID: "k-2"})
}
