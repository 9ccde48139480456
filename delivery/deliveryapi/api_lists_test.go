package deliveryapi

import (
	"net/http"
	"slices"
	"testing"
	"testing/synctest"

	"github.com/heraldstreams/herald/delivery"
	"github.com/heraldstreams/herald/delivery/dispatch"
)

// GET /endpoints?status= lists the endpoints of one status (active,
// paused, pending, disabled), pages within it, and refuses another
// status.
func TestAPIListEndpointsByStatus(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t, func(c *dispatch.EngineConfig) { c.BreakerThreshold = 1 })
		r.rc.SetRespond(func(_ int, ev delivery.Event) (int, map[string]string) {
			if ev.Type == "fail.now" {
				return http.StatusInternalServerError, nil
			}
			return http.StatusOK, nil
		})
		create := func(body string) string {
			t.Helper()
			var ep endpointJSON
			if code := r.call("POST", "/_herald/v1/endpoints", body, &ep); code != http.StatusCreated {
				t.Fatalf("create %s: %d", body, code)
			}
			return ep.ID
		}
		active1 := create(`{"url":"` + hookURL + `","event_types":["ok.*"]}`)
		active2 := create(`{"url":"` + hookURL + `","event_types":["ok.*"]}`)
		paused := create(`{"url":"` + hookURL + `","active":false}`)
		pending := create(`{"url":"` + hookURL + `","verify":true}`) // the receiver does not echo the challenge
		disabled := create(`{"url":"` + hookURL + `","event_types":["fail.*"]}`)
		r.publish("fail.now", "/s", `{}`)
		synctest.Wait()

		list := func(query string) []string {
			t.Helper()
			var out listEndpointsJSON
			if code := r.call("GET", "/_herald/v1/endpoints"+query, "", &out); code != http.StatusOK {
				t.Fatalf("list %s: %d", query, code)
			}
			var ids []string
			for _, ep := range out.Data {
				ids = append(ids, ep.ID)
			}
			return ids
		}
		for status, want := range map[string][]string{
			"active": slices.Sorted(slices.Values([]string{active1, active2})), "paused": {paused}, "pending": {pending}, "disabled": {disabled},
		} {
			got := list("?status=" + status)
			if !slices.Equal(got, want) {
				t.Errorf("status %s: %v, want %v", status, got, want)
			}
		}
		first := list("?status=active&limit=1")
		if len(first) != 1 {
			t.Fatalf("page 1: %v", first)
		}
		if rest := list("?status=active&limit=1&cursor=" + first[0]); len(rest) != 1 || rest[0] == first[0] {
			t.Errorf("page 2: %v after %v", rest, first)
		}
		if all := list(""); len(all) != 5 {
			t.Errorf("unfiltered: %v", all)
		}
		var e apiErr
		if code := r.call("GET", "/_herald/v1/endpoints?status=gone", "", &e); code != http.StatusBadRequest || e.Error.Code != "INVALID_PARAMETER" || e.Error.Field != "status" {
			t.Errorf("bad status: %d %+v", code, e.Error)
		}
	})
}

// GET /endpoints/{id}/deliveries?count=true answers the total under the
// same filters beside data and next_cursor, the same on every page;
// without count there is no total.
func TestAPIDeliveriesCount(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t, nil)
		r.rc.SetRespond(func(_ int, ev delivery.Event) (int, map[string]string) {
			if ev.Type == "order.refunded" {
				return http.StatusGone, nil // final: exhausted at once
			}
			return http.StatusOK, nil
		})
		ep := r.endpoint(&dispatch.CreateEndpointParams{Config: delivery.EndpointConfig{EventTypes: []string{"order.*"}}, Active: true})
		for range 3 {
			r.publish("order.paid", "/shop", `{}`)
		}
		r.publish("order.refunded", "/shop", `{}`)
		r.publish("invoice.sent", "/shop", `{}`) // not matched
		synctest.Wait()

		base := "/_herald/v1/endpoints/" + ep.ID + "/deliveries"
		for _, c := range []struct {
			query string
			total int
			page  int
		}{
			{"?count=true", 4, 4},
			{"?count=true&limit=1", 4, 1},
			{"?count=true&status=exhausted", 1, 1},
			{"?count=true&status=delivered&limit=2", 3, 2},
			{"?count=true&event_type=order.paid&until=2000-01-01T00:00:00Z", 0, 0},
		} {
			var out listDeliveriesJSON
			if code := r.call("GET", base+c.query, "", &out); code != http.StatusOK || out.Total == nil || *out.Total != c.total || len(out.Data) != c.page {
				t.Errorf("%s: %d, total %v, %d on the page; want %d and %d", c.query, code, out.Total, len(out.Data), c.total, c.page)
				continue
			}
			if out.NextCursor != nil {
				var next listDeliveriesJSON
				r.call("GET", base+c.query+"&cursor="+*out.NextCursor, "", &next)
				if next.Total == nil || *next.Total != c.total {
					t.Errorf("%s, next page: total %v, want %d", c.query, next.Total, c.total)
				}
			}
		}
		var plain map[string]any
		r.call("GET", base+"?count=false", "", &plain)
		if _, ok := plain["total"]; ok {
			t.Errorf("a total without count=true: %v", plain)
		}
		var e apiErr
		if code := r.call("GET", base+"?count=yes", "", &e); code != http.StatusBadRequest || e.Error.Code != "INVALID_PARAMETER" || e.Error.Field != "count" {
			t.Errorf("count=yes: %d %+v", code, e.Error)
		}
	})
}
