package auth

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/heraldstreams/herald/glob"
	"github.com/heraldstreams/herald/internal/audit"
	"github.com/heraldstreams/herald/internal/httpjson"
	"github.com/heraldstreams/herald/store"
)

// KeysPrefix is where the key API lives.
const KeysPrefix = "/_herald/v1/keys"

// Limits of a key's configuration.
const (
	maxKeyPaths          = 64
	maxTenantLength      = 128
	maxDescriptionLength = 256
	maxKeysBody          = 64 << 10
	defaultListLimit     = 100
	maxListLimit         = 1000
)

// KeysAPIConfig configures a KeysAPI.
type KeysAPIConfig struct {
	Auth  *Authenticator
	Store store.KeyStore
	// Rand makes keys; crypto/rand.Reader when nil.
	Rand   io.Reader
	Now    func() time.Time
	Logger *slog.Logger
	// PortalURL is the dashboard's address as its users reach it (Herald's
	// public URL and /_herald/ui/): a portal token's url is it with the
	// token in the fragment (#key=). None: the answer has no url.
	PortalURL string
	// Fail answers a failed request: Herald's one error table
	// (apierr.Failer), which knows the store's errors; required. It is
	// given rather than imported because the table names the engines'
	// errors, and the engines build on this package.
	Fail func(http.ResponseWriter, *http.Request, error)
}

// KeysAPI serves the key API, every route of it behind the admin scope:
//
//	POST   /_herald/v1/keys       create: 201 {"id", "key", ...}; the key is shown only here
//	GET    /_herald/v1/keys       list:   {"data": [...], "next_cursor"}; ?limit=&cursor=&tenant=
//	GET    /_herald/v1/keys/{id}  one key (never its secret)
//	DELETE /_herald/v1/keys/{id}  revoke: 204, effective at once
//	POST   /_herald/v1/portal-tokens  a short-lived key of one tenant for the
//	                                  dashboard's tenant portal: 201 {"token", "url", ...}
//
// An admin credential limited to a tenant sees and makes only keys of
// its tenant; one limited to stream paths cannot make keys at all (it
// could make a key wider than itself).
type KeysAPI struct {
	cfg KeysAPIConfig
}

// NewKeysAPI returns the key API.
func NewKeysAPI(cfg KeysAPIConfig) *KeysAPI {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Fail == nil {
		// Without the table a missing key would be a 500.
		panic("auth: KeysAPIConfig.Fail is required: the one error table's writer (apierr.Failer)") // a programming error
	}
	return &KeysAPI{cfg: cfg}
}

// Routes are the key API's routes, each behind the admin scope.
func (k *KeysAPI) Routes() []Route {
	admin := Rule{Scope: ScopeAdmin}
	return []Route{
		{http.MethodPost, KeysPrefix, admin, http.HandlerFunc(k.create)},
		{http.MethodGet, KeysPrefix, admin, http.HandlerFunc(k.list)},
		{http.MethodGet, KeysPrefix + "/{id}", admin, http.HandlerFunc(k.get)},
		{http.MethodDelete, KeysPrefix + "/{id}", admin, http.HandlerFunc(k.delete)},
		{http.MethodPost, PortalTokensPath, admin, http.HandlerFunc(k.mintPortalToken)},
	}
}

// keyView is a key on the wire. Key is set only in the create answer.
type keyView struct {
	ID          string   `json:"id"`
	Key         string   `json:"key,omitempty"`
	Scopes      []string `json:"scopes"`
	Tenant      string   `json:"tenant,omitempty"`
	Paths       []string `json:"paths"`
	Description string   `json:"description,omitempty"`
	ExpiresAt   *string  `json:"expires_at"`
	CreatedAt   string   `json:"created_at"`
}

func view(k *store.Key) keyView {
	v := keyView{ID: k.ID, Scopes: k.Scopes, Tenant: k.Tenant, Paths: k.Paths, Description: k.Description,
		CreatedAt: k.CreatedAt.UTC().Format(time.RFC3339Nano)}
	if v.Paths == nil {
		v.Paths = []string{}
	}
	if !k.ExpiresAt.IsZero() {
		s := k.ExpiresAt.UTC().Format(time.RFC3339Nano)
		v.ExpiresAt = &s
	}
	return v
}

// createRequest is the body of a create.
type createRequest struct {
	Scopes      []string   `json:"scopes"`
	Tenant      string     `json:"tenant"`
	Paths       []string   `json:"paths"`
	ExpiresAt   *time.Time `json:"expires_at"`
	Description string     `json:"description"`
}

// badRequest is a 400 of the key API.
func badRequest(code, field, format string, args ...any) *Error {
	return httpjson.BadRequest(code, field, format, args...)
}

func (k *KeysAPI) fail(w http.ResponseWriter, r *http.Request, err error) { k.cfg.Fail(w, r, err) }

func writeJSON(w http.ResponseWriter, status int, v any) { httpjson.Write(w, status, v) }

func (k *KeysAPI) create(w http.ResponseWriter, r *http.Request) {
	caller, _ := FromContext(r.Context())
	var req createRequest
	if err := decodeBody(w, r, &req); err != nil {
		k.fail(w, r, err)
		return
	}
	now := k.cfg.Now()
	key, err := validateCreate(&req, now)
	if err != nil {
		k.fail(w, r, err)
		return
	}
	if key.Tenant, err = tenantOfNewKey(caller, key.Tenant); err != nil {
		k.fail(w, r, err)
		return
	}
	if err := pathsInNamespace(key, k.cfg.Auth.TenantStreamPrefix()); err != nil {
		k.fail(w, r, err)
		return
	}
	expires, ok := expiryWithin(caller, key.ExpiresAt)
	if !ok {
		k.fail(w, r, badRequest("INVALID_EXPIRES_AT", "expires_at", "expires_at must not be after %s, when the credential making the key expires: a key never outlives the credential that made it",
			caller.ExpiresAt.UTC().Format(time.RFC3339)))
		return
	}
	key.ExpiresAt = expires
	v, err := k.issue(r.Context(), key, now)
	if err != nil {
		k.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, v)
}

// tenantOfNewKey is the tenant of a key caller makes asking for tenant:
// a credential limited to a tenant makes keys of its own tenant only, and
// one limited to stream paths makes none (the key could be wider than
// itself).
func tenantOfNewKey(caller *Principal, tenant string) (string, error) {
	if len(caller.Paths) > 0 {
		return "", forbidden("a credential limited to stream paths cannot create keys")
	}
	if caller.Tenant == "" {
		return tenant, nil
	}
	if tenant != "" && tenant != caller.Tenant {
		return "", tenantForbidden("a credential of one tenant cannot create keys of another")
	}
	return caller.Tenant, nil
}

// pathsInNamespace refuses a key of a tenant whose paths reach beyond
// the tenant's stream namespace under template: its credential could
// never use them, and a key that says it may would mislead whoever reads
// it.
func pathsInNamespace(key store.Key, template string) error {
	if key.Tenant == "" {
		return nil
	}
	ns := TenantNamespace(template, key.Tenant)
	if ns == "" {
		return badRequest("INVALID_TENANT", "tenant", "tenant must be a name usable in a stream path, not %q", key.Tenant)
	}
	nsPattern, err := glob.Compile(ns + "**")
	if err != nil {
		return err
	}
	for _, raw := range key.Paths {
		if p, err := glob.Compile(raw); err != nil || !nsPattern.Covers(p) {
			return forbidden("a key of tenant " + key.Tenant + " may only have paths inside its stream namespace " + ns)
		}
	}
	return nil
}

// expiryWithin returns the expiry of a key caller makes, asking for
// asked (zero: none). A key never outlives the credential that made it:
// a key asked without an expiry gets the caller's (if it has one), and
// one asked to expire after the caller is refused (false) rather than
// quietly shortened, so that whoever asked for it learns it will stop
// working sooner than they planned.
func expiryWithin(caller *Principal, asked time.Time) (time.Time, bool) {
	switch {
	case caller.ExpiresAt.IsZero():
		return asked, true
	case asked.IsZero():
		return caller.ExpiresAt.UTC(), true
	case asked.After(caller.ExpiresAt):
		return time.Time{}, false
	}
	return asked, true
}

// issue gives key (without id and hash) a new id and secret, stores it
// and returns it with its secret, which only this answer shows.
func (k *KeysAPI) issue(ctx context.Context, key store.Key, now time.Time) (keyView, error) {
	id, secret, hash, err := NewKey(k.cfg.Rand)
	if err != nil {
		return keyView{}, err
	}
	key.ID, key.Hash = id, hash
	stored, err := k.cfg.Store.KeyCreate(ctx, &store.KeyCreateParams{Key: key, Now: now})
	if err != nil {
		return keyView{}, err
	}
	// A lookup of this id may have cached its absence (ids are random, so
	// only by a guess): forget it.
	k.cfg.Auth.Invalidate(id)
	audit.Add(ctx, keyAudit(stored))
	v := view(stored)
	v.Key = secret
	return v, nil
}

// decodeBody decodes the JSON object body of a request without query
// parameters into out, refusing unknown fields and trailing data.
func decodeBody(w http.ResponseWriter, r *http.Request, out any) error {
	if err := checkQuery(r); err != nil {
		return err
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxKeysBody))
	if err != nil {
		var mb *http.MaxBytesError
		if errors.As(err, &mb) {
			return &Error{Status: http.StatusRequestEntityTooLarge, Code: "PAYLOAD_TOO_LARGE", Message: fmt.Sprintf("the body is over %d bytes", maxKeysBody)}
		}
		return badRequest("INVALID_JSON", "", "the body could not be read")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(out); err != nil {
		var te *json.UnmarshalTypeError
		var pe *time.ParseError
		msg := err.Error()
		switch {
		case errors.As(err, &te):
			return badRequest("INVALID_JSON", te.Field, "%s must be a JSON %s", te.Field, te.Type.String())
		case errors.As(err, &pe):
			return badRequest("INVALID_EXPIRES_AT", "expires_at", "expires_at must be an RFC 3339 time, such as 2027-01-02T15:04:05Z")
		case strings.HasPrefix(msg, "json: unknown field "):
			field := strings.Trim(strings.TrimPrefix(msg, "json: unknown field "), `"`)
			return badRequest("UNKNOWN_FIELD", field, "unknown field %q", field)
		}
		return badRequest("INVALID_JSON", "", "the body is not a valid JSON object: %s", strings.TrimPrefix(msg, "json: "))
	}
	if dec.More() {
		return badRequest("INVALID_JSON", "", "the body has data after the JSON object")
	}
	return nil
}

// validateCreate checks a create request and returns the key to store
// (without id and hash).
func validateCreate(req *createRequest, now time.Time) (store.Key, error) {
	var key store.Key
	if len(req.Scopes) == 0 {
		return key, badRequest("INVALID_SCOPES", "scopes", "scopes is required: a list of one or more scopes")
	}
	scopes, err := ParseScopes(req.Scopes)
	if err != nil {
		return key, badRequest("INVALID_SCOPES", "scopes", "%v", err)
	}
	for _, s := range scopes {
		key.Scopes = append(key.Scopes, string(s))
	}
	if err := validTenant(req.Tenant); err != nil {
		return key, err
	}
	key.Tenant = req.Tenant
	if len(req.Paths) > maxKeyPaths {
		return key, badRequest("INVALID_PATHS", "paths", "at most %d path patterns", maxKeyPaths)
	}
	for _, raw := range req.Paths {
		p, err := glob.Compile(raw)
		if err != nil {
			return key, badRequest("INVALID_PATHS", "paths", "%v", err)
		}
		key.Paths = append(key.Paths, p.String())
	}
	if req.ExpiresAt != nil {
		if !req.ExpiresAt.After(now) {
			return key, badRequest("INVALID_EXPIRES_AT", "expires_at", "expires_at must be in the future")
		}
		key.ExpiresAt = req.ExpiresAt.UTC()
	}
	if len(req.Description) > maxDescriptionLength {
		return key, badRequest("INVALID_DESCRIPTION", "description", "description is at most %d bytes", maxDescriptionLength)
	}
	key.Description = req.Description
	return key, nil
}

func validTenant(t string) error {
	if p := tenantNameProblem(t); p != "" {
		return badRequest("INVALID_TENANT", "tenant", "tenant %s", p)
	}
	return nil
}

// tenantNameProblem says what keeps t from being a tenant's name, or ""
// ("" itself is no tenant, and passes). A key's tenant and a platform
// token's are held to this one rule.
func tenantNameProblem(t string) string {
	if len(t) > maxTenantLength {
		return fmt.Sprintf("is at most %d characters", maxTenantLength)
	}
	for i := 0; i < len(t); i++ {
		c := t[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_' || c == '.') {
			return "may only hold letters, digits, '-', '_' and '.'"
		}
	}
	return ""
}

// checkQuery refuses query parameters the route does not know.
func checkQuery(r *http.Request, known ...string) error { return httpjson.CheckQuery(r, known...) }

func (k *KeysAPI) list(w http.ResponseWriter, r *http.Request) {
	caller, _ := FromContext(r.Context())
	if err := checkQuery(r, "limit", "cursor", "tenant"); err != nil {
		k.fail(w, r, err)
		return
	}
	q := r.URL.Query()
	limit := defaultListLimit
	if s := q.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > maxListLimit {
			k.fail(w, r, badRequest("INVALID_PARAMETER", "limit", "limit must be a number from 1 to %d", maxListLimit))
			return
		}
		limit = n
	}
	// A cursor is the id of the last key of a page: anything else is a
	// mistake of the caller, not an empty page.
	if c := q.Get("cursor"); c != "" && !IsKeyID(c) {
		k.fail(w, r, badRequest("INVALID_PARAMETER", "cursor", "cursor must be a next_cursor value of a previous page"))
		return
	}
	tenant := q.Get("tenant")
	if err := validTenant(tenant); err != nil {
		k.fail(w, r, err)
		return
	}
	if caller.Tenant != "" {
		if tenant != "" && tenant != caller.Tenant {
			k.fail(w, r, tenantForbidden("a credential of one tenant cannot list keys of another"))
			return
		}
		tenant = caller.Tenant
	}
	// One more than asked tells whether there is a next page.
	keys, err := k.cfg.Store.KeyList(r.Context(), &store.KeyListParams{After: q.Get("cursor"), Limit: limit + 1, Tenant: tenant})
	if err != nil {
		k.fail(w, r, err)
		return
	}
	out := struct {
		Data       []keyView `json:"data"`
		NextCursor *string   `json:"next_cursor"`
	}{Data: []keyView{}}
	if len(keys) > limit {
		keys = keys[:limit]
		next := keys[limit-1].ID
		out.NextCursor = &next
	}
	for i := range keys {
		out.Data = append(out.Data, view(&keys[i]))
	}
	writeJSON(w, http.StatusOK, out)
}

// lookup returns the key named in the path, as a 404 when the caller's
// tenant does not own it (another tenant's keys are not even shown to
// exist).
func (k *KeysAPI) lookup(ctx context.Context, r *http.Request) (*store.Key, error) {
	caller, _ := FromContext(ctx)
	key, err := k.cfg.Store.KeyGet(ctx, &store.KeyGetParams{ID: r.PathValue("id")})
	if err != nil {
		return nil, err
	}
	if caller.Tenant != "" && key.Tenant != caller.Tenant {
		return nil, store.ErrKeyNotFound
	}
	return key, nil
}

func (k *KeysAPI) get(w http.ResponseWriter, r *http.Request) {
	if err := checkQuery(r); err != nil {
		k.fail(w, r, err)
		return
	}
	key, err := k.lookup(r.Context(), r)
	if err != nil {
		k.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, view(key))
}

func (k *KeysAPI) delete(w http.ResponseWriter, r *http.Request) {
	if err := checkQuery(r); err != nil {
		k.fail(w, r, err)
		return
	}
	key, err := k.lookup(r.Context(), r)
	if err != nil {
		k.fail(w, r, err)
		return
	}
	audit.Add(r.Context(), keyAudit(key))
	err = k.cfg.Store.KeyDelete(r.Context(), &store.KeyDeleteParams{ID: key.ID})
	// Invalidate whatever happened: a failed delete may still have
	// committed, and a cached key must not outlive its revocation.
	k.cfg.Auth.Invalidate(key.ID)
	if err != nil {
		k.fail(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// keyAudit is what the audit record of a key's creation or deletion says
// of it: everything but its secret and hash.
func keyAudit(k *store.Key) slog.Attr {
	expires := "never"
	if !k.ExpiresAt.IsZero() {
		expires = k.ExpiresAt.UTC().Format(time.RFC3339)
	}
	return slog.Group("key", slog.String("id", k.ID), slog.String("tenant", k.Tenant),
		slog.String("scopes", strings.Join(k.Scopes, " ")), slog.String("paths", strings.Join(k.Paths, " ")),
		slog.String("expires_at", expires))
}
