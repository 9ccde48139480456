package deliveryapi

import (
	"net/http"
	"slices"
	"testing"
	"testing/synctest"
)

// A PATCH that moves an endpoint to another origin drops the custom
// header values the same request does not set again, and says which;
// a move within the origin keeps them; a masked value sent back does not
// count as setting it again.
func TestAPIPatchToAnotherOriginDropsHeaders(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t, nil)
		var ep endpointJSON
		if code := r.call("POST", "/_herald/v1/endpoints",
			`{"url":"`+hookURL+`","headers":{"X-Api-Key":"k-secret","X-Tenant":"acme","X-Trace":"on"}}`, &ep); code != http.StatusCreated {
			t.Fatalf("create: %d", code)
		}
		stored := func() map[string]string {
			t.Helper()
			got, err := r.st.EndpointGet(t.Context(), ep.ID)
			if err != nil {
				t.Fatal(err)
			}
			return got.Headers
		}
		patch := func(body string) endpointJSON {
			t.Helper()
			var out endpointJSON
			if code := r.call("PATCH", "/_herald/v1/endpoints/"+ep.ID, body, &out); code != http.StatusOK {
				t.Fatalf("PATCH %s: %d", body, code)
			}
			return out
		}
		// Same origin, another path: kept.
		if out := patch(`{"url":"http://127.0.0.1:9/other"}`); len(out.DroppedHeaders) != 0 || len(stored()) != 3 {
			t.Fatalf("same-origin move dropped %v; stored %v", out.DroppedHeaders, stored())
		}
		// Another port: dropped, except what the request sets again.
		out := patch(`{"url":"http://127.0.0.1:10/hook","headers":{"x-tenant":"acme-2","X-Api-Key":"***","X-Trace":"on"}}`)
		if !slices.Equal(out.DroppedHeaders, []string{"X-Api-Key"}) {
			t.Fatalf("dropped %v, want [X-Api-Key]", out.DroppedHeaders)
		}
		if h := stored(); h["X-Api-Key"] != "" || h["X-Tenant"] != "acme-2" || h["X-Trace"] != "on" || len(h) != 2 {
			t.Fatalf("stored headers %v", h)
		}
		// Another host, headers not named: every value dropped.
		out = patch(`{"url":"http://localhost:10/hook"}`)
		if !slices.Equal(out.DroppedHeaders, []string{"X-Tenant", "X-Trace"}) || len(stored()) != 0 {
			t.Fatalf("dropped %v, stored %v", out.DroppedHeaders, stored())
		}
		// The answer never shows a value, and a GET has no dropped list.
		var got endpointJSON
		r.call("GET", "/_herald/v1/endpoints/"+ep.ID, "", &got)
		if got.DroppedHeaders != nil || len(got.Headers) != 0 {
			t.Fatalf("get %+v", got)
		}
	})
}

func TestSameOrigin(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		a, b string
		same bool
	}{
		{"https://a.example/x", "https://a.example:443/y?q", true},
		{"https://A.example/x", "https://a.EXAMPLE/x", true},
		{"http://a.example/x", "http://a.example:80/x", true},
		{"https://a.example/x", "http://a.example/x", false},
		{"https://a.example/x", "https://b.example/x", false},
		{"https://a.example/x", "https://a.example:8443/x", false},
		{"https://a.example/x", "https://a.example.evil.example/x", false},
		{"https://a.example/x", "://bad", false},
	} {
		if got := sameOrigin(tc.a, tc.b); got != tc.same {
			t.Errorf("sameOrigin(%q, %q) = %v, want %v", tc.a, tc.b, got, tc.same)
		}
	}
}
