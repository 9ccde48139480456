//go:build browser

package main

import (
	"net/http"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/heraldstreams/herald/auth"
)

// publishID publishes an event with its own id for tenant.
func (r *uiRig) publishID(t *testing.T, id, typ, tenant, data string) {
	t.Helper()
	r.admin(t, "POST", "/_herald/v1/events", `{"id":"`+id+`","type":"`+typ+`","tenant":"`+tenant+`","data":`+data+`}`, http.StatusAccepted, nil)
}

// TestDashboardEventLog drives the event log in Chromium: an operator
// sees every tenant's events newest first, finds one by id, filters by
// type, tenant and outcome, opens a failed event's page (its payload,
// the endpoint it matched, the delivery's attempts) and retries it from
// there until it is delivered; a tenant's portal lists only its own
// events, and another tenant's event, opened by id, is not found.
func TestDashboardEventLog(t *testing.T) {
	t.Parallel()
	r := newUIRig(t)
	// tenant-a's receiver fails until the retry.
	mine := r.tenantEndpoint(t, matrixTenant, "/breaker/mine")
	r.tenantEndpoint(t, otherTenant, "/theirs")
	r.breakerDown.Store(true)
	r.publishID(t, "order-a1", "order.created", matrixTenant, `{"secret_of":"tenant-a"}`)
	r.publishID(t, "order-b1", "order.created", otherTenant, `{"secret_of":"tenant-b"}`)
	r.publishID(t, "user-p1", "user.created", "", `{"secret_of":"platform"}`)

	r.do(t, "opening the dashboard", chromedp.Navigate(r.ui), chromedp.WaitVisible(chromedp.CSS(`#signin`)))
	r.signIn(t, testAdminKey)
	r.visit(t, "#/events", "#event-list table")
	r.waitText(t, "#event-list", "order-a1")
	r.waitText(t, "#event-list", "order-b1")
	if first := eval[string](t, r, `document.querySelector('#event-list tbody tr a').textContent`); first != "user-p1" {
		t.Errorf("the newest event shown first is %q, want user-p1", first)
	}
	r.shotAtBothWidths(t, "50-event-log")

	// Filters and the search by id, through the form.
	r.do(t, "filtering by type and tenant",
		fill(`#events-type`, "order.created"), fill(`#events-tenant`, otherTenant),
		chromedp.Click(chromedp.CSS(`#event-filter button[type=submit]`)))
	// The unfiltered list showed order-b1 already: wait for the filtered
	// one, which shows it alone.
	r.waitRows(t, "#event-list", 1, "order-b1")
	r.until(t, "#/events?outcome=failed", "#event-list", "order-a1")
	if n := r.rows(t, "#event-list"); n != 1 {
		t.Errorf("the failed outcome shows %d events, want 1", n)
	}
	r.visit(t, "#/events?id=order-a1&tenant="+matrixTenant, "#event-list table")
	if n := r.rows(t, "#event-list"); n != 1 {
		t.Errorf("the search by id shows %d events", n)
	}
	r.visit(t, "#/events?outcome=none&tenant=-", "#event-list table")
	r.waitText(t, "#event-list", "user-p1")

	// One event: payload, the endpoint it matched, the failed attempt;
	// a retry from there delivers it.
	r.visit(t, "#/events/order-a1?tenant="+matrixTenant, "#event-deliveries")
	r.waitText(t, "#event-payload", `"secret_of": "tenant-a"`)
	r.waitText(t, "#event-deliveries", mine)
	r.waitText(t, "#event-deliveries", "HTTP 500")
	r.waitText(t, "#event-outcome", "failed")
	r.shotAtBothWidths(t, "51-event-failed")
	r.breakerDown.Store(false)
	r.do(t, "retrying the delivery", chromedp.Click(chromedp.CSS(`#event-deliveries button.retry`)))
	r.until(t, "#/events/order-a1?tenant="+matrixTenant, "#event-outcome", "delivered")
	r.shotAtBothWidths(t, "52-event-retried")

	// The portal of tenant-a: its events only; tenant-b's, by id, is not
	// found.
	portal := r.key(t, auth.PortalScopes, matrixTenant)
	r.do(t, "signing out", chromedp.Evaluate[chromedp.Void](`sessionStorage.clear()`))
	r.signIn(t, portal)
	r.visit(t, "#/events", "#event-list table")
	r.waitText(t, "#event-list", "order-a1")
	if eval[float64](t, r, `document.querySelectorAll('#events-tenant').length`) != 0 {
		t.Error("the portal's event log offers a tenant filter")
	}
	page := r.pageText(t)
	for _, s := range []string{"order-b1", "user-p1", "tenant-b"} {
		if strings.Contains(page, s) {
			t.Errorf("the portal's event log shows %q", s)
		}
	}
	r.shotAtBothWidths(t, "53-portal-event-log")
	r.visit(t, "#/events/order-a1", "#event-payload")
	r.waitText(t, "#event-payload", "tenant-a")
	r.visit(t, "#/events/order-b1", "main .error")
	r.waitText(t, "main .error", "does not exist")
	r.visit(t, "#/events/order-b1?tenant="+otherTenant, "main .error")
	if strings.Contains(r.pageText(t), `"secret_of": "tenant-b"`) {
		t.Error("the portal shows tenant-b's event")
	}
	r.visit(t, "#/events?id=order-b1", "#event-list")
	if strings.Contains(r.pageText(t), "order-b1</a>") || r.rows(t, "#event-list") != 0 {
		t.Error("the portal finds tenant-b's event by id")
	}
	r.noExceptions(t)
}
