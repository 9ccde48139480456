package deliveryapi

import (
	"context"
	"errors"
	"net/http"

	"github.com/heraldstreams/herald/auth"
	"github.com/heraldstreams/herald/delivery"
	"github.com/heraldstreams/herald/internal/httpjson"
	"github.com/heraldstreams/herald/store"
)

// Tenants are a boundary of the delivery API. A credential of a tenant
// sees and changes only that tenant's endpoints, their deliveries and
// attempts, and publishes only that tenant's events:
//
//   - another tenant's endpoint, delivery or replay job answers 404 with the code of a
//     missing one, so its existence is not shown;
//   - listing endpoints is limited to the credential's tenant whatever
//     ?tenant says;
//   - an endpoint it creates, and an event it publishes, carry its
//     tenant; a body that names another tenant is 403 tenant_forbidden (an
//     empty or absent tenant means its own);
//   - PATCH cannot move an endpoint to another tenant (403
//     tenant_forbidden).
//
// A credential without a tenant (the admin key, a key made without one,
// every request while access control is off) sees every tenant.

// CodeTenantForbidden: the body names a tenant the credential is not of.
const CodeTenantForbidden delivery.Code = "TENANT_FORBIDDEN"

// owner says what the {id} of a route names, so that Mount checks the
// caller may see it before the handler runs.
type owner int

const (
	ownsNothing owner = iota
	ownsEndpoint
	ownsDelivery
	ownsReplay
	ownsEvent
)

// errNoPrincipal: a route was served without the access check that
// records the principal (a mounting mistake, never the caller's).
var errNoPrincipal = errors.New("delivery: no principal in the request context")

// tenantOf returns the tenant the request's credential is limited to; ""
// for one that sees every tenant.
func tenantOf(ctx context.Context) (string, error) {
	p, ok := auth.FromContext(ctx)
	if !ok {
		return "", errNoPrincipal
	}
	return p.Tenant, nil
}

// stampTenant returns the tenant a body's tenant field resolves to for
// the request's credential: as given for a credential that sees every
// tenant; the credential's own when empty or its own, else
// CodeTenantForbidden.
func stampTenant(ctx context.Context, given string) (string, error) {
	tenant, err := tenantOf(ctx)
	if err != nil {
		return "", err
	}
	switch {
	case tenant == "":
		return given, nil
	case given == "" || given == tenant:
		return tenant, nil
	}
	return "", &httpjson.Error{Status: http.StatusForbidden, Code: string(CodeTenantForbidden), Field: "tenant", Message: "this credential is limited to its own tenant and cannot name another"}
}

// visibleEndpoint returns the endpoint id when the request's credential
// may see it; another tenant's is store.ErrEndpointNotFound, as a missing
// one.
func (a *API) visibleEndpoint(ctx context.Context, id string) (*store.Endpoint, error) {
	tenant, err := tenantOf(ctx)
	if err != nil {
		return nil, err
	}
	ep, err := a.e.Store().EndpointGet(ctx, id)
	if err != nil {
		return nil, err
	}
	if tenant != "" && ep.Tenant != tenant {
		return nil, store.ErrEndpointNotFound
	}
	return ep, nil
}

// visibleDelivery returns the delivery id when the request's credential
// may see its endpoint; else store.ErrDeliveryNotFound, as a missing one.
func (a *API) visibleDelivery(ctx context.Context, id string) (*store.Delivery, error) {
	d, err := a.e.Store().DeliveryGet(ctx, id)
	if err != nil {
		return nil, err
	}
	if _, err := a.visibleEndpoint(ctx, d.EndpointID); errors.Is(err, store.ErrEndpointNotFound) {
		return nil, store.ErrDeliveryNotFound
	} else if err != nil {
		return nil, err
	}
	return d, nil
}

// visibleReplay reports store.ErrReplayJobNotFound, as for a missing
// one, when the request's credential may not see the replay job id: a job
// is its endpoint's tenant's.
func (a *API) visibleReplay(ctx context.Context, id string) error {
	tenant, err := tenantOf(ctx)
	if err != nil {
		return err
	}
	job, err := a.e.Store().ReplayJobGet(ctx, id)
	if err != nil {
		return err
	}
	if tenant != "" && job.Tenant != tenant {
		return store.ErrReplayJobNotFound
	}
	return nil
}

// owned returns h behind the check that the resource its path's {id}
// names is visible to the caller (a 404 when it is not).
func (a *API) owned(o owner, h http.HandlerFunc) http.HandlerFunc {
	if o == ownsNothing {
		return h
	}
	return func(w http.ResponseWriter, r *http.Request) {
		ctx, id := r.Context(), pathID(r)
		var err error
		switch o {
		case ownsEndpoint:
			_, err = a.visibleEndpoint(ctx, id)
		case ownsDelivery:
			_, err = a.visibleDelivery(ctx, id)
		case ownsEvent:
			var key store.EventKey
			if key, err = eventKeyOf(r); err == nil {
				_, err = a.visibleEvent(ctx, key)
			}
		default:
			err = a.visibleReplay(ctx, id)
		}
		if err != nil {
			a.fail(w, r, err)
			return
		}
		h(w, r)
	}
}

// brokerAllowed refuses a broker endpoint type to a credential of a
// tenant unless the installation lets tenants have them
// (EngineConfig.TenantBrokers): a broker's addresses and credentials are
// the installation's business by default.
func (a *API) brokerAllowed(ctx context.Context, typ string) error {
	if !delivery.IsBroker(typ) || a.e.Config().TenantBrokers {
		return nil
	}
	tenant, err := tenantOf(ctx)
	if err != nil || tenant == "" {
		return err
	}
	return &httpjson.Error{Status: http.StatusForbidden, Code: string(CodeTenantForbidden), Field: "type",
		Message: "this installation does not let a credential of a tenant configure " + typ + " endpoints"}
}
