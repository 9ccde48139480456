package auth

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/heraldstreams/herald/store"
)

// followed returns an Authenticator following hub's key invalidations,
// as `herald serve` runs it, stopped at the end of the test.
func followed(t *testing.T, m *memKeys, hub *store.Hub) *Authenticator {
	t.Helper()
	a := newAuth(t, m, &clock{now: time.Now()})
	feed, stopFeed := hub.Invalidations()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { a.Follow(ctx, feed) })
	t.Cleanup(func() {
		cancel()
		wg.Wait()
		stopFeed()
	})
	return a
}

// waitEnded waits for a watched context to end and returns why.
func waitEnded(t *testing.T, ctx context.Context) *Error {
	t.Helper()
	select {
	case <-ctx.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the watch did not end")
	}
	return Revoked(ctx)
}

// A key deleted from the store (here or on another replica: the store's
// change feed says so) ends every request watching it with INVALID_KEY,
// and the cache forgets it at once; a request that starts watching just
// after the revocation was applied (it was checked just before) ends at
// once. Another key's watchers go on.
func TestWatchEndsAtRevocation(t *testing.T) {
	t.Parallel()
	m, hub := newMemKeys(), store.NewHub()
	a := followed(t, m, hub)
	id, token := addKey(t, m, store.Key{Scopes: []string{"streams:read"}})
	_, other := addKey(t, m, store.Key{Scopes: []string{"streams:read"}})
	p, err := a.Authenticate(context.Background(), token)
	if err != nil {
		t.Fatal(err)
	}
	q, err := a.Authenticate(context.Background(), other)
	if err != nil {
		t.Fatal(err)
	}
	w1, stop1 := a.Watch(context.Background(), p)
	defer stop1()
	w2, stop2 := a.Watch(context.Background(), p)
	defer stop2()
	wq, stopq := a.Watch(context.Background(), q)
	defer stopq()

	if err := m.KeyDelete(context.Background(), &store.KeyDeleteParams{ID: id}); err != nil {
		t.Fatal(err)
	}
	hub.Invalidate(store.Invalidation{Kind: store.CacheKey, ID: id})
	for _, w := range []context.Context{w1, w2} {
		if got := waitEnded(t, w); got != ErrInvalidKey {
			t.Fatalf("ended with %v, want INVALID_KEY", got)
		}
	}
	// The cache forgot it, although its entry was fresh.
	if _, err := a.Authenticate(context.Background(), token); err != ErrInvalidKey {
		t.Fatalf("the revoked key authenticates: %v", err)
	}
	late, stopLate := a.Watch(context.Background(), p)
	defer stopLate()
	if got := waitEnded(t, late); got != ErrInvalidKey {
		t.Fatalf("a watch started after the revocation ended with %v", got)
	}
	if wq.Err() != nil {
		t.Fatalf("another key's watch ended: %v", context.Cause(wq))
	}
}

// When the change feed may have missed changes (a lost connection), every
// watched key is read again: a key deleted meanwhile ends its watchers.
func TestWatchAfterFeedReset(t *testing.T) {
	t.Parallel()
	m, hub := newMemKeys(), store.NewHub()
	a := followed(t, m, hub)
	id, token := addKey(t, m, store.Key{Scopes: []string{"streams:read"}})
	p, err := a.Authenticate(context.Background(), token)
	if err != nil {
		t.Fatal(err)
	}
	w, stop := a.Watch(context.Background(), p)
	defer stop()
	if err := m.KeyDelete(context.Background(), &store.KeyDeleteParams{ID: id}); err != nil {
		t.Fatal(err)
	}
	hub.Reset()
	if got := waitEnded(t, w); got != ErrInvalidKey {
		t.Fatalf("ended with %v, want INVALID_KEY", got)
	}
}

// A credential's expiry ends its watchers with KEY_EXPIRED; the client
// leaving ends them without a credential failure; the admin key's watch
// ends only with its request.
func TestWatchEndsAtExpiry(t *testing.T) {
	t.Parallel()
	m := newMemKeys()
	a := newAuth(t, m, &clock{now: time.Now()})
	_, token := addKey(t, m, store.Key{Scopes: []string{"streams:read"}, ExpiresAt: time.Now().Add(200 * time.Millisecond)})
	p, err := a.Authenticate(context.Background(), token)
	if err != nil {
		t.Fatal(err)
	}
	w, stop := a.Watch(context.Background(), p)
	if got := waitEnded(t, w); got != ErrKeyExpired {
		t.Fatalf("ended with %v, want KEY_EXPIRED", got)
	}
	stop()

	_, token = addKey(t, m, store.Key{Scopes: []string{"streams:read"}})
	if p, err = a.Authenticate(context.Background(), token); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	w, stop = a.Watch(ctx, p)
	cancel()
	if got := waitEnded(t, w); got != nil {
		t.Fatalf("a request that ended reads as revoked: %v", got)
	}
	stop()

	admin, err := a.Authenticate(context.Background(), adminKey)
	if err != nil {
		t.Fatal(err)
	}
	w, stop = a.Watch(context.Background(), admin)
	stop()
	if w.Err() != nil {
		t.Fatalf("the admin key's watch ended: %v", context.Cause(w))
	}
	a.wmu.Lock()
	n := len(a.watches)
	a.wmu.Unlock()
	if n != 0 {
		t.Fatalf("%d keys still watched after every watch stopped", n)
	}
}
