package wake

import (
	"context"
	"errors"

	"github.com/heraldstreams/herald/store"
)

// Caller is who asks the subscription API: the owner it acts for and the
// streams it may reach. A subscription belongs to the tenant of the
// credential that created it ("" for the platform). A tenant's caller
// sees and changes only its tenant's subscriptions and their consumers,
// and only those within its stream paths; anything else answers exactly
// as if it did not exist. The platform's caller sees every owner's.
type Caller struct {
	// Tenant is the caller's tenant; "" for the platform.
	Tenant string
	// AllowsPattern reports whether every stream a canonical pattern can
	// match is one the caller may reach (its stream paths and its
	// tenant's namespace); nil allows every pattern.
	AllowsPattern func(pattern string) bool
	// AllowsPath reports whether the caller may reach one stream path;
	// nil allows every path.
	AllowsPath func(path string) bool
}

// Platform is the caller without limits: an operator, the CLI with an
// admin key, Herald itself.
var Platform = Caller{}

// ErrPatternForbidden: a caller creates a subscription whose pattern can
// match streams outside its stream paths or its tenant's namespace
// (403 FORBIDDEN, the code of a credential outside its paths).
var ErrPatternForbidden = errors.New("subscription: the pattern reaches streams outside the credential's stream paths")

// sees reports whether the caller may see subscription s: it is the
// caller's tenant's (any owner's, for the platform) and its pattern lies
// within the caller's stream paths.
func (c *Caller) sees(s *store.Subscription) bool {
	if c.Tenant != "" && s.Tenant != c.Tenant {
		return false
	}
	return c.allowsPattern(s.Pattern)
}

func (c *Caller) allowsPattern(pattern string) bool {
	return c.AllowsPattern == nil || c.AllowsPattern(pattern)
}

// seesStreams reports whether every stream of a consumer is one the
// caller may reach: a consumer names its streams, so one that subscribed
// beyond the caller's paths is not shown to it.
func (c *Caller) seesStreams(sc *store.Consumer) bool {
	if c.AllowsPath == nil {
		return true
	}
	if !c.AllowsPath(sc.PrimaryStream) {
		return false
	}
	for _, s := range sc.Streams {
		if !c.AllowsPath(s.Path) {
			return false
		}
	}
	return true
}

// reach returns the streams a consumer of subscription sub may subscribe
// to (Callback.Reach): every stream for the platform's subscription, its
// tenant's namespace for a tenant's, none when the subscription is gone
// (its consumers go with it).
func (e *Engine) reach(ctx context.Context, sub string) (func(string) bool, error) {
	s, err := e.subscription(ctx, sub)
	if errors.Is(err, store.ErrSubscriptionNotFound) {
		return func(string) bool { return false }, nil
	}
	if err != nil {
		return nil, err
	}
	if s.Tenant == "" {
		return nil, nil
	}
	return func(path string) bool {
		if e.streamOwner == nil {
			return false
		}
		t, ok := e.streamOwner(path)
		return ok && t == s.Tenant
	}, nil
}
