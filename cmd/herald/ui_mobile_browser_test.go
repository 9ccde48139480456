//go:build browser

package main

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/heraldstreams/herald/auth"
)

// phoneWidth is the width of a phone's screen, in CSS pixels.
const phoneWidth = 390

// fitsPhone checks the view on screen at phone width: nothing wider than
// the screen; every table stacked as "label: value" rows, each cell
// labelled with its column's header; every id on one line, cut with an
// ellipsis within the screen, beside its copy button; every form one
// field a row.
func (r *uiRig) fitsPhone(t *testing.T, view string) {
	t.Helper()
	if w := eval[float64](t, r, `document.documentElement.scrollWidth`); w > phoneWidth {
		t.Errorf("%s: at %d px the page is %v px wide", view, phoneWidth, w)
	}
	problems := eval[[]any](t, r, `(() => {
		const out = [];
		const width = window.innerWidth;
		for (const table of document.querySelectorAll('main table')) {
			const heads = [...table.querySelectorAll('thead th')].map(th => th.textContent);
			if (table.querySelector('thead').getBoundingClientRect().height > 1) out.push('a table shows its header row');
			for (const tr of table.querySelectorAll('tbody tr')) {
				[...tr.cells].forEach((td, i) => {
					if (getComputedStyle(td).display !== 'block') out.push('a cell is not stacked: ' + td.textContent);
					const label = getComputedStyle(td, '::before').content;
					if (heads[i] && label !== JSON.stringify(heads[i])) out.push('cell ' + i + ' is labelled ' + label + ', want ' + heads[i]);
				});
			}
		}
		for (const id of document.querySelectorAll('main .idbox .id')) {
			const s = getComputedStyle(id);
			const box = id.getBoundingClientRect();
			if (s.textOverflow !== 'ellipsis' || s.whiteSpace !== 'nowrap') out.push('an id wraps: ' + id.textContent);
			if (box.right > width) out.push('an id runs off the screen: ' + id.textContent);
			const copy = id.parentElement.querySelector('button.copy');
			if (!copy || copy.getBoundingClientRect().right > width) out.push('an id has no copy button on the screen: ' + id.textContent);
			if (id.title !== id.textContent) out.push('a cut id does not carry its whole value: ' + id.textContent);
		}
		for (const form of document.querySelectorAll('main form')) {
			const tops = [...form.querySelectorAll('.field')].filter(f => f.getClientRects().length && !f.closest('[hidden]'))
				.map(f => Math.round(f.getBoundingClientRect().top));
			if (new Set(tops).size !== tops.length) out.push('form ' + (form.id || '') + ' has two fields on one row');
		}
		return out;
	})()`)
	for _, p := range problems {
		t.Errorf("%s at %d px: %v", view, phoneWidth, p)
	}
}

// bothWidths opens route (waiting for sel) on a desktop and on a phone,
// saving a screenshot of each as name-1280 and name-390, and checks that
// the phone's fits.
func (r *uiRig) bothWidths(t *testing.T, route, sel, name string) {
	t.Helper()
	r.do(t, "desktop width", chromedp.EmulateViewport(1280, 800))
	r.visit(t, route, sel)
	r.screenshot(t, name+"-1280")
	r.do(t, "phone width", chromedp.EmulateViewport(phoneWidth, 844), chromedp.WaitVisible(chromedp.CSS(sel)))
	r.fitsPhone(t, route)
	r.screenshot(t, fmt.Sprintf("%s-%d", name, phoneWidth))
}

// TestDashboardOnAPhone opens every view, the operator's and the tenant
// portal's, at 1280 and 390 px wide: at 390 px nothing scrolls sideways,
// tables are stacked rows of "label: value", ids are cut with an
// ellipsis beside a copy button and forms are one column. Screenshots of
// each view at both widths are saved where the rig says.
func TestDashboardOnAPhone(t *testing.T) {
	t.Parallel()
	r := newUIRig(t)

	// Something in every view, with long ids and values.
	var ep struct{ ID string }
	r.admin(t, "POST", "/_herald/v1/endpoints", `{"url":"`+r.receiver.URL+`/phone/a-rather-long-path/that/would/overflow/a-small-screen","tenant":"`+matrixTenant+`","event_types":["phone.*"],"description":"the endpoint of the phone test"}`, http.StatusCreated, &ep)
	r.admin(t, "POST", "/_herald/v1/event-types", `{"name":"phone.order.created.with.a.long.name","description":"An order was made.","schema":{"type":"object","required":["order_id"],"properties":{"order_id":{"type":"string","description":"the order's id, as the shop names it"}}}}`, http.StatusCreated, nil)
	r.publish(t, "phone.order.created.with.a.long.name", matrixTenant, 1)
	r.waitDeliveries(t, ep.ID, 1)
	r.admin(t, "PUT", "/phone/streams/a-stream-with-a-long-name-for-a-small-screen", `[]`, http.StatusCreated, nil)
	r.admin(t, "POST", "/phone/streams/a-stream-with-a-long-name-for-a-small-screen", `{"n":1}`, http.StatusNoContent, nil)
	r.admin(t, "PUT", "/phone/**?subscription=phone-subscription-with-a-long-id", `{"webhook":"`+r.receiver.URL+`/hang/phone","description":"wakes the phone test"}`, http.StatusCreated, nil)
	r.admin(t, "PUT", "/phone/streams/woken", `[]`, http.StatusCreated, nil)
	r.key(t, []auth.Scope{auth.ScopeEndpointsRead, auth.ScopeDeliveriesRead}, matrixTenant)

	r.signIn(t, testAdminKey)
	r.until(t, "#/subscriptions/phone-subscription-with-a-long-id", "#consumer-list", "woken")
	var dlv struct{ Data []struct{ ID string } }
	r.admin(t, "GET", "/_herald/v1/endpoints/"+ep.ID+"/deliveries", "", http.StatusOK, &dlv)
	for _, v := range []struct{ route, sel, name string }{
		{"#/overview", "#charts", "phone-01-overview"},
		{"#/streams", "#stream-list table", "phone-02-streams"},
		{"#/subscriptions", "#subscription-list table", "phone-03-subscriptions"},
		{"#/subscriptions/phone-subscription-with-a-long-id", "#consumer-list table", "phone-04-consumers"},
		{"#/endpoints", "#endpoint-list table", "phone-05-endpoints"},
		{"#/endpoints/" + ep.ID, "#health", "phone-06-endpoint"},
		{"#/deliveries?endpoint=" + ep.ID, "#delivery-list table", "phone-07-deliveries"},
		{"#/deliveries/" + dlv.Data[0].ID, "#payload", "phone-08-delivery"},
		{"#/event-types", "#event-type-list table", "phone-09-event-types"},
		{"#/event-types/phone.order.created.with.a.long.name", "#edit-event-type", "phone-10-event-type"},
		{"#/keys", "#key-list table", "phone-11-keys"},
	} {
		r.bothWidths(t, v.route, v.sel, v.name)
	}
	// A consumer's detail, opened on the phone.
	r.consumerDetail(t, "phone-subscription-with-a-long-id", "phone-subscription-with-a-long-id:%2Fphone%2Fstreams%2Fwoken")
	r.fitsPhone(t, "a consumer's detail")
	r.screenshot(t, "phone-04b-consumer-390")

	// The tenant portal, opened from a portal token, on both widths.
	var portal struct{ URL string }
	r.admin(t, "POST", "/_herald/v1/portal-tokens", `{"tenant":"`+matrixTenant+`"}`, http.StatusCreated, &portal)
	r.do(t, "opening the portal", chromedp.Evaluate[chromedp.Void](`sessionStorage.clear()`), chromedp.Navigate(portal.URL),
		chromedp.WaitVisible(chromedp.CSS(`#key-offer-accept`)))
	r.fitsPhone(t, "the portal's sign-in question")
	r.do(t, "signing in to the portal", chromedp.Click(chromedp.CSS(`#key-offer-accept`)), chromedp.WaitVisible(chromedp.CSS(`#nav a`)))
	for _, v := range []struct{ route, sel, name string }{
		{"#/endpoints", "#endpoint-list table", "phone-12-portal-endpoints"},
		{"#/endpoints/" + ep.ID, "#health", "phone-13-portal-endpoint"},
		{"#/deliveries?endpoint=" + ep.ID, "#delivery-list table", "phone-14-portal-deliveries"},
		{"#/event-types", "#event-type-list table", "phone-15-portal-event-types"},
	} {
		r.bothWidths(t, v.route, v.sel, v.name)
		if page := r.pageText(t); strings.Contains(page, "phone-subscription-with-a-long-id") || strings.Contains(page, otherTenant) {
			t.Errorf("%s: the portal shows what is not its tenant's", v.route)
		}
	}
}
