//go:build browser

package main

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/heraldstreams/herald/auth"
)

func TestDashboardInBrowser(t *testing.T) {
	t.Parallel()
	r := newUIRig(t)

	// The sign-in form, then the overview; the key is in sessionStorage
	// only.
	r.do(t, "opening the dashboard", chromedp.Navigate(r.ui), chromedp.WaitVisible(chromedp.CSS(`#signin`)))
	r.screenshot(t, "01-sign-in")
	r.signIn(t, testAdminKey)
	r.visit(t, "#/overview", "#charts")
	stored := eval[[]any](t, r, `[sessionStorage.getItem('herald.key'), localStorage.length, document.cookie]`)
	if stored[0] != testAdminKey || stored[1] != float64(0) || stored[2] != "" {
		t.Errorf("the key is kept as %v, want in sessionStorage only", stored)
	}

	// An endpoint created on the page; its secret is shown once.
	r.visit(t, "#/endpoints", "#create-endpoint")
	r.do(t, "creating an endpoint",
		chromedp.SendKeys(chromedp.CSS(`#create-endpoint input[name=url]`), r.receiver.URL+"/orders"),
		chromedp.SendKeys(chromedp.CSS(`#create-endpoint input[name=event_types]`), "order.*"),
		chromedp.Click(chromedp.CSS(`#create-endpoint button[type=submit]`)),
		chromedp.WaitVisible(chromedp.CSS(`#secret`)))
	secret := eval[string](t, r, `document.querySelector('#secret').textContent`)
	epID := eval[string](t, r, `document.querySelector('.notice a').textContent`)
	if !strings.HasPrefix(secret, "whsec_") || !strings.HasPrefix(epID, "ep_") {
		t.Fatalf("after create the page shows secret %q and endpoint %q", secret, epID)
	}
	r.waitText(t, "#endpoint-list", r.receiver.URL+"/orders")
	r.screenshot(t, "02-endpoints")

	// A published event's delivery arrives.
	r.publish(t, "order.created", "", 1)
	r.until(t, "#/deliveries?endpoint="+epID, "#delivery-list", "delivered")
	r.screenshot(t, "03-deliveries")

	// The receiver fails: the delivery's attempt shows the 500; after a
	// retry with the receiver back, its second attempt succeeds.
	r.failing.Store(true)
	r.publish(t, "order.created", "", 2)
	r.until(t, "#/deliveries?endpoint="+epID+"&status=failed", "#delivery-list", "failed")
	r.do(t, "opening the failed delivery", chromedp.Click(chromedp.CSS(`#delivery-list tbody a`)), chromedp.WaitVisible(chromedp.CSS(`#payload`)))
	r.waitText(t, "main", "500")
	r.waitText(t, "main", "receiver down for the test")
	r.waitText(t, "#payload", `"n": 2`)
	r.screenshot(t, "04-delivery-failed")
	dlvRoute := eval[string](t, r, `location.hash`)
	r.failing.Store(false)
	r.do(t, "retrying", chromedp.Click(chromedp.CSS(`#retry`)))
	r.waitText(t, "#retry-result", "Queued again")
	r.refreshUntil(t, "#delivery-status", "delivered")
	if eval[string](t, r, `location.hash`) != dlvRoute {
		t.Errorf("refreshing moved the page to %s", eval[string](t, r, `location.hash`))
	}
	if rows := eval[float64](t, r, `document.querySelectorAll('main table tbody tr').length`); rows != 2 {
		t.Errorf("the retried delivery shows %v attempts, want 2", rows)
	}
	r.screenshot(t, "05-delivery-retried")

	// A delivery whose receiver holds the request is in flight: the list
	// and its page say on which replica and until when.
	var held struct {
		ID string `json:"id"`
	}
	r.admin(t, "POST", "/_herald/v1/endpoints", `{"url":"`+r.receiver.URL+`/hang/held","event_types":["held.*"]}`, http.StatusCreated, &held)
	r.publish(t, "held.created", "", 3)
	r.until(t, "#/deliveries?endpoint="+held.ID, "#delivery-list", "in flight on replica")
	r.do(t, "opening the delivery in flight", chromedp.Click(chromedp.CSS(`#delivery-list tbody a`)), chromedp.WaitVisible(chromedp.CSS(`#payload`)))
	r.waitText(t, "#delivery-status", "in flight on replica")
	r.screenshot(t, "05b-delivery-in-flight")

	// The endpoint's actions: pause and resume, a test event.
	r.visit(t, "#/endpoints/"+epID, "#pause")
	r.do(t, "pausing", chromedp.Click(chromedp.CSS(`#pause`)), chromedp.WaitVisible(chromedp.CSS(`#resume`)))
	r.waitText(t, "main", "paused")
	r.do(t, "resuming", chromedp.Click(chromedp.CSS(`#resume`)), chromedp.WaitVisible(chromedp.CSS(`#pause`)))
	r.do(t, "sending a test event", chromedp.Click(chromedp.CSS(`#test`)))
	r.waitText(t, "#action-result", "accepted the test event")
	// Its health: three attempts (a 500 among them), so a success rate
	// of 66.7%, latencies in milliseconds, the breaker closed, nothing
	// waiting.
	r.waitText(t, "#health", "66.7% of the last 3 attempts")
	r.waitText(t, "#health", " ms · p99 ")
	r.waitText(t, "#health", "closed")
	r.waitText(t, "#endpoint-backlog", "0 waiting")
	// A range replay, confirmed, is followed until its job is done.
	r.do(t, "replaying from 2000 until 2999, confirmed",
		chromedp.SetValue(chromedp.CSS(`#replay input[name=since]`), "2000-01-01T00:00"),
		chromedp.SetValue(chromedp.CSS(`#replay input[name=until]`), "2999-01-01T00:00"),
		chromedp.Click(chromedp.CSS(`#replay button[type=submit]`)),
		chromedp.WaitVisible(chromedp.CSS(`#confirm-yes`)))
	r.waitText(t, "dialog", "until")
	r.do(t, "confirming the replay", chromedp.Click(chromedp.CSS(`#confirm-yes`)))
	r.waitText(t, "#replay-progress", "is done: 2 of 2 queued")
	if job := eval[map[string]any](t, r, `Object.assign({}, document.getElementById('replay-progress').dataset)`); job["state"] != "done" || job["total"] != "2" || job["queued"] != "2" {
		t.Errorf("the replay's progress shows %v, want done with 2 of 2 queued", job)
	}
	r.screenshot(t, "06-endpoint")

	// The secret rotated after a confirmation: the new one is shown once,
	// the old one never again, and neither after a refresh.
	r.do(t, "rotating the secret, confirmed",
		chromedp.Click(chromedp.CSS(`#rotate`)),
		chromedp.WaitVisible(chromedp.CSS(`#confirm-yes`)),
		chromedp.Click(chromedp.CSS(`#confirm-yes`)))
	r.waitText(t, "#action-result", "The secret was rotated")
	rotated := eval[string](t, r, `document.querySelector('#secret').textContent`)
	if !strings.HasPrefix(rotated, "whsec_") || rotated == secret {
		t.Errorf("after the rotation the page shows secret %q (the old one was %q)", rotated, secret)
	}
	if strings.Contains(r.pageText(t), secret) {
		t.Error("after the rotation the page shows the old secret")
	}
	r.waitText(t, "#action-result", "keeps signing beside it until")
	r.screenshot(t, "13-secret-rotated")
	r.refresh(t)
	if page := r.pageText(t); strings.Contains(page, secret) || strings.Contains(page, rotated) || strings.Contains(page, "whsec_") {
		t.Error("after a refresh the page shows a signing secret")
	}

	// An endpoint deleted after a confirmation is gone from the list.
	doomed := r.tenantEndpoint(t, "", "/doomed")
	r.visit(t, "#/endpoints/"+doomed, "#delete")
	r.do(t, "deleting, confirmed",
		chromedp.Click(chromedp.CSS(`#delete`)),
		chromedp.WaitVisible(chromedp.CSS(`#confirm-yes`)),
		chromedp.Click(chromedp.CSS(`#confirm-yes`)),
		chromedp.WaitVisible(chromedp.CSS(`#endpoint-list`)))
	if h := eval[string](t, r, `location.hash`); h != "#/endpoints" {
		t.Errorf("after the delete the page is at %s", h)
	}
	r.waitText(t, "#endpoint-list", epID)
	if strings.Contains(eval[string](t, r, `document.querySelector('main').innerText`), doomed) {
		t.Errorf("the deleted endpoint %s is still listed", doomed)
	}
	r.admin(t, "GET", "/_herald/v1/endpoints/"+doomed, "", http.StatusNotFound, nil)

	// The breaker disables an endpoint whose receiver keeps failing;
	// Re-enable makes it active again.
	r.breakerDown.Store(true)
	broken := r.tenantEndpoint(t, "", "/breaker")
	for i := range breakerThreshold {
		r.publish(t, "order.breaker", "", 100+i)
	}
	r.until(t, "#/endpoints/"+broken, "main dl", "disabled")
	r.waitText(t, "#re-enable", "Re-enable")
	r.waitText(t, "#health", "open")
	r.waitText(t, "#health", "0.0% of the last")
	r.waitText(t, "#endpoint-backlog", strconv.Itoa(breakerThreshold)+" waiting (0 pending, "+strconv.Itoa(breakerThreshold)+" failed")
	r.screenshot(t, "14-endpoint-disabled")
	// The overview counts the deliveries waiting, the failed ones included.
	r.visit(t, "#/overview?backlog", "#backlog")
	if n := eval[float64](t, r, `Number(document.getElementById('backlog').textContent)`); n < breakerThreshold {
		t.Errorf("the overview shows %v deliveries waiting, want at least the %d failed ones", n, breakerThreshold)
	}
	r.visit(t, "#/endpoints/"+broken, "#re-enable")
	r.breakerDown.Store(false)
	r.do(t, "re-enabling", chromedp.Click(chromedp.CSS(`#re-enable`)), chromedp.WaitVisible(chromedp.CSS(`#pause`)))
	r.waitText(t, "main dl", "active")
	var ep struct{ Status string }
	r.admin(t, "GET", "/_herald/v1/endpoints/"+broken, "", http.StatusOK, &ep)
	if ep.Status != "active" {
		t.Errorf("after Re-enable the endpoint is %q", ep.Status)
	}

	// A stream tailed live: an append shows up pretty-printed.
	r.admin(t, "PUT", "/ui/tail", `[]`, http.StatusCreated, nil)
	r.visit(t, "#/streams?path=/ui/tail", "#stream-form")
	r.waitText(t, "#stream-status", "end of the stream")
	r.do(t, "tailing", chromedp.Click(chromedp.CSS(`#tail`)))
	r.waitText(t, "#stream-status", "Tailing live")
	r.admin(t, "POST", "/ui/tail", `{"hello":"browser","n":1}`, http.StatusNoContent, nil)
	r.waitText(t, "#stream-out", `"hello": "browser"`)
	r.screenshot(t, "07-stream-tail")
	r.do(t, "stopping the tail", chromedp.Click(chromedp.CSS(`#tail`)))

	// Streams browsed by prefix: the 101 under /ui/browse/ are listed, a
	// page of 100 and then the rest, and nothing outside the prefix; a
	// listed path opens in the reader.
	for i := range 101 {
		r.admin(t, "PUT", fmt.Sprintf("/ui/browse/s%03d", i), `[]`, http.StatusCreated, nil)
	}
	r.admin(t, "PUT", "/ui/browsed-not", `[]`, http.StatusCreated, nil)
	r.admin(t, "POST", "/ui/browse/s042", `{"picked":"from the list"}`, http.StatusNoContent, nil)
	r.visit(t, "#/streams", "#stream-browse-form")
	r.do(t, "listing a prefix",
		chromedp.SendKeys(chromedp.CSS(`#stream-prefix`), "/ui/browse/"),
		chromedp.Click(chromedp.CSS(`#stream-browse-form button[type=submit]`)),
		chromedp.WaitVisible(chromedp.CSS(`#stream-list table`)))
	r.waitText(t, "#stream-list", "/ui/browse/s000")
	r.loadMore(t, "#stream-list", 101)
	if text := eval[string](t, r, `document.getElementById('stream-list').innerText`); strings.Contains(text, "/ui/browsed-not") || strings.Contains(text, "/ui/tail") {
		t.Errorf("the list of /ui/browse/ shows streams outside it: %s", text)
	}
	r.screenshot(t, "07b-stream-browse")
	r.do(t, "opening a listed stream", chromedp.Click(chromedp.CSS(`#stream-list a[href*="s042"]`)))
	r.waitText(t, "#stream-out", `"picked": "from the list"`)
	if p := eval[string](t, r, `document.querySelector('#stream-form input[name=path]').value`); p != "/ui/browse/s042" {
		t.Errorf("the reader's path is %q after opening /ui/browse/s042 from the list", p)
	}
	r.waitText(t, "#stream-list", "/ui/browse/s000")

	// Subscriptions and the overview's counts of the last hour.
	r.admin(t, "PUT", "/ui/**?subscription=ui-sub", `{"webhook":"`+r.receiver.URL+`/wake","description":"dashboard test"}`, http.StatusCreated, nil)
	r.visit(t, "#/subscriptions", "#subscription-list table")
	r.waitText(t, "#subscription-list", "ui-sub")
	r.screenshot(t, "08-subscriptions")

	// A consumer whose webhook never answers is stuck in WAKING on the
	// overview; the overview refreshes itself (its 30 s timer shortened
	// here by the test, in the page).
	r.admin(t, "PUT", "/hang/**?subscription=ui-hang", `{"webhook":"`+r.receiver.URL+`/hang"}`, http.StatusCreated, nil)
	r.admin(t, "PUT", "/hang/s1", `[]`, http.StatusCreated, nil)
	r.admin(t, "POST", "/hang/s1", `{"wake":"up"}`, http.StatusNoContent, nil)
	r.until(t, "#/overview", "#stuck-consumers", "ui-hang:")
	r.do(t, "shortening the overview's refresh",
		chromedp.Evaluate[chromedp.Void](`window.heraldTestTimeout = window.setTimeout; window.setTimeout = (f, ms, ...a) => window.heraldTestTimeout(f, ms === 30000 ? 50 : ms, ...a)`))
	r.visit(t, "#/overview?auto", "#charts")
	r.do(t, "waiting for the overview to refresh itself",
		chromedp.Evaluate[chromedp.Void](`document.getElementById('loaded').dataset.old = 'yes'`),
		chromedp.Poll[chromedp.Void](`(() => { const l = document.getElementById('loaded'); return !!l && !l.dataset.old; })()`, chromedp.WithPollingTimeout(15*time.Second)),
		chromedp.Evaluate[chromedp.Void](`window.setTimeout = window.heraldTestTimeout`))
	r.waitText(t, "#loaded", "refreshes every 30 s")
	r.waitText(t, "#stuck-consumers", "ui-hang:")

	// A consumer that cannot read (the SDK's Consumer without a key) is
	// woken again and again without an ack: the overview lists it stuck,
	// with Herald's reason, and so does its detail.
	nokey := newKeylessConsumer(t, r.matrix, "ui-nokey", "/nokey/*")
	r.admin(t, "PUT", "/nokey/s1", `[]`, http.StatusCreated, nil)
	nokey.waitStuck(t)
	r.until(t, "#/overview", "#stuck-consumers", "ui-nokey:")
	r.waitText(t, "#stuck-consumers", "woken 10 times in ")
	r.waitText(t, "#stuck-consumers", " without an ack")
	for _, series := range []string{"appends", "deliveries", "failures"} {
		if n := eval[string](t, r, `document.querySelector('[data-series=`+series+`] .big').textContent`); n == "0" {
			t.Errorf("the overview counts no %s in the last hour", series)
		}
	}
	r.screenshot(t, "09-overview")

	// A consumer's detail: each stream's acked offset against its tail
	// (the Stream-Next-Offset of a HEAD), pending work marked, the next
	// deadline with its reason and how the last wake went; for the stuck
	// consumer and for a LIVE one whose webhook answered.
	tail := r.streamTail(t, "/hang/s1")
	r.consumerDetail(t, "ui-hang", "ui-hang:%2Fhang%2Fs1")
	r.waitText(t, "#consumer-deadline", "end of the delivery attempt")
	r.waitText(t, "#consumer-last-wake", "Waiting for the webhook's answer to delivery attempt 1")
	r.waitText(t, "#consumer-pending", "1 of 1 streams")
	r.waitText(t, "#consumer-detail table", "/hang/s1\t-1\t")
	r.waitText(t, "#consumer-detail table", "\t"+tail+"\tpending")
	r.waitText(t, "#consumer-stuck", "Not stuck")
	r.screenshot(t, "09b-consumer-stuck")
	r.consumerDetail(t, "ui-nokey", "ui-nokey:%2Fnokey%2Fs1")
	r.waitText(t, "#consumer-stuck", "stuck woken 10 times in ")
	r.admin(t, "POST", "/ui/tail", `{"wakes":"ui-sub"}`, http.StatusNoContent, nil)
	for deadline := time.Now().Add(15 * time.Second); ; {
		r.consumerDetail(t, "ui-sub", "ui-sub:%2Fui%2Ftail")
		if eval[bool](t, r, `document.getElementById('consumer-deadline').innerText.includes('liveness')`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the consumer of /ui/tail never went LIVE: %s", r.mainText())
		}
		time.Sleep(200 * time.Millisecond)
	}
	r.waitText(t, "#consumer-last-wake", "Delivered")
	r.waitText(t, "#consumer-detail", "LIVE")
	r.waitText(t, "#consumer-detail table", "/ui/tail\t")
	r.waitText(t, "#consumer-detail table", "\t"+r.streamTail(t, "/ui/tail")+"\tpending")

	// A tenant's portal: its own endpoint and deliveries, nothing of
	// another tenant's, and no operator views.
	mine := r.tenantEndpoint(t, matrixTenant, "/tenant-a-hook")
	theirs := r.tenantEndpoint(t, otherTenant, "/tenant-b-private-hook")
	r.publish(t, "order.created", matrixTenant, 3)
	r.publish(t, "order.created", otherTenant, 4)
	key := r.key(t, []auth.Scope{auth.ScopeEndpointsRead, auth.ScopeEndpointsWrite, auth.ScopeDeliveriesRead, auth.ScopeDeliveriesWrite}, matrixTenant)
	r.do(t, "signing out", chromedp.Click(chromedp.CSS(`#signout`)), chromedp.WaitVisible(chromedp.CSS(`#signin`)))
	if k := eval[any](t, r, `sessionStorage.getItem('herald.key')`); k != nil {
		t.Errorf("after signing out sessionStorage holds %v", k)
	}

	// With the keyboard only: type the key, Enter, and the view's heading
	// has the focus; Shift+Tab back to the navigation, Enter on
	// Endpoints, and the endpoints view's heading has it.
	r.waitFocus(t, `#signin input[name=key]`, "")
	r.do(t, "signing in with the keyboard", chromedp.KeyEvent(testAdminKey), chromedp.KeyEvent(kb.Enter))
	r.waitFocus(t, `main h1`, "Overview")
	for i := 0; !eval[bool](t, r, `document.activeElement.matches('#nav a[data-view=endpoints]')`); i++ {
		if i == 10 {
			t.Fatalf("ten Shift+Tab presses from the heading never reached the Endpoints link; the focus is on %s", eval[string](t, r, `document.activeElement.outerHTML`))
		}
		r.do(t, "Shift+Tab", chromedp.KeyEvent(kb.Tab, chromedp.KeyModifiers(chromedp.ModifierShift)))
	}
	r.do(t, "Enter on Endpoints", chromedp.KeyEvent(kb.Enter))
	r.waitFocus(t, `main h1`, "Endpoints")
	r.waitText(t, "#endpoint-list", epID)
	r.do(t, "signing out", chromedp.Click(chromedp.CSS(`#signout`)), chromedp.WaitVisible(chromedp.CSS(`#signin`)))

	r.signIn(t, key)
	r.waitText(t, "#who", matrixTenant)
	nav := eval[string](t, r, `document.querySelector('#nav').innerText`)
	if strings.Contains(nav, "Overview") || strings.Contains(nav, "Streams") || !strings.Contains(nav, "Endpoints") {
		t.Errorf("the tenant's views are %q, want endpoints and deliveries only", nav)
	}
	hidden := func(where string) {
		t.Helper()
		page := r.pageText(t)
		for _, s := range []string{theirs, "tenant-b-private-hook", otherTenant, epID} {
			if strings.Contains(page, s) {
				t.Errorf("%s: the tenant's page shows %q", where, s)
			}
		}
	}
	r.visit(t, "#/endpoints", "#endpoint-list table")
	r.waitText(t, "#endpoint-list", mine)
	hidden("endpoints")
	r.screenshot(t, "10-portal-endpoints")
	r.until(t, "#/deliveries?endpoint="+mine, "#delivery-list", "delivered")
	hidden("deliveries")
	r.screenshot(t, "11-portal-deliveries")
	r.visit(t, "#/endpoints/"+theirs, "main .error")
	r.waitText(t, "main", "belongs to another tenant")
	r.visit(t, "#/deliveries?endpoint="+theirs, "#delivery-filter")
	hidden("another tenant's endpoint by id")
	r.visit(t, "#/overview", "#endpoint-list, #delivery-filter")
	hidden("the operator's overview")

	// A tenant's admin key has no overview either: its figures are the
	// whole installation's (GET /_herald/v1/stats refuses a tenant).
	r.do(t, "signing out", chromedp.Click(chromedp.CSS(`#signout`)), chromedp.WaitVisible(chromedp.CSS(`#signin`)))
	r.signIn(t, r.key(t, []auth.Scope{auth.ScopeAdmin}, matrixTenant))
	r.waitText(t, "#who", matrixTenant)
	if nav := eval[string](t, r, `document.querySelector('#nav').innerText`); strings.Contains(nav, "Overview") || !strings.Contains(nav, "Endpoints") {
		t.Errorf("a tenant admin's views are %q, want every view but the overview", nav)
	}
	r.do(t, "signing out", chromedp.Click(chromedp.CSS(`#signout`)), chromedp.WaitVisible(chromedp.CSS(`#signin`)))
	r.signIn(t, key)
	r.waitText(t, "#who", matrixTenant)

	// The event types, read-only in the portal: name, description, the
	// deprecated flag and the schema as formatted JSON.
	r.admin(t, "POST", "/_herald/v1/event-types", `{"name":"ui.order.shipped","description":"An order left the warehouse.","schema":{"type":"object","required":["carrier"],"properties":{"carrier":{"type":"string"}}}}`, http.StatusCreated, nil)
	r.admin(t, "POST", "/_herald/v1/event-types", `{"name":"ui.order.faxed","description":"The old way.","deprecated":true}`, http.StatusCreated, nil)
	if nav := eval[string](t, r, `document.querySelector('#nav').innerText`); !strings.Contains(nav, "Event types") {
		t.Errorf("the tenant's views are %q, without Event types", nav)
	}
	r.visit(t, "#/event-types", "#event-type-list table")
	r.waitText(t, "#event-type-list", "ui.order.shipped\tAn order left the warehouse.\tcurrent")
	r.waitText(t, "#event-type-list", "ui.order.faxed\tThe old way.\tdeprecated\tNo schema")
	if got := eval[string](t, r, `[...document.querySelectorAll('#event-type-list tr')].find(tr => tr.innerText.includes('ui.order.shipped')).querySelector('pre').textContent`); !strings.Contains(got, "{\n  \"type\": \"object\",\n  \"required\": [\n    \"carrier\"\n  ],") {
		t.Errorf("the schema of ui.order.shipped is shown as %q, want it formatted", got)
	}
	if n := eval[float64](t, r, `document.querySelectorAll('main form, main input, main textarea, main button:not(#refresh):not([hidden])').length`); n != 0 {
		t.Errorf("the tenant's event types view has %v controls besides Refresh, want it read-only", n)
	}
	hidden("event types")
	r.screenshot(t, "11b-portal-event-types")

	// At phone width the portal still fits.
	r.do(t, "phone width", chromedp.EmulateViewport(390, 844))
	r.visit(t, "#/endpoints/"+mine, "#test")
	if over := eval[bool](t, r, `document.documentElement.scrollWidth > window.innerWidth + 1`); over {
		t.Errorf("at 390 px the page is %v px wide", eval[float64](t, r, `document.documentElement.scrollWidth`))
	}
	r.screenshot(t, "12-portal-phone")
	r.do(t, "desktop width", chromedp.EmulateViewport(1280, 800))

	// The embedded portal opened with a minted portal token: the key is
	// in the URL's fragment, which leaves the address at once; the page
	// says who the link signs in as and signs in only when asked to; the
	// portal then shows its tenant only. The token is listed among the
	// keys.
	var portal struct{ ID, Token, URL string }
	r.admin(t, "POST", "/_herald/v1/portal-tokens", `{"tenant":"`+matrixTenant+`","ttl":"10m"}`, http.StatusCreated, &portal)
	r.do(t, "opening the portal's URL",
		chromedp.Evaluate[chromedp.Void](`sessionStorage.clear()`),
		chromedp.Navigate(portal.URL),
		chromedp.WaitVisible(chromedp.CSS(`#key-offer-accept`)))
	if h := eval[string](t, r, `location.href`); strings.Contains(h, portal.Token) {
		t.Errorf("the token stays in the address: %s", h)
	}
	r.keyOffer(t, matrixTenant, "endpoints:read, endpoints:write, deliveries:read, deliveries:write", "")
	r.screenshot(t, "15a-key-link-offer")
	r.do(t, "signing in from the link", chromedp.Click(chromedp.CSS(`#key-offer-accept`)), chromedp.WaitVisible(chromedp.CSS(`#endpoint-list table`)))
	if k := eval[string](t, r, `sessionStorage.getItem('herald.key')`); k != portal.Token {
		t.Errorf("sessionStorage holds %q, want the portal token", k)
	}
	r.waitText(t, "#who", matrixTenant)
	r.waitText(t, "#who", portal.ID)
	r.waitText(t, "#endpoint-list", mine)
	hidden("the portal of a portal token")
	r.screenshot(t, "15-portal-token")
	var listed struct{ Description string }
	r.admin(t, "GET", "/_herald/v1/keys/"+portal.ID, "", http.StatusOK, &listed)
	if !strings.Contains(listed.Description, "portal token") {
		t.Errorf("the portal token is listed as %q", listed.Description)
	}

	// A link to another tenant's key, opened while signed in: the page
	// names both, and keeping the session keeps it; only a yes replaces
	// it. A link whose key is no key cannot sign in at all.
	var theirPortal struct{ Token, URL string }
	r.admin(t, "POST", "/_herald/v1/portal-tokens", `{"tenant":"`+otherTenant+`"}`, http.StatusCreated, &theirPortal)
	r.do(t, "opening another tenant's link while signed in", chromedp.Navigate(theirPortal.URL), chromedp.WaitVisible(chromedp.CSS(`#key-offer-current`)))
	r.keyOffer(t, otherTenant, "endpoints:read", matrixTenant)
	r.screenshot(t, "15b-key-link-replaces")
	r.do(t, "keeping the session", chromedp.Click(chromedp.CSS(`#key-offer-reject`)), chromedp.WaitVisible(chromedp.CSS(`#endpoint-list table`)))
	r.waitText(t, "#who", matrixTenant)
	r.waitText(t, "#endpoint-list", mine)
	if k := eval[string](t, r, `sessionStorage.getItem('herald.key')`); k != portal.Token {
		t.Errorf("after keeping the session sessionStorage holds %q, want the portal token", k)
	}
	r.do(t, "opening a link with a bad key", chromedp.Navigate(r.ui+"#key=hk_bogus_0123456789abcdef0123456789abcdef"), chromedp.WaitVisible(chromedp.CSS(`#key-offer .error`)))
	if n := eval[float64](t, r, `document.querySelectorAll('#key-offer-accept').length`); n != 0 {
		t.Error("a link with a bad key offers to sign in")
	}
	r.do(t, "keeping the session", chromedp.Click(chromedp.CSS(`#key-offer-reject`)), chromedp.WaitVisible(chromedp.CSS(`#endpoint-list table`)))
	r.do(t, "opening the other tenant's link again", chromedp.Navigate(theirPortal.URL), chromedp.WaitVisible(chromedp.CSS(`#key-offer-current`)))
	r.do(t, "replacing the session", chromedp.Click(chromedp.CSS(`#key-offer-accept`)), chromedp.WaitVisible(chromedp.CSS(`#endpoint-list table`)))
	r.waitText(t, "#who", otherTenant)
	if k := eval[string](t, r, `sessionStorage.getItem('herald.key')`); k != theirPortal.Token {
		t.Errorf("after replacing the session sessionStorage holds %q, want the other tenant's token", k)
	}

	// Beyond a page: a tenant with 101 endpoints, one with 101
	// deliveries, sees the first 100 of each and loads the rest.
	const paged = "tenant-c"
	for i := range 100 {
		r.admin(t, "POST", "/_herald/v1/endpoints", fmt.Sprintf(`{"url":"%s/filler-%d","tenant":%q,"event_types":["filler.none"]}`, r.receiver.URL, i, paged), http.StatusCreated, nil)
	}
	busy := r.tenantEndpoint(t, paged, "/busy")
	for i := range 101 {
		r.publish(t, "order.paged", paged, i)
	}
	r.waitDeliveries(t, busy, 101)
	var pagedPortal struct{ URL string }
	r.admin(t, "POST", "/_herald/v1/portal-tokens", `{"tenant":"`+paged+`"}`, http.StatusCreated, &pagedPortal)
	r.do(t, "opening the paged tenant's portal",
		chromedp.Navigate(pagedPortal.URL),
		chromedp.WaitVisible(chromedp.CSS(`#key-offer-accept`)),
		chromedp.Click(chromedp.CSS(`#key-offer-accept`)),
		chromedp.WaitVisible(chromedp.CSS(`#endpoint-list-more`)))
	r.waitText(t, "#who", paged)
	r.loadMore(t, "#endpoint-list", 101)
	r.waitText(t, "#endpoint-list", busy)
	r.screenshot(t, "16-endpoints-paged")
	r.visit(t, "#/deliveries?endpoint="+busy, "#delivery-list-more")
	r.loadMore(t, "#delivery-list", 101)
	r.screenshot(t, "17-deliveries-paged")

	r.errsMu.Lock()
	defer r.errsMu.Unlock()
	if len(r.exceptions) > 0 {
		t.Errorf("the page threw: %v", r.exceptions)
	}
}

// A Kafka endpoint created on the page: the list shows its type, its
// page its config with the password masked, never the password.
func TestDashboardBrokerEndpoint(t *testing.T) {
	t.Parallel()
	r := newUIRig(t)
	r.do(t, "opening the dashboard", chromedp.Navigate(r.ui), chromedp.WaitVisible(chromedp.CSS(`#signin`)))
	r.signIn(t, testAdminKey)
	r.visit(t, "#/endpoints", "#create-endpoint")
	r.do(t, "creating a Kafka endpoint",
		chromedp.SetValue(chromedp.CSS(`#create-endpoint select[name=type]`), "kafka"),
		chromedp.Evaluate[chromedp.Void](`void document.querySelector('#create-endpoint select[name=type]').dispatchEvent(new Event('change'))`),
		chromedp.WaitVisible(chromedp.CSS(`#create-endpoint textarea[name=config]`)),
		chromedp.SendKeys(chromedp.CSS(`#create-endpoint textarea[name=config]`),
			`{"brokers":["127.0.0.1:9092"],"sasl":{"mechanism":"PLAIN","username":"herald","password":"kafka-s3cret"}}`),
		chromedp.Click(chromedp.CSS(`#create-endpoint button[type=submit]`)),
		chromedp.WaitVisible(chromedp.CSS(`#secret`)))
	epID := eval[string](t, r, `document.querySelector('.notice a').textContent`)
	r.waitText(t, "#endpoint-list", "kafka")
	r.visit(t, "#/endpoints/"+epID, "#broker-config")
	r.waitText(t, "#broker-config", `"password": "***"`)
	r.waitText(t, "#broker-config", "127.0.0.1:9092")
	if strings.Contains(r.pageText(t), "kafka-s3cret") {
		t.Error("the endpoint's page shows the broker password")
	}
	r.screenshot(t, "30-broker-endpoint")
}
