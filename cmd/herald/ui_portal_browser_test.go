//go:build browser

package main

import (
	"net/http"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// brandLogo is a one-pixel SVG as a data: URL.
const brandLogo = "data:image/svg+xml;base64,PHN2ZyB4bWxucz0iaHR0cDovL3d3dy53My5vcmcvMjAwMC9zdmciIHdpZHRoPSIxIiBoZWlnaHQ9IjEiLz4="

// TestDashboardBrandedPortal drives the tenant portal of a branded
// installation in Chromium, opened at a portal token's URL: the header
// shows the platform's title and logo in its accent colour, and the
// tenant manages its own endpoint (an edit, a test event, a secret
// rotation with its overlap) and reads its own event log only.
func TestDashboardBrandedPortal(t *testing.T) {
	t.Parallel()
	r := newUIRig(t, "--ui-title", "Acme Webhooks", "--ui-logo-url", brandLogo, "--ui-accent-color", "#aa3300")
	mine := r.tenantEndpoint(t, matrixTenant, "/mine")
	r.tenantEndpoint(t, otherTenant, "/theirs")
	r.publishID(t, "order-a1", "order.created", matrixTenant, `{"n":1}`)
	r.publishID(t, "order-b1", "order.created", otherTenant, `{"n":2}`)
	r.waitDeliveries(t, mine, 1)

	var portal struct{ URL string }
	r.admin(t, "POST", "/_herald/v1/portal-tokens", `{"tenant":"`+matrixTenant+`","ttl":"10m"}`, http.StatusCreated, &portal)
	r.do(t, "opening the portal's URL", chromedp.Navigate(portal.URL), chromedp.WaitVisible(chromedp.CSS(`#key-offer-accept`)))
	r.waitText(t, "#brand-title", "Acme Webhooks")
	r.do(t, "signing in from the link", chromedp.Click(chromedp.CSS(`#key-offer-accept`)), chromedp.WaitVisible(chromedp.CSS(`#endpoint-list table`)))
	if got := eval[string](t, r, `document.getElementById('brand-logo').getAttribute('src')`); got != brandLogo {
		t.Errorf("the logo is %q", got)
	}
	if !eval[bool](t, r, `document.getElementById('brand-logo').complete && document.getElementById('brand-logo').naturalWidth === 1`) {
		t.Error("the logo is not shown (the CSP must allow it)")
	}
	if title := eval[string](t, r, `document.title`); title != "Endpoints · Acme Webhooks" {
		t.Errorf("the window's title is %q", title)
	}
	if c := eval[string](t, r, `getComputedStyle(document.querySelector('nav a[aria-current=page]')).backgroundColor`); c != "rgb(170, 51, 0)" {
		t.Errorf("the current view's colour is %s, want the accent", c)
	}
	r.shotAtBothWidths(t, "60-branded-portal")

	// Its endpoint: edited, a test event, the secret rotated with the
	// overlap shown.
	r.editEndpoint(t, mine, "#saved", fill(`#ep-name`, "my orders"))
	r.visit(t, "#/endpoints/"+mine, "#test-form")
	r.do(t, "sending a test event", chromedp.Click(chromedp.CSS(`#test`)))
	r.waitText(t, "#test-result", "accepted the test event (herald.test)")
	r.do(t, "rotating the secret",
		chromedp.Click(chromedp.CSS(`#rotate`)), chromedp.WaitVisible(chromedp.CSS(`#confirm-yes`)), chromedp.Click(chromedp.CSS(`#confirm-yes`)),
		chromedp.WaitVisible(chromedp.CSS(`#secret`)))
	r.waitText(t, "#action-result", "keeps signing beside it until")
	r.shotAtBothWidths(t, "61-branded-portal-endpoint")

	// Its event log: its own event only.
	r.visit(t, "#/events", "#event-list table")
	r.waitText(t, "#event-list", "order-a1")
	if strings.Contains(r.pageText(t), "order-b1") {
		t.Error("the portal's event log shows tenant-b's event")
	}
	r.shotAtBothWidths(t, "62-branded-portal-events")
	r.noExceptions(t)
}
