package deliveryapi

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/heraldstreams/herald/delivery"
	"github.com/heraldstreams/herald/delivery/dispatch"
	"github.com/heraldstreams/herald/internal/routetest"
)

// A route served without the check that records the principal fails
// closed: nothing is shown or changed, whatever the tenant.
func TestAPIWithoutPrincipalFailsClosed(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t, nil)
		ep := r.endpoint(&dispatch.CreateEndpointParams{Config: delivery.EndpointConfig{Tenant: "acme"}, Active: true})
		// Served bare: no access check, so no principal in the context.
		mux := routetest.Handler(nil, NewAPI(r.e).Routes())
		for _, c := range []struct{ method, path, body string }{
			{"GET", "/_herald/v1/endpoints", ""},
			{"GET", "/_herald/v1/endpoints/" + ep.ID, ""},
			{"DELETE", "/_herald/v1/endpoints/" + ep.ID, ""},
			{"POST", "/_herald/v1/endpoints", `{"url":"` + hookURL + `"}`},
			{"POST", "/_herald/v1/events", `{"type":"a.b"}`},
		} {
			rec := httptest.NewRecorder()
			mux.ServeHTTP(rec, httptest.NewRequest(c.method, c.path, strings.NewReader(c.body)))
			if rec.Code != http.StatusInternalServerError || !strings.Contains(rec.Body.String(), `"INTERNAL"`) {
				t.Errorf("%s %s: %d %s", c.method, c.path, rec.Code, rec.Body)
			}
		}
		if _, err := r.st.EndpointGet(t.Context(), ep.ID); err != nil {
			t.Fatalf("the endpoint after the refused delete: %v", err)
		}
	})
}
