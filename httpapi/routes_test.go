package httpapi

import (
	"context"
	"log/slog"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/heraldstreams/herald/auth"
	"github.com/heraldstreams/herald/httpapi/apierr"
	"github.com/heraldstreams/herald/store"
)

// scopedKeys is a key store of one key per scope, each holding that scope
// alone.
type scopedKeys struct {
	store.KeyStore
	byID   map[string]*store.Key
	bearer map[auth.Scope]string
}

func newScopedKeys(t *testing.T) *scopedKeys {
	t.Helper()
	k := &scopedKeys{byID: map[string]*store.Key{}, bearer: map[auth.Scope]string{}}
	for _, sc := range auth.AllScopes {
		id, key, hash, err := auth.NewKey(nil)
		if err != nil {
			t.Fatal(err)
		}
		k.byID[id] = &store.Key{ID: id, Hash: hash, Scopes: []string{string(sc)}}
		k.bearer[sc] = "Bearer " + key
	}
	return k
}

func (k *scopedKeys) KeyGet(_ context.Context, p *store.KeyGetParams) (*store.Key, error) {
	if key, ok := k.byID[p.ID]; ok {
		return key, nil
	}
	return nil, store.ErrKeyNotFound
}

// tableRig is a server with access control on, one key per scope, and
// the whole route table served: the stream routes on a store where no
// stream exists, every other route by a handler that answers 418.
func tableRig(t *testing.T) (*Server, *scopedKeys, []Route) {
	t.Helper()
	keys := newScopedKeys(t)
	a, err := auth.New(auth.Config{Keys: keys, AdminKey: strings.Repeat("a", auth.MinAdminKeyLength)})
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeStore{t: t,
		create: func(*store.StreamCreateParams) (*store.StreamCreateResult, error) { return nil, store.ErrNotFound },
		append: func(*store.StreamAppendParams) (*store.StreamAppendResult, error) { return nil, store.ErrNotFound },
		get:    func(*store.StreamGetParams) (*store.Stream, error) { return nil, store.ErrNotFound },
		read:   func(*store.StreamReadParams) (*store.StreamReadResult, error) { return nil, store.ErrNotFound },
		delete: func(*store.StreamDeleteParams) error { return store.ErrNotFound },
	}
	s := newTestServer(f, Config{Auth: a})
	teapot := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusTeapot) })
	routes := s.table(APIs{
		Subscriptions: &fakeSubscriptions{},
		Keys:          auth.NewKeysAPI(auth.KeysAPIConfig{Auth: a, Fail: apierr.Failer(slog.New(slog.DiscardHandler))}).Routes(),
		Metrics:       teapot, Stats: teapot, Dashboard: teapot, OpenAPI: teapot,
	})
	for i := range routes {
		if routes[i].Handler != nil {
			routes[i].Handler = teapot
		}
	}
	return s, keys, routes
}

// pathParam matches a path parameter of a ServeMux pattern.
var pathParam = regexp.MustCompile(`\{[a-z_]+\}`)

// routeTarget is a request target a route serves.
func routeTarget(rt Route) string {
	switch rt.Pattern {
	case streamPattern:
		return "/v1/s"
	case subscriptionPattern:
		return "/v1/*?subscription=s1"
	case subscriptionsPattern:
		return "/v1/*?subscriptions"
	}
	return pathParam.ReplaceAllString(rt.Pattern, "x1")
}

// TestRuleFollowsTheRoute: a request is checked against the rule of the
// route it matched, whatever the route's place in the table. The table
// is served in its order, reversed and rotated; in each, every route
// with a scope lets in a key of that scope alone and refuses (403) a key
// of another scope.
func TestRuleFollowsTheRoute(t *testing.T) {
	t.Parallel()
	s, keys, routes := tableRig(t)
	reversed := slices.Clone(routes)
	slices.Reverse(reversed)
	rotated := append(slices.Clone(routes[len(routes)/2:]), routes[:len(routes)/2]...)
	checked := 0
	for _, order := range [][]Route{routes, reversed, rotated} {
		s.router.Store(s.newRouter(slices.Clone(order)))
		for _, rt := range routes {
			sc := rt.Rule.Scope
			if sc == "" {
				continue
			}
			other := auth.ScopeStreamsRead
			if sc == other {
				other = auth.ScopeEndpointsRead
			}
			target := routeTarget(rt)
			w := do(s, rt.Method, target, nil, map[string]string{"Authorization": keys.bearer[sc]})
			if w.Code == http.StatusUnauthorized || w.Code == http.StatusForbidden {
				t.Errorf("%s %s (%s %s) with a %s key: %d %s", rt.Method, target, rt.Method, rt.Pattern, sc, w.Code, w.Body)
			}
			w = do(s, rt.Method, target, nil, map[string]string{"Authorization": keys.bearer[other]})
			if w.Code != http.StatusForbidden || (rt.Method != http.MethodHead && errorCode(t, w) != "FORBIDDEN") {
				t.Errorf("%s %s (%s %s) with a %s key: %d %s, want 403 FORBIDDEN", rt.Method, target, rt.Method, rt.Pattern, other, w.Code, w.Body)
			}
			checked++
		}
	}
	if checked < 3*15 {
		t.Fatalf("checked %d routes with a scope", checked)
	}
}

// TestEveryRouteDeclaresItsRule: every route of the table says who may
// call it, and the router refuses to serve a route that does not.
func TestEveryRouteDeclaresItsRule(t *testing.T) {
	t.Parallel()
	_, _, routes := tableRig(t)
	for _, rt := range routes {
		if !rt.Rule.Explicit() {
			t.Errorf("route %s %s declares no access rule", rt.Method, rt.Pattern)
		}
	}
}

// TestMountRefusesBadRoutes: a route without a rule, with an unknown
// scope, declared twice, or at a stream path is a programming error the
// router panics on.
func TestMountRefusesBadRoutes(t *testing.T) {
	t.Parallel()
	s := newTestServer(&fakeStore{t: t}, Config{})
	ok := http.NotFoundHandler()
	public := auth.Rule{Public: true}
	for name, routes := range map[string][]Route{
		"no rule":       {{Method: http.MethodGet, Pattern: HeraldPrefix + "v1/x", Rule: auth.Rule{}, Handler: ok}},
		"unknown scope": {{Method: http.MethodGet, Pattern: HeraldPrefix + "v1/x", Rule: auth.Rule{Scope: "streams:everything"}, Handler: ok}},
		"twice":         {{Method: http.MethodGet, Pattern: HeraldPrefix + "v1/x", Rule: public, Handler: ok}, {Method: http.MethodGet, Pattern: HeraldPrefix + "v1/x", Rule: public, Handler: ok}},
		"own twice":     {{Method: http.MethodGet, Pattern: HeraldPrefix + "healthz", Rule: public, Handler: ok}},
		"stream path":   {{Method: http.MethodGet, Pattern: "/v1/x", Rule: public, Handler: ok}},
		"no method":     {{Method: "", Pattern: "/streams/{id}", Rule: public, Handler: ok}},
		"lookalike":     {{Method: http.MethodGet, Pattern: "/_heraldx/y", Rule: public, Handler: ok}},
		"no handler":    {{Method: http.MethodGet, Pattern: HeraldPrefix + "v1/x", Rule: public, Handler: nil}},
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: Mount did not panic", name)
				}
			}()
			s.Mount(APIs{Keys: routes})
		}()
	}
}
