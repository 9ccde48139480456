package auth

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/heraldstreams/herald/internal/httpjson"
	"github.com/heraldstreams/herald/store"
)

// Defaults of Config.
const (
	DefaultCacheTTL = 30 * time.Second
	// MinAdminKeyLength is the shortest admin key accepted: it must be as
	// hard to guess as a generated key (32 random bytes encode to 43).
	MinAdminKeyLength = 32
	// maxCacheEntries bounds the verified-key cache; past it the cache is
	// emptied (refilled by the keys in use within one read each).
	maxCacheEntries = 10000
)

// Config configures an Authenticator.
type Config struct {
	// Keys is where stored API keys live; nil turns stored keys off.
	Keys store.KeyStore
	// AdminKey is the bootstrap key (HERALD_ADMIN_KEY or --admin-key-file);
	// "" for none. At least MinAdminKeyLength characters.
	AdminKey string
	// JWT verifies platform tokens; nil turns them off.
	JWT *JWTVerifier
	// CacheTTL is how long a verified stored key is trusted without
	// reading the store again. A revoke through this Authenticator
	// (Invalidate) takes effect at once; one made by another process
	// sharing the store takes at most CacheTTL. Default 30 s.
	CacheTTL time.Duration
	// TenantStreamPrefix is the template of a tenant's stream namespace
	// (see TenantNamespace); DefaultTenantStreamPrefix when "". A
	// credential of a tenant reaches only the streams in its namespace.
	TenantStreamPrefix string
	// Now is the clock; time.Now by default.
	Now    func() time.Time
	Logger *slog.Logger
}

// Authenticator resolves bearer credentials to principals. It is safe for
// concurrent use.
type Authenticator struct {
	// off: access control is off; every request is Anonymous.
	off       bool
	keys      store.KeyStore
	adminHash [sha256.Size]byte
	hasAdmin  bool
	admin     *Principal
	jwt       *JWTVerifier
	ttl       time.Duration
	now       func() time.Time
	log       *slog.Logger
	// tenantPrefix is Config.TenantStreamPrefix.
	tenantPrefix string

	mu    sync.RWMutex
	cache map[string]*cachedKey // by key id
	// gen counts invalidations: a lookup that started before one does not
	// cache what it read (it may be the key just revoked).
	gen atomic.Uint64

	// Requests watching their key, and the keys revoked lately
	// (revoke.go).
	wmu          sync.Mutex
	watches      map[string]map[*watch]struct{}
	revoked      map[string]struct{}
	revokedOrder []string
}

// cachedKey is a stored key as last read, or its absence (p nil).
type cachedKey struct {
	hash    [sha256.Size]byte
	p       *Principal
	fetched time.Time
}

// New returns an Authenticator.
func New(cfg Config) (*Authenticator, error) {
	if cfg.CacheTTL <= 0 {
		cfg.CacheTTL = DefaultCacheTTL
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.TenantStreamPrefix == "" {
		cfg.TenantStreamPrefix = DefaultTenantStreamPrefix
	}
	if err := CheckTenantStreamPrefix(cfg.TenantStreamPrefix); err != nil {
		return nil, fmt.Errorf("auth: %w", err)
	}
	a := &Authenticator{
		keys: cfg.Keys, jwt: cfg.JWT, ttl: cfg.CacheTTL, now: cfg.Now, log: cfg.Logger,
		tenantPrefix: cfg.TenantStreamPrefix, cache: make(map[string]*cachedKey),
		watches: make(map[string]map[*watch]struct{}), revoked: make(map[string]struct{}),
	}
	if cfg.JWT != nil {
		cfg.JWT.tenantPrefix = cfg.TenantStreamPrefix
	}
	if cfg.AdminKey != "" {
		if len(cfg.AdminKey) < MinAdminKeyLength {
			return nil, fmt.Errorf("auth: the admin key must be at least %d characters (generate one with: openssl rand -base64 32)", MinAdminKeyLength)
		}
		a.adminHash, a.hasAdmin = HashKey(cfg.AdminKey), true
		p, err := newPrincipal("admin", KindAdminKey, "", []Scope{ScopeAdmin}, nil, time.Time{}, "")
		if err != nil {
			return nil, err
		}
		a.admin = p
	}
	return a, nil
}

// Off returns an Authenticator for a Herald without access control: every
// request, with or without a credential, is Anonymous. Herald runs so only
// on loopback, or when the operator says --insecure-no-auth.
func Off() *Authenticator {
	return &Authenticator{off: true, now: time.Now, log: slog.New(slog.DiscardHandler), cache: make(map[string]*cachedKey)}
}

// TenantStreamPrefix returns the template of tenants' stream namespaces
// (Config.TenantStreamPrefix; the default for Off).
func (a *Authenticator) TenantStreamPrefix() string {
	if a.tenantPrefix == "" {
		return DefaultTenantStreamPrefix
	}
	return a.tenantPrefix
}

// Enabled reports whether credentials are checked (false for Off).
func (a *Authenticator) Enabled() bool { return !a.off }

// BearerToken returns the credential of an "Authorization: Bearer" header
// value, "" when there is none.
func BearerToken(header string) string {
	scheme, token, ok := strings.Cut(header, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return ""
	}
	return strings.TrimSpace(token)
}

// Authenticate resolves a bearer credential: the admin key, a stored key
// ("hk_..."), or a platform JWT. Errors are *Error: ErrUnauthenticated
// (no credential), ErrInvalidKey, ErrKeyExpired, ErrUnavailable.
func (a *Authenticator) Authenticate(ctx context.Context, token string) (*Principal, error) {
	if a.off {
		return Anonymous, nil
	}
	if token == "" {
		return nil, ErrUnauthenticated
	}
	hash := HashKey(token)
	if a.hasAdmin && subtle.ConstantTimeCompare(hash[:], a.adminHash[:]) == 1 {
		return a.admin, nil
	}
	if id, ok := ParseKey(token); ok && a.keys != nil {
		return a.storedKey(ctx, id, hash)
	}
	if a.jwt != nil && strings.Count(token, ".") == 2 {
		return a.jwt.Verify(ctx, token, a.now())
	}
	return nil, ErrInvalidKey
}

// storedKey checks a stored key, from the cache when it was read less
// than the TTL ago: the hot path is a hash, a map read and a compare.
func (a *Authenticator) storedKey(ctx context.Context, id string, hash [sha256.Size]byte) (*Principal, error) {
	now := a.now()
	a.mu.RLock()
	c := a.cache[id]
	a.mu.RUnlock()
	if c == nil || now.Sub(c.fetched) >= a.ttl || now.Before(c.fetched) {
		var err error
		if c, err = a.load(ctx, id, now); err != nil {
			return nil, err
		}
	}
	// Constant time: the id is public, the secret's hash is not.
	if c.p == nil || subtle.ConstantTimeCompare(hash[:], c.hash[:]) != 1 {
		return nil, ErrInvalidKey
	}
	if c.p.Expired(now) {
		return nil, ErrKeyExpired
	}
	return c.p, nil
}

// load reads a key from the store and caches it (or its absence, so
// unknown ids cost one read per TTL too).
func (a *Authenticator) load(ctx context.Context, id string, now time.Time) (*cachedKey, error) {
	gen := a.gen.Load()
	k, err := a.keys.KeyGet(ctx, &store.KeyGetParams{ID: id})
	c := &cachedKey{fetched: now}
	switch {
	case errors.Is(err, store.ErrKeyNotFound):
	case errors.Is(err, store.ErrUnavailable):
		// The database is away: the same answer as every route's.
		return nil, httpjson.StoreUnavailable
	case err != nil:
		a.log.ErrorContext(ctx, "reading an API key failed", "key_id", id, "err", err)
		return nil, ErrUnavailable
	default:
		scopes, perr := ParseScopes(k.Scopes)
		if perr != nil {
			// Written by a newer Herald, or by hand: refuse the key
			// rather than guess what it may do.
			a.log.ErrorContext(ctx, "stored API key has an unknown scope", "key_id", id, "err", perr)
			return nil, ErrInvalidKey
		}
		p, perr := newPrincipal(k.ID, KindKey, k.Tenant, scopes, k.Paths, k.ExpiresAt, a.tenantPrefix)
		if perr != nil {
			a.log.ErrorContext(ctx, "stored API key has an invalid path pattern", "key_id", id, "err", perr)
			return nil, ErrInvalidKey
		}
		if len(k.Hash) != sha256.Size {
			a.log.ErrorContext(ctx, "stored API key has a malformed hash", "key_id", id)
			return nil, ErrInvalidKey
		}
		copy(c.hash[:], k.Hash)
		c.p = p
	}
	a.mu.Lock()
	if a.gen.Load() == gen {
		if len(a.cache) >= maxCacheEntries {
			clear(a.cache)
		}
		a.cache[id] = c
	}
	a.mu.Unlock()
	return c, nil
}

// Invalidate forgets a cached key, so its revocation (or creation after a
// miss was cached) applies to the next request.
func (a *Authenticator) Invalidate(id string) {
	a.mu.Lock()
	a.gen.Add(1)
	delete(a.cache, id)
	a.mu.Unlock()
}
