package deliveryapi

import (
	"context"
	"net/http"

	"github.com/heraldstreams/herald/auth"
	"github.com/heraldstreams/herald/delivery"
	"github.com/heraldstreams/herald/delivery/dispatch"
	"github.com/heraldstreams/herald/glob"
	"github.com/heraldstreams/herald/internal/httpjson"
)

// Stream paths are a limit of the delivery API too. A credential limited
// to stream paths (a key made with paths) or to a tenant's stream
// namespace reaches through it only the streams within them:
//
//   - the streams patterns an endpoint is given (create, PATCH) must each
//     lie within the credential's reach (Principal.AllowsPattern); absent
//     streams mean "/**", which a path-limited credential may not give,
//     while a tenant's endpoint without streams receives its tenant's
//     events from any stream (the engine delivers it no other tenant's);
//   - a replay's stream must be within reach; a replay over the
//     endpoint's streams needs each of them within the credential's
//     paths;
//   - POST /v1/events appends only to a stream within reach; a tenant's
//     events go by default to its namespace's "events" stream.
//
// Anything wider is 403 FORBIDDEN, the access layer's code for a path
// outside a credential's reach.

// CodeForbidden: a stream or pattern lies outside the credential's
// stream paths or tenant namespace (the access layer's code).
const CodeForbidden delivery.Code = "FORBIDDEN"

// TenantEventsStream is the stream, in a tenant's namespace, where the
// events the tenant publishes without a stream go.
const TenantEventsStream = "events"

func errOutsidePaths(field string) error {
	return &httpjson.Error{Status: http.StatusForbidden, Code: string(CodeForbidden), Field: field, Message: "this credential is limited to stream paths (or its tenant's stream namespace) that do not include all of " + field}
}

// principalOf returns the request's principal.
func principalOf(ctx context.Context) (*auth.Principal, error) {
	p, ok := auth.FromContext(ctx)
	if !ok {
		return nil, errNoPrincipal
	}
	return p, nil
}

// publishStream returns the stream an event published by the request's
// credential goes to: the one given, which it must be allowed to write,
// or by default its tenant's events stream (platformDefault, the
// installation's, for the platform).
func publishStream(ctx context.Context, given, platformDefault string) (string, error) {
	p, err := principalOf(ctx)
	if err != nil {
		return "", err
	}
	stream := given
	if stream == "" {
		if p.Tenant == "" {
			stream = platformDefault
		} else if ns := p.Namespace(); ns != "" {
			stream = ns + TenantEventsStream
		}
	}
	if stream == "" || !p.AllowsPath(stream) {
		return "", errOutsidePaths("stream")
	}
	return stream, nil
}

// patternsWithinReach refuses stream patterns an endpoint is given that
// reach beyond the request's credential's paths or tenant namespace. nil
// patterns are the default, "/**": refused to a path-limited credential,
// allowed to a tenant's (see the top of this file).
func patternsWithinReach(ctx context.Context, field string, patterns []string) error {
	p, err := principalOf(ctx)
	if err != nil {
		return err
	}
	if patterns == nil {
		if len(p.Paths) > 0 {
			return errOutsidePaths(field)
		}
		return nil
	}
	for _, raw := range patterns {
		if !p.AllowsPattern(raw) {
			return errOutsidePaths(field)
		}
	}
	return nil
}

// patternsWithinPaths refuses stream patterns wider than the request's
// credential's stream paths; nil patterns are the default, "/**".
func patternsWithinPaths(ctx context.Context, field string, patterns []string) error {
	p, err := principalOf(ctx)
	if err != nil {
		return err
	}
	if len(p.Paths) == 0 {
		return nil
	}
	if patterns == nil {
		patterns = []string{delivery.DefaultStreamPattern}
	}
	for _, raw := range patterns {
		if !pathsCover(p.Paths, raw) {
			return errOutsidePaths(field)
		}
	}
	return nil
}

// pathsCover reports whether one of a credential's path patterns covers
// pattern (every stream it matches); false for one that does not compile.
func pathsCover(paths []string, pattern string) bool {
	q, err := glob.Compile(pattern)
	if err != nil {
		return false
	}
	for _, raw := range paths {
		if g, err := glob.Compile(raw); err == nil && g.Covers(q) {
			return true
		}
	}
	return false
}

// replayWithinPaths refuses a replay that would read streams beyond the
// request's credential's paths: its stream, or without one each pattern
// of the endpoint's streams. A replay by status reads no stream.
func (a *API) replayWithinPaths(ctx context.Context, p *dispatch.ReplayParams) error {
	if p.Stream != "" {
		return streamWithinReach(ctx, p.Stream)
	}
	if p.Status != "" && p.Since.IsZero() && !p.HasFrom {
		return nil
	}
	ep, err := a.visibleEndpoint(ctx, p.EndpointID)
	if err != nil {
		return err
	}
	return patternsWithinPaths(ctx, "streams", ep.Streams)
}

// streamWithinReach refuses a stream outside the request's credential's
// reach (Principal.AllowsPath).
func streamWithinReach(ctx context.Context, stream string) error {
	p, err := principalOf(ctx)
	if err != nil {
		return err
	}
	if !p.AllowsPath(stream) {
		return errOutsidePaths("stream")
	}
	return nil
}

// streamTenant returns the tenant of an event published to stream with
// tenant, under the engine's tenant stream prefix: the namespace's tenant for a stream in one (naming another there
// is 403 TENANT_FORBIDDEN, even for a platform credential), else tenant.
func streamTenant(prefix, stream, tenant string) (string, error) {
	owner, ok := auth.StreamOwner(prefix, stream)
	switch {
	case !ok:
		return tenant, nil
	case tenant == "" || tenant == owner:
		return owner, nil
	}
	return "", &httpjson.Error{Status: http.StatusForbidden, Code: string(CodeTenantForbidden), Field: "tenant", Message: "the stream lies in the stream namespace of another tenant than the one named"}
}
