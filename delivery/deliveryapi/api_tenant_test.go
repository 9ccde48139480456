package deliveryapi

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/heraldstreams/herald/auth"
	"github.com/heraldstreams/herald/delivery"
	"github.com/heraldstreams/herald/delivery/dispatch"
)

// bareMounter mounts routes without any access check, so no principal is
// in the request context.
type bareMounter struct{ mux *http.ServeMux }

func (m bareMounter) Handle(pattern string, _ auth.Rule, h http.Handler) { m.mux.Handle(pattern, h) }

// A route served without the check that records the principal fails
// closed: nothing is shown or changed, whatever the tenant.
func TestAPIWithoutPrincipalFailsClosed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t, nil)
		ep := r.endpoint(&dispatch.CreateEndpointParams{Config: delivery.EndpointConfig{Tenant: "acme"}, Active: true})
		mux := http.NewServeMux()
		NewAPI(r.e).Mount(bareMounter{mux})
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
