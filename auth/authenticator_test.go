package auth

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/heraldstreams/herald/internal/httpjson"
	"github.com/heraldstreams/herald/store"
)

// memKeys is an in-memory KeyStore that counts reads, so tests can see
// when the authenticator goes to the store.
type memKeys struct {
	mu    sync.Mutex
	keys  map[string]store.Key
	reads atomic.Int64
	fail  error
}

func newMemKeys() *memKeys { return &memKeys{keys: map[string]store.Key{}} }

func (m *memKeys) KeyCreate(_ context.Context, p *store.KeyCreateParams) (*store.Key, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.keys[p.Key.ID]; ok {
		return nil, store.ErrKeyExists
	}
	k := p.Key
	k.CreatedAt = p.Now
	m.keys[k.ID] = k
	return &k, nil
}

func (m *memKeys) KeyGet(_ context.Context, p *store.KeyGetParams) (*store.Key, error) {
	m.reads.Add(1)
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.fail != nil {
		return nil, m.fail
	}
	k, ok := m.keys[p.ID]
	if !ok {
		return nil, store.ErrKeyNotFound
	}
	return &k, nil
}

func (m *memKeys) KeyList(context.Context, *store.KeyListParams) ([]store.Key, error) {
	return nil, errors.New("not used")
}

func (m *memKeys) KeyDelete(_ context.Context, p *store.KeyDeleteParams) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.keys[p.ID]; !ok {
		return store.ErrKeyNotFound
	}
	delete(m.keys, p.ID)
	return nil
}

// clock is a settable test clock.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

var t0 = time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)

const adminKey = "admin-key-for-tests-0123456789abcdef"

// addKey stores a new key and returns the key to present.
func addKey(t testing.TB, m *memKeys, k store.Key) (string, string) {
	t.Helper()
	id, secret, hash, err := NewKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	k.ID, k.Hash = id, hash
	if _, err := m.KeyCreate(context.Background(), &store.KeyCreateParams{Key: k, Now: t0}); err != nil {
		t.Fatal(err)
	}
	return id, secret
}

func newAuth(t testing.TB, m *memKeys, c *clock) *Authenticator {
	t.Helper()
	a, err := New(Config{Keys: m, AdminKey: adminKey, Now: c.Now, CacheTTL: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func wantErr(t *testing.T, err, want error) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Fatalf("err = %v, want %v", err, want)
	}
}

func TestAuthenticateKinds(t *testing.T) {
	t.Parallel()
	m, c := newMemKeys(), &clock{now: t0}
	a := newAuth(t, m, c)
	ctx := context.Background()

	p, err := a.Authenticate(ctx, adminKey)
	if err != nil || p.Kind != KindAdminKey || !p.Admin || !p.Has(ScopeStreamsWrite) || !p.AllowsPath("/any") {
		t.Fatalf("admin key: %+v, %v", p, err)
	}

	id, key := addKey(t, m, store.Key{Scopes: []string{"streams:read"}, Tenant: "acme", Paths: []string{"/tenants/acme/a/**"}})
	p, err = a.Authenticate(ctx, key)
	if err != nil || p.ID != id || p.Kind != KindKey || p.Tenant != "acme" || p.Admin {
		t.Fatalf("stored key: %+v, %v", p, err)
	}
	if !p.Has(ScopeStreamsRead) || p.Has(ScopeStreamsWrite) || !p.AllowsPath("/tenants/acme/a/b") || p.AllowsPath("/tenants/acme/b") || p.AllowsPath("/other") {
		t.Fatalf("stored key's scopes or paths: %+v", p)
	}

	wantErr(t, func() error { _, err := a.Authenticate(ctx, ""); return err }(), ErrUnauthenticated)
	for _, bad := range []string{
		"nonsense",
		adminKey + "x",
		otherSecret(key), // the right id, another secret
		strings.Replace(key, id, "aaaaaaaaaaaaaaaa", 1),
		"a.b.c", // looks like a JWT, but platform tokens are off
	} {
		if _, err := a.Authenticate(ctx, bad); !errors.Is(err, ErrInvalidKey) {
			t.Errorf("Authenticate(%q) = %v, want ErrInvalidKey", bad, err)
		}
	}
}

func TestKeyExpiry(t *testing.T) {
	t.Parallel()
	m, c := newMemKeys(), &clock{now: t0}
	a := newAuth(t, m, c)
	_, key := addKey(t, m, store.Key{Scopes: []string{"streams:read"}, ExpiresAt: t0.Add(time.Minute)})
	if _, err := a.Authenticate(context.Background(), key); err != nil {
		t.Fatal(err)
	}
	// Expiry applies to the cached key too, at the instant it passes.
	c.Add(time.Minute)
	_, err := a.Authenticate(context.Background(), key)
	wantErr(t, err, ErrKeyExpired)
}

func TestVerifiedKeysAreCachedAndRevocationIsImmediate(t *testing.T) {
	t.Parallel()
	m, c := newMemKeys(), &clock{now: t0}
	a := newAuth(t, m, c)
	ctx := context.Background()
	id, key := addKey(t, m, store.Key{Scopes: []string{"streams:write"}})
	for range 100 {
		if _, err := a.Authenticate(ctx, key); err != nil {
			t.Fatal(err)
		}
	}
	if n := m.reads.Load(); n != 1 {
		t.Fatalf("100 requests read the store %d times, want 1", n)
	}
	// Wrong secrets for a cached id are refused without a read either.
	if _, err := a.Authenticate(ctx, otherSecret(key)); !errors.Is(err, ErrInvalidKey) || m.reads.Load() != 1 {
		t.Fatalf("wrong secret: %v, %d reads", err, m.reads.Load())
	}
	// After the TTL the key is read again.
	c.Add(30 * time.Second)
	if _, err := a.Authenticate(ctx, key); err != nil || m.reads.Load() != 2 {
		t.Fatalf("after the TTL: %v, %d reads, want 2", err, m.reads.Load())
	}
	// A revoke through Invalidate applies to the next request, TTL or not.
	if err := m.KeyDelete(ctx, &store.KeyDeleteParams{ID: id}); err != nil {
		t.Fatal(err)
	}
	a.Invalidate(id)
	_, err := a.Authenticate(ctx, key)
	wantErr(t, err, ErrInvalidKey)
	// Unknown ids are cached as absent: guessing costs one read per TTL.
	before := m.reads.Load()
	for range 10 {
		if _, err := a.Authenticate(ctx, key); !errors.Is(err, ErrInvalidKey) {
			t.Fatal(err)
		}
	}
	if m.reads.Load() != before {
		t.Fatalf("a revoked id was read %d more times", m.reads.Load()-before)
	}
}

func TestStoreFailureIsUnavailableNotUnauthenticated(t *testing.T) {
	t.Parallel()
	m, c := newMemKeys(), &clock{now: t0}
	a := newAuth(t, m, c)
	_, key := addKey(t, m, store.Key{Scopes: []string{"streams:read"}})
	m.fail = errors.New("disk on fire")
	_, err := a.Authenticate(context.Background(), key)
	wantErr(t, err, ErrUnavailable)
	// The failure was not cached: the key works once the store is back.
	m.fail = nil
	if _, err := a.Authenticate(context.Background(), key); err != nil {
		t.Fatal(err)
	}
}

// A database that cannot be reached is STORE_UNAVAILABLE with
// Retry-After, the answer of every route, and the key works again once
// it is back.
func TestDatabaseAwayIsStoreUnavailable(t *testing.T) {
	t.Parallel()
	m, c := newMemKeys(), &clock{now: t0}
	a := newAuth(t, m, c)
	_, key := addKey(t, m, store.Key{Scopes: []string{"streams:read"}})
	m.fail = fmt.Errorf("%w: connection refused", store.ErrUnavailable)
	_, err := a.Authenticate(context.Background(), key)
	wantErr(t, err, httpjson.StoreUnavailable)
	m.fail = nil
	if _, err := a.Authenticate(context.Background(), key); err != nil {
		t.Fatal(err)
	}
}

func TestAdminKeyMustBeLong(t *testing.T) {
	t.Parallel()
	if _, err := New(Config{AdminKey: "short"}); err == nil {
		t.Fatal("a short admin key was accepted")
	}
}

func TestConcurrentAuthenticateAndRevoke(t *testing.T) {
	t.Parallel()
	m, c := newMemKeys(), &clock{now: t0}
	a := newAuth(t, m, c)
	id, key := addKey(t, m, store.Key{Scopes: []string{"streams:read"}})
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 200 {
				if _, err := a.Authenticate(context.Background(), key); err != nil && !errors.Is(err, ErrInvalidKey) {
					t.Error(err)
					return
				}
			}
		})
	}
	if err := m.KeyDelete(context.Background(), &store.KeyDeleteParams{ID: id}); err != nil {
		t.Fatal(err)
	}
	a.Invalidate(id)
	wg.Wait()
	// Whatever the interleaving, nothing cached survives the revoke.
	if _, err := a.Authenticate(context.Background(), key); !errors.Is(err, ErrInvalidKey) {
		t.Fatalf("after revoke: %v", err)
	}
}

// BenchmarkAuthenticate is the cost of checking a stored key on every
// request once it is cached: no store read.
func BenchmarkAuthenticate(b *testing.B) {
	m, c := newMemKeys(), &clock{now: t0}
	a := newAuth(b, m, c)
	_, key := addKey(b, m, store.Key{Scopes: []string{"streams:write"}, Paths: []string{"/agents/**"}})
	ctx := context.Background()
	if _, err := a.Authenticate(ctx, key); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			p, err := a.Authenticate(ctx, key)
			if err != nil || !p.Has(ScopeStreamsWrite) || !p.AllowsPath("/agents/task-1") {
				b.Fatal("authentication failed", err)
			}
		}
	})
	b.StopTimer()
	if n := m.reads.Load(); n != 1 {
		b.Fatalf("the store was read %d times, want 1", n)
	}
}

// otherSecret returns key with the last character of its secret changed:
// the same key id, a secret that is always different.
func otherSecret(key string) string {
	last := key[len(key)-1]
	repl := byte('A')
	if last == repl {
		repl = 'B'
	}
	return key[:len(key)-1] + string(repl)
}
