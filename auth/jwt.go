package auth

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/MicahParks/jwkset"
	"github.com/MicahParks/keyfunc/v3"
	"github.com/golang-jwt/jwt/v5"

	"github.com/heraldstreams/herald/webhook"
)

// Defaults of JWTConfig.
const (
	DefaultJWKSRefreshInterval    = time.Hour
	DefaultJWKSMinRefreshInterval = time.Minute
	DefaultJWTLeeway              = 30 * time.Second
	// maxJWKSBytes caps a JWKS response.
	maxJWKSBytes = 1 << 20
	jwksTimeout  = 10 * time.Second
)

// asymmetricAlgs are the algorithms a JWKS key may verify. HMAC is never
// among them: a token "signed" with a public key as an HMAC secret (the
// alg confusion attack) is refused before any key is looked up.
var asymmetricAlgs = []string{"RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"}

// JWTConfig configures platform tokens: JWTs issued by a platform's
// identity provider, accepted instead of Herald keys. Exactly one of
// HS256Secret and JWKSURL is set.
type JWTConfig struct {
	// HS256Secret verifies HS256 tokens (a secret shared with the
	// platform). At least 32 bytes.
	HS256Secret []byte
	// JWKSURL is the identity provider's JWK Set (RS*, PS*, ES*, EdDSA).
	// It is fetched through Herald's SSRF-safe sender: https:// to a
	// public address, unless JWKSAllowCIDRs allows its range.
	JWKSURL string
	// JWKSAllowCIDRs allows a JWKS on a private network, for an identity
	// provider inside the operator's network. It never allows http://.
	JWKSAllowCIDRs []netip.Prefix
	// JWKSAllowHTTP allows an http:// JWKS URL whose host is a loopback
	// address or localhost (an identity provider on the same machine, in
	// development); without it the JWKS URL must be https://, since keys
	// fetched in the clear could be swapped for an attacker's.
	JWKSAllowHTTP bool
	// JWKSRefreshInterval is how often the JWK Set is fetched again, so a
	// key the provider removed stops verifying. Default 1 h.
	JWKSRefreshInterval time.Duration
	// JWKSMinRefreshInterval bounds how often a token with an unknown key
	// id makes Herald fetch the JWK Set (key rotation). Default 1 min.
	JWKSMinRefreshInterval time.Duration
	// Issuer and Audience must match the token's iss and aud. Required.
	Issuer   string
	Audience string
	// TenantClaims are the claims that may carry the tenant, first
	// present wins. Default "tenant", "org_id". A present one must be a
	// tenant name (a non-empty string of letters, digits, '-', '_' and
	// '.', as a key's tenant): a token whose tenant claim is anything else
	// (a number, an array, "", null) is refused, never taken as a token
	// without a tenant, which would see every tenant.
	TenantClaims []string
	// RequireTenant refuses tokens that carry no tenant claim, for a
	// platform whose tokens all act for one tenant: a token minted
	// without one by mistake would otherwise see every tenant.
	RequireTenant bool
	// ScopeClaims are the claims that may carry scopes: a space-separated
	// string or an array of strings; first present wins. Default "scope",
	// "scopes". Names that are not Herald scopes are ignored (a provider's
	// token carries others, such as "openid").
	ScopeClaims []string
	// Leeway tolerates clock skew on exp, nbf and iat. Default 30 s.
	Leeway time.Duration
	Logger *slog.Logger
}

// JWTVerifier verifies platform tokens. With a JWKS it owns a goroutine
// that refreshes the key set: Start it, and Close it on shutdown.
type JWTVerifier struct {
	cfg    JWTConfig
	secret []byte
	log    *slog.Logger
	// tenantPrefix is the template of tenants' stream namespaces: the
	// Authenticator's, which New sets before any token is verified.
	tenantPrefix string

	// JWKS state. keys is the current key set (nil until the first fetch
	// succeeds); refreshMu serialises fetches, lastFetch (under it) rate
	// limits fetches for unknown key ids.
	client    jwksClient
	keys      atomic.Pointer[keySet]
	refreshMu sync.Mutex
	lastFetch time.Time
	stop      chan struct{}
	wg        sync.WaitGroup
	closeOnce sync.Once
}

// jwksClient fetches a JWK Set (the webhook sender's guarded client).
type jwksClient interface {
	fetch(ctx context.Context, url string) (keyfunc.Keyfunc, error)
}

type keySet struct{ kf keyfunc.Keyfunc }

// NewJWTVerifier checks cfg and returns a verifier. It fetches nothing:
// Start does.
func NewJWTVerifier(cfg JWTConfig) (*JWTVerifier, error) {
	if (len(cfg.HS256Secret) == 0) == (cfg.JWKSURL == "") {
		return nil, errors.New("auth: platform tokens need exactly one of an HS256 secret and a JWKS URL")
	}
	if len(cfg.HS256Secret) > 0 && len(cfg.HS256Secret) < 32 {
		return nil, errors.New("auth: the HS256 secret must be at least 32 bytes")
	}
	if cfg.Issuer == "" || cfg.Audience == "" {
		return nil, errors.New("auth: platform tokens need an issuer and an audience to check")
	}
	if cfg.JWKSRefreshInterval <= 0 {
		cfg.JWKSRefreshInterval = DefaultJWKSRefreshInterval
	}
	if cfg.JWKSMinRefreshInterval <= 0 {
		cfg.JWKSMinRefreshInterval = DefaultJWKSMinRefreshInterval
	}
	if cfg.Leeway <= 0 {
		cfg.Leeway = DefaultJWTLeeway
	}
	if len(cfg.TenantClaims) == 0 {
		cfg.TenantClaims = []string{"tenant", "org_id"}
	}
	if len(cfg.ScopeClaims) == 0 {
		cfg.ScopeClaims = []string{"scope", "scopes"}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	v := &JWTVerifier{cfg: cfg, secret: cfg.HS256Secret, log: cfg.Logger, tenantPrefix: DefaultTenantStreamPrefix, stop: make(chan struct{})}
	if cfg.JWKSURL != "" {
		allow, err := jwksAllowList(cfg)
		if err != nil {
			return nil, err
		}
		sender := webhook.New(webhook.Config{AllowCIDRs: allow, Timeout: jwksTimeout, MaxConcurrent: 2, MaxPerHost: 2})
		if _, err := sender.Policy().CheckURL(cfg.JWKSURL); err != nil {
			return nil, fmt.Errorf("auth: JWKS URL: %w", err)
		}
		v.client = guardedJWKS{sender: sender}
	}
	return v, nil
}

// loopbackPrefixes are the loopback ranges an http:// JWKS may be
// fetched from with JWKSAllowHTTP.
var loopbackPrefixes = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128")}

// jwksAllowList checks the JWKS URL's scheme and returns the address
// ranges the sender may fetch it from. http:// needs JWKSAllowHTTP and a
// loopback host, which it then allows; a name other than localhost is
// refused even if it resolves to a loopback address, since DNS could
// later point it elsewhere.
func jwksAllowList(cfg JWTConfig) ([]netip.Prefix, error) {
	u, err := url.Parse(cfg.JWKSURL)
	if err != nil || u.Scheme != "http" {
		return cfg.JWKSAllowCIDRs, nil // CheckURL judges the rest
	}
	if !cfg.JWKSAllowHTTP {
		return nil, errors.New("auth: the JWKS URL must be https:// (http:// is allowed only to a loopback address, with --jwt-jwks-allow-http)")
	}
	host := u.Hostname()
	addr, err := netip.ParseAddr(host)
	if !strings.EqualFold(host, "localhost") && (err != nil || !addr.Unmap().IsLoopback()) {
		return nil, fmt.Errorf("auth: an http:// JWKS URL must name a loopback address or localhost, not %q; use https://", host)
	}
	return append(slices.Clone(cfg.JWKSAllowCIDRs), loopbackPrefixes...), nil
}

// guardedJWKS fetches through the webhook sender's client.
type guardedJWKS struct{ sender *webhook.Sender }

func (g guardedJWKS) fetch(ctx context.Context, url string) (keyfunc.Keyfunc, error) {
	// RefreshInterval 0: the library starts no goroutine of its own;
	// the verifier's loop refreshes.
	st, err := jwkset.NewStorageFromHTTP(url, jwkset.HTTPClientStorageOptions{
		Client:      g.sender.Client(maxJWKSBytes),
		Ctx:         ctx,
		HTTPTimeout: jwksTimeout,
	})
	if err != nil {
		return nil, err
	}
	return keyfunc.New(keyfunc.Options{Ctx: ctx, Storage: st})
}

// Start fetches the JWK Set once (a failure is logged, and retried by
// the first token) and starts the refresh loop. Without a JWKS it does
// nothing.
func (v *JWTVerifier) Start(ctx context.Context) {
	if v.client == nil {
		return
	}
	if err := v.refresh(ctx, false); err != nil {
		v.log.WarnContext(ctx, "fetching the platform JWKS failed; retrying on the first token", "url", v.cfg.JWKSURL, "err", err)
	}
	v.wg.Go(func() { v.refreshLoop() })
}

// Close stops the refresh loop and waits for it.
func (v *JWTVerifier) Close() {
	v.closeOnce.Do(func() { close(v.stop) })
	v.wg.Wait()
}

func (v *JWTVerifier) refreshLoop() {
	t := time.NewTicker(v.cfg.JWKSRefreshInterval)
	defer t.Stop()
	for {
		select {
		case <-v.stop:
			return
		case <-t.C:
			ctx, cancel := context.WithTimeout(context.Background(), jwksTimeout)
			if err := v.refresh(ctx, false); err != nil {
				// The keys fetched before stay in use.
				v.log.Warn("refreshing the platform JWKS failed", "url", v.cfg.JWKSURL, "err", err)
			}
			cancel()
		}
	}
}

// refresh fetches the JWK Set and swaps it in. With limited, it fetches
// only when the last fetch is at least JWKSMinRefreshInterval old, and
// reports whether it fetched through a nil error.
func (v *JWTVerifier) refresh(ctx context.Context, limited bool) error {
	v.refreshMu.Lock()
	defer v.refreshMu.Unlock()
	now := time.Now()
	if limited && !v.lastFetch.IsZero() && now.Sub(v.lastFetch) < v.cfg.JWKSMinRefreshInterval {
		return errNoRefresh
	}
	v.lastFetch = now
	kf, err := v.client.fetch(ctx, v.cfg.JWKSURL)
	if err != nil {
		return err
	}
	v.keys.Store(&keySet{kf: kf})
	return nil
}

var errNoRefresh = errors.New("auth: JWKS fetched too recently")

// Verify checks a platform token at now and returns its principal.
// Errors are *Error: ErrInvalidKey, ErrKeyExpired, ErrUnavailable.
func (v *JWTVerifier) Verify(ctx context.Context, token string, now time.Time) (*Principal, error) {
	claims := jwt.MapClaims{}
	parser := jwt.NewParser(v.parserOptions(now)...)
	_, err := parser.ParseWithClaims(token, claims, v.keyfunc(ctx))
	if err != nil && v.client != nil && errors.Is(err, jwkset.ErrKeyNotFound) {
		// An unknown key id: the provider may have rotated its keys.
		switch rerr := v.refresh(ctx, true); {
		case rerr == nil:
			claims = jwt.MapClaims{}
			_, err = parser.ParseWithClaims(token, claims, v.keyfunc(ctx))
		case !errors.Is(rerr, errNoRefresh):
			v.log.WarnContext(ctx, "fetching the platform JWKS for a new key id failed", "url", v.cfg.JWKSURL, "err", rerr)
		}
	}
	switch {
	case err == nil:
	case errors.Is(err, errNoKeys):
		return nil, ErrUnavailable
	case errors.Is(err, jwt.ErrTokenExpired):
		return nil, ErrKeyExpired
	default:
		return nil, ErrInvalidKey
	}
	return v.principal(claims)
}

func (v *JWTVerifier) parserOptions(now time.Time) []jwt.ParserOption {
	algs := asymmetricAlgs
	if len(v.secret) > 0 {
		algs = []string{"HS256"}
	}
	return []jwt.ParserOption{
		jwt.WithValidMethods(algs),
		jwt.WithIssuer(v.cfg.Issuer),
		jwt.WithAudience(v.cfg.Audience),
		jwt.WithExpirationRequired(),
		jwt.WithIssuedAt(),
		jwt.WithLeeway(v.cfg.Leeway),
		jwt.WithTimeFunc(func() time.Time { return now }),
	}
}

var errNoKeys = errors.New("auth: the platform JWKS has not been fetched")

func (v *JWTVerifier) keyfunc(ctx context.Context) jwt.Keyfunc {
	if len(v.secret) > 0 {
		return func(t *jwt.Token) (any, error) {
			// WithValidMethods already refused anything but HS256; this
			// keeps the secret from ever meeting another method.
			if _, ok := t.Method.(*jwt.SigningMethodHMAC); !ok {
				return nil, fmt.Errorf("unexpected signing method %v", t.Header["alg"])
			}
			return v.secret, nil
		}
	}
	ks := v.keys.Load()
	if ks == nil {
		if err := v.refresh(ctx, true); err != nil {
			return func(*jwt.Token) (any, error) { return nil, errNoKeys }
		}
		ks = v.keys.Load()
	}
	return ks.kf.KeyfuncCtx(ctx)
}

// principal maps a verified token's claims to a principal.
func (v *JWTVerifier) principal(claims jwt.MapClaims) (*Principal, error) {
	sub, _ := claims.GetSubject()
	tenant, err := v.tenant(claims)
	if err != nil {
		return nil, err
	}
	var names []string
scopeClaims:
	for _, name := range v.cfg.ScopeClaims {
		raw, present := claims[name]
		if !present {
			continue
		}
		switch val := raw.(type) {
		case string:
			names = strings.Fields(val)
		case []any:
			for _, e := range val {
				if s, ok := e.(string); ok {
					names = append(names, s)
				}
			}
		default:
			return nil, ErrInvalidKey
		}
		break scopeClaims
	}
	var scopes []Scope
	for _, n := range names {
		if s, err := ParseScope(n); err == nil {
			scopes = append(scopes, s)
		}
	}
	var expires time.Time
	if exp, err := claims.GetExpirationTime(); err == nil && exp != nil {
		expires = exp.Time
	}
	return newPrincipal("jwt:"+sub, KindToken, tenant, setOf(scopes).list(), nil, expires, v.tenantPrefix)
}

// tenant returns the tenant of a verified token: its first present tenant
// claim, which must be a tenant name; "" when none is present, unless
// RequireTenant.
func (v *JWTVerifier) tenant(claims jwt.MapClaims) (string, error) {
	for _, name := range v.cfg.TenantClaims {
		raw, present := claims[name]
		if !present {
			continue
		}
		s, ok := raw.(string)
		if !ok || s == "" || tenantNameProblem(s) != "" {
			return "", ErrInvalidTenantClaim
		}
		return s, nil
	}
	if v.cfg.RequireTenant {
		return "", ErrTenantClaimRequired
	}
	return "", nil
}
