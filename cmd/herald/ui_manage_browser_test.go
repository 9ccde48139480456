//go:build browser

package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/heraldstreams/herald/auth"
)

// setInput gives the control at sel a value as typing does: its value,
// then an input event.
func (r *uiRig) setInput(t *testing.T, sel, value string) {
	t.Helper()
	js, err := json.Marshal([]string{sel, value})
	if err != nil {
		t.Fatal(err)
	}
	r.do(t, "typing into "+sel, chromedp.Evaluate[chromedp.Void](fmt.Sprintf(
		`(([s, v]) => { const e = document.querySelector(s); e.value = v; e.dispatchEvent(new Event('input', {bubbles: true})); })(%s)`, js)))
}

// confirm clicks sel and answers the confirmation dialog it opens with yes.
func (r *uiRig) confirm(t *testing.T, what, sel string) {
	t.Helper()
	r.do(t, what, chromedp.Click(chromedp.CSS(sel)), chromedp.WaitVisible(chromedp.CSS(`#confirm-yes`)), chromedp.Click(chromedp.CSS(`#confirm-yes`)),
		chromedp.WaitNotPresent(chromedp.CSS(`dialog`)))
}

// recordCopies makes the page's clipboard a list the test reads
// (window.copied), so a copy button is checked for what it copies.
func (r *uiRig) recordCopies(t *testing.T) {
	t.Helper()
	r.do(t, "recording copies", chromedp.Evaluate[chromedp.Void](
		`window.copied = []; navigator.clipboard.writeText = text => { window.copied.push(text); return Promise.resolve(); }`))
}

// copied presses the copy button beside sel and returns what it copied.
func (r *uiRig) copied(t *testing.T, sel string) string {
	t.Helper()
	r.recordCopies(t)
	js, err := json.Marshal(sel)
	if err != nil {
		t.Fatal(err)
	}
	r.do(t, "copying "+sel, chromedp.Evaluate[chromedp.Void](`document.querySelector(`+string(js)+`).parentElement.querySelector('button.copy').click()`),
		chromedp.Poll[chromedp.Void](`window.copied.length === 1`, chromedp.WithPollingTimeout(5*time.Second)))
	if state := eval[string](t, r, `document.querySelector(`+string(js)+`).parentElement.querySelector('button.copy').dataset.copied`); state != "yes" {
		t.Errorf("the copy button of %s says %q, want yes", sel, state)
	}
	return eval[string](t, r, `window.copied[0]`)
}

// fieldError waits until the input named name in form shows err beside it.
func (r *uiRig) fieldError(t *testing.T, form, name, want string) {
	t.Helper()
	js, err := json.Marshal([]string{form, name, want})
	if err != nil {
		t.Fatal(err)
	}
	r.do(t, "waiting for the error on "+name, chromedp.Poll[chromedp.Void](fmt.Sprintf(`(([f, n, w]) => {
		const i = document.querySelector(f + ' [name="' + n + '"]') || document.querySelector(f + ' #key-' + n);
		const note = i && document.getElementById(i.id + '-error');
		return !!note && i.getAttribute('aria-invalid') === 'true' && note.innerText.includes(w);
	})(%s)`, js), chromedp.WithPollingTimeout(15*time.Second)))
}

// whoamiStatus is the status of GET /_herald/v1/whoami with key.
func (r *uiRig) whoamiStatus(t *testing.T, key string) int {
	t.Helper()
	status, _ := r.call(t, "GET", "/_herald/v1/whoami", map[string]string{"Authorization": "Bearer " + key}, "")
	return status
}

// tenantView is tenant-a's side of the management views: an admin key
// of tenant-a, and tenant-b's key and subscription, of which tenant-a's
// pages must show nothing.
type tenantView struct {
	r      *uiRig
	admin  string // an admin key of tenant-a
	theirs string // the id of a key of tenant-b
}

// newTenantView makes tenant-a's admin key, and tenant-b's key and
// subscription (theirs-sub, whose webhook is .../theirs-private).
func newTenantView(t *testing.T, r *uiRig) *tenantView {
	t.Helper()
	theirKey := r.key(t, []auth.Scope{auth.ScopeSubscriptionsWrite, auth.ScopeSubscriptionsRead, auth.ScopeStreamsWrite}, otherTenant)
	status, body := r.call(t, "PUT", "/tenants/"+otherTenant+"/**?subscription=theirs-sub", map[string]string{"Authorization": "Bearer " + theirKey, "Content-Type": "application/json"},
		`{"webhook":"`+r.receiver.URL+`/hang/theirs-private"}`)
	if status != http.StatusCreated {
		t.Fatalf("tenant-b's subscription: %d %s", status, body)
	}
	if status, body := r.call(t, "PUT", "/tenants/"+otherTenant+"/s1", map[string]string{"Authorization": "Bearer " + theirKey}, ""); status != http.StatusCreated {
		t.Fatalf("tenant-b's stream: %d %s", status, body)
	}
	return &tenantView{r: r, admin: r.key(t, []auth.Scope{auth.ScopeAdmin}, matrixTenant), theirs: strings.Split(theirKey, "_")[1]}
}

// switchTo signs out and signs in with key.
func (r *uiRig) switchTo(t *testing.T, key string) {
	t.Helper()
	r.do(t, "signing out", chromedp.Click(chromedp.CSS(`#signout`)), chromedp.WaitVisible(chromedp.CSS(`#signin`)))
	r.signIn(t, key)
}

// signIn signs in as tenant-a's admin.
func (tv *tenantView) signIn(t *testing.T) {
	t.Helper()
	tv.r.switchTo(t, tv.admin)
	tv.r.waitText(t, "#who", matrixTenant)
}

// hidden checks that the page shows nothing of tenant-b's, nor of the
// platform's; asked by id, the page may repeat the id it was asked.
func (tv *tenantView) hidden(t *testing.T, where string, asked ...string) {
	t.Helper()
	page := tv.r.pageText(t)
	for _, a := range asked {
		page = strings.ReplaceAll(page, a, "")
	}
	for _, s := range []string{"theirs-sub", "theirs-private", otherTenant, tv.theirs, "ui-stuck", "ui-ds"} {
		if strings.Contains(page, s) {
			t.Errorf("%s: the tenant's page shows %q", where, s)
		}
	}
}

// TestDashboardManage drives the management views as an operator and as
// a tenant; see manageSubscriptions, manageKeys and manageEventTypes.
func TestDashboardManage(t *testing.T) {
	t.Parallel()
	r := newUIRig(t)
	tv := newTenantView(t, r)
	r.signIn(t, testAdminKey)
	manageSubscriptions(t, r, tv)
	manageKeys(t, r, tv)
	manageEventTypes(t, r, tv)
}

// manageSubscriptions: an operator creates a subscription (its secret
// shown once and copied) after a server error shown on the field it is
// about, sees its consumer's lag and a stuck consumer marked with
// Herald's reason, looks up a reserved-API subscription and deletes the
// subscription; a tenant creates its own and sees only its own
// subscriptions and consumers.
func manageSubscriptions(t *testing.T, r *uiRig, tv *tenantView) {
	// None yet but tenant-b's, which the operator sees.
	r.visit(t, "#/subscriptions?pattern=/made/**", "#subscription-list .empty")
	if href := eval[string](t, r, `document.getElementById('subscriptions-docs').href`); !strings.HasSuffix(href, "/docs/subscriptions.md") {
		t.Errorf("the empty subscriptions view links to %s", href)
	}
	// A webhook Herald must not call: the error is on the webhook field.
	r.setInput(t, `#create-subscription [name=id]`, "ui-made")
	r.setInput(t, `#create-subscription [name=pattern]`, "/made/**")
	r.setInput(t, `#create-subscription [name=webhook]`, "http://169.254.169.254/latest")
	r.do(t, "creating a refused subscription", chromedp.Click(chromedp.CSS(`#create-subscription button[type=submit]`)))
	r.fieldError(t, "#create-subscription", "webhook", "")
	r.setInput(t, `#create-subscription [name=webhook]`, r.receiver.URL+"/hang/made")
	r.setInput(t, `#create-subscription [name=description]`, "made in the dashboard")
	r.do(t, "creating a subscription", chromedp.Click(chromedp.CSS(`#create-subscription button[type=submit]`)), chromedp.WaitVisible(chromedp.CSS(`#subscription-secret`)))
	secret := eval[string](t, r, `document.getElementById('subscription-secret').textContent`)
	if !strings.HasPrefix(secret, "whsec_") {
		t.Fatalf("the new subscription's secret is shown as %q", secret)
	}
	if got := r.copied(t, "#subscription-secret"); got != secret {
		t.Errorf("the copy button copied %q, want the secret", got)
	}
	r.waitText(t, "#subscription-list", "made in the dashboard")
	var sub struct{ Webhook string }
	r.admin(t, "GET", "/**?subscription=ui-made", "", http.StatusOK, &sub)
	if sub.Webhook != r.receiver.URL+"/hang/made" {
		t.Errorf("the subscription was stored with webhook %q", sub.Webhook)
	}
	r.screenshot(t, "manage-01-subscription-created")
	r.visit(t, "#/subscriptions?again", "#subscription-list table")
	if strings.Contains(r.pageText(t), secret) {
		t.Error("the secret is shown again after the view is reloaded")
	}

	// Its consumer, woken but never answering, is behind its stream's
	// tail by the bytes appended.
	r.admin(t, "PUT", "/made/s1", `[]`, http.StatusCreated, nil)
	r.admin(t, "POST", "/made/s1", `{"lag":"twenty bytes"}`, http.StatusNoContent, nil)
	tail := r.streamTail(t, "/made/s1")
	bytes, err := strconv.ParseInt(strings.ReplaceAll(tail, "_", ""), 10, 64)
	if err != nil || bytes == 0 {
		t.Fatalf("tail %q", tail)
	}
	r.until(t, "#/subscriptions/ui-made", "#consumer-list", "ui-made:%2Fmade%2Fs1")
	r.waitText(t, "#consumer-list", fmt.Sprintf("%d bytes on 1 of 1 stream", bytes))
	r.waitText(t, "#consumer-list", "not stuck")
	r.screenshot(t, "manage-02-consumers")

	// A consumer woken again and again without an ack is marked stuck,
	// with Herald's reason, in its subscription's consumer list.
	nokey := newKeylessConsumer(t, r.matrix, "ui-stuck", "/stuck/*")
	r.admin(t, "PUT", "/stuck/s1", `[]`, http.StatusCreated, nil)
	nokey.waitStuck(t)
	r.until(t, "#/subscriptions/ui-stuck", "#consumer-list", "woken 10 times in ")
	r.waitText(t, "#stuck-summary", "1 consumer is stuck")
	if n := eval[float64](t, r, `document.querySelectorAll('#consumer-list td.stuck').length`); n != 1 {
		t.Errorf("%v consumers are marked stuck, want 1", n)
	}
	r.screenshot(t, "manage-03-stuck-consumer")

	// A reserved-API subscription, looked up by its address.
	if status, body := r.call(t, "PUT", "/ds-pool", map[string]string{"Authorization": "Bearer " + testAdminKey, "Content-Type": "application/json"}, ""); status != http.StatusCreated {
		t.Fatalf("the wake stream: %d %s", status, body)
	}
	r.admin(t, "PUT", "/__ds/subscriptions/ui-ds", `{"type":"pull-wake","pattern":"dsorders/*","wake_stream":"ds-pool","description":"reserved from the dashboard test"}`, http.StatusCreated, nil)
	r.visit(t, "#/subscriptions", "#reserved-lookup")
	r.setInput(t, `#reserved-address`, "/__ds/subscriptions/ui-ds")
	r.do(t, "looking up a reserved subscription", chromedp.Click(chromedp.CSS(`#reserved-lookup button[type=submit]`)))
	r.waitText(t, "#reserved-subscription", "pull-wake")
	r.waitText(t, "#reserved-subscription", "reserved from the dashboard test")

	// Deleting, confirmed.
	r.confirm(t, "deleting ui-made", `#subscription-list button.delete-subscription[data-id="ui-made"]`)
	r.do(t, "waiting for ui-made to go", chromedp.Poll[chromedp.Void](`!document.querySelector('#subscription-list').innerText.includes('ui-made')`, chromedp.WithPollingTimeout(15*time.Second)))
	r.admin(t, "GET", "/**?subscription=ui-made", "", http.StatusNotFound, nil)

	// A tenant: its own subscriptions and consumers only.
	tv.signIn(t)
	r.visit(t, "#/subscriptions", "#create-subscription")
	r.setInput(t, `#create-subscription [name=id]`, "mine-sub")
	r.setInput(t, `#create-subscription [name=pattern]`, "/tenants/"+matrixTenant+"/**")
	r.setInput(t, `#create-subscription [name=webhook]`, r.receiver.URL+"/hang/mine")
	r.do(t, "creating the tenant's subscription", chromedp.Click(chromedp.CSS(`#create-subscription button[type=submit]`)), chromedp.WaitVisible(chromedp.CSS(`#subscription-secret`)))
	r.waitText(t, "#subscription-list", "mine-sub")
	tv.hidden(t, "subscriptions")
	r.screenshot(t, "manage-08-portal-subscriptions")
	r.admin(t, "PUT", "/tenants/"+matrixTenant+"/s1", `[]`, http.StatusCreated, nil)
	r.until(t, "#/subscriptions/mine-sub", "#consumer-list", "mine-sub:")
	tv.hidden(t, "consumers")
	r.visit(t, "#/subscriptions/theirs-sub", "main .error")
	r.waitText(t, "main", "belongs to another tenant")
	tv.hidden(t, "another tenant's subscription by id", "theirs-sub")

	// A tenant's key that only reads subscriptions reads them, with no
	// control to change them.
	r.switchTo(t, r.key(t, []auth.Scope{auth.ScopeSubscriptionsRead, auth.ScopeStreamsRead}, matrixTenant))
	r.visit(t, "#/subscriptions", "#subscription-list table")
	r.waitText(t, "#subscription-list", "mine-sub")
	if n := eval[float64](t, r, `document.querySelectorAll('#create-subscription, button.delete-subscription').length`); n != 0 {
		t.Errorf("a key that only reads subscriptions has %v controls to change them", n)
	}
	tv.hidden(t, "subscriptions, read-only")
	r.visit(t, "#/subscriptions/mine-sub", "#consumer-list table")
	if n := eval[float64](t, r, `document.querySelectorAll('button.delete-subscription').length`); n != 0 {
		t.Error("a key that only reads subscriptions may delete one")
	}
	tv.hidden(t, "consumers, read-only")
	r.switchTo(t, testAdminKey)
}

// manageKeys: an operator creates a key from the server's scope list
// after a server error shown on the field it is about (the key shown
// once, copyable, and it works), revokes it (it stops working), mints a
// portal token with its embed snippet; a key without the admin scope is
// told it cannot manage keys; a tenant's admin sees only its tenant's
// keys and makes keys and tokens of its tenant only.
func manageKeys(t *testing.T, r *uiRig, tv *tenantView) {
	// Keys: the scopes offered are the server's.
	r.visit(t, "#/keys", "#create-key")
	offered := eval[[]any](t, r, `[...document.querySelectorAll('#create-key input[name=scope]')].map(b => b.value)`)
	if len(offered) != len(auth.AllScopes) {
		t.Errorf("the key form offers %v, want every scope %v", offered, auth.AllScopes)
	}
	for i, s := range auth.AllScopes {
		if i < len(offered) && offered[i] != string(s) {
			t.Errorf("scope %d offered is %v, want %s", i, offered[i], s)
		}
	}
	// An expiry in the past: the error is on the expiry field.
	r.do(t, "choosing scopes",
		chromedp.Click(chromedp.CSS(`#create-key input[value="endpoints:read"]`)),
		chromedp.Click(chromedp.CSS(`#create-key input[value="deliveries:read"]`)))
	r.setInput(t, `#create-key [name=tenant]`, matrixTenant)
	r.setInput(t, `#create-key [name=paths]`, "/tenants/"+matrixTenant+"/orders/**")
	r.setInput(t, `#create-key [name=description]`, "made in the dashboard")
	r.setInput(t, `#create-key [name=expires_at]`, "2001-01-01T00:00:00")
	r.do(t, "creating a key that expired", chromedp.Click(chromedp.CSS(`#create-key button[type=submit]`)))
	r.fieldError(t, "#create-key", "expires_at", "")
	r.setInput(t, `#create-key [name=expires_at]`, time.Now().Add(48*time.Hour).Format("2006-01-02T15:04:05"))
	r.do(t, "creating a key", chromedp.Click(chromedp.CSS(`#create-key button[type=submit]`)), chromedp.WaitVisible(chromedp.CSS(`#new-key`)))
	newKey := eval[string](t, r, `document.getElementById('new-key').textContent`)
	if got := r.copied(t, "#new-key"); got != newKey || !strings.HasPrefix(newKey, "hk_") {
		t.Errorf("the new key is %q and its copy button copied %q", newKey, got)
	}
	var who struct {
		Tenant string
		Scopes []string
		Paths  []string
	}
	status, body := r.call(t, "GET", "/_herald/v1/whoami", map[string]string{"Authorization": "Bearer " + newKey}, "")
	if err := json.Unmarshal([]byte(body), &who); status != http.StatusOK || err != nil || who.Tenant != matrixTenant ||
		strings.Join(who.Scopes, ",") != "endpoints:read,deliveries:read" || len(who.Paths) != 1 {
		t.Errorf("the key made on the page is %d %s", status, body)
	}
	newID := strings.Split(newKey, "_")[1]
	r.waitText(t, "#key-list", newID)
	r.screenshot(t, "manage-04-keys")
	r.confirm(t, "revoking the new key", `#key-list button.revoke-key[data-id="`+newID+`"]`)
	r.do(t, "waiting for the key to go", chromedp.Poll[chromedp.Void](`!document.querySelector('#key-list').innerText.includes('`+newID+`')`, chromedp.WithPollingTimeout(15*time.Second)))
	if s := r.whoamiStatus(t, newKey); s != http.StatusUnauthorized {
		t.Errorf("the revoked key still answers %d", s)
	}

	// A portal token with its embed snippet.
	r.setInput(t, `#mint-portal-token [name=tenant]`, matrixTenant)
	r.do(t, "minting a portal token", chromedp.Click(chromedp.CSS(`#mint-portal-token button[type=submit]`)), chromedp.WaitVisible(chromedp.CSS(`#portal-snippet`)))
	url := eval[string](t, r, `document.getElementById('portal-url').textContent`)
	token := eval[string](t, r, `document.getElementById('portal-token-value').textContent`)
	if !strings.HasSuffix(url, "/_herald/ui/#key="+token) || !strings.HasPrefix(token, "hk_") {
		t.Errorf("the portal token %q has url %q", token, url)
	}
	snippet := r.copied(t, "#portal-snippet")
	if !strings.HasPrefix(snippet, `<iframe src="`+url+`"`) || !strings.HasSuffix(snippet, "</iframe>") {
		t.Errorf("the embed snippet is %q", snippet)
	}
	r.screenshot(t, "manage-05-portal-token")

	// A key without the admin scope: no Keys view, and a clear message
	// at its address.
	r.switchTo(t, r.key(t, []auth.Scope{auth.ScopeEndpointsRead}, ""))
	if nav := eval[string](t, r, `document.querySelector('#nav').innerText`); strings.Contains(nav, "Keys") {
		t.Errorf("a key without the admin scope has the views %q", nav)
	}
	r.visit(t, "#/keys", "#keys-not-allowed")
	r.waitText(t, "#keys-not-allowed", "needs a key with the admin scope")
	r.screenshot(t, "manage-07-keys-refused")

	tv.signIn(t)
	r.visit(t, "#/keys", "#key-list")
	r.waitText(t, "#key-list", strings.Split(tv.admin, "_")[1])
	tv.hidden(t, "keys")
	if v := eval[[]any](t, r, `[document.querySelector('#create-key [name=tenant]').value, document.querySelector('#create-key [name=tenant]').readOnly, document.querySelector('#mint-portal-token [name=tenant]').value]`); v[0] != matrixTenant || v[1] != true || v[2] != matrixTenant {
		t.Errorf("a tenant admin's key and portal forms name the tenant as %v, want %s, read-only", v, matrixTenant)
	}
	r.do(t, "creating a key of the tenant", chromedp.Click(chromedp.CSS(`#create-key input[value="endpoints:read"]`)),
		chromedp.Click(chromedp.CSS(`#create-key button[type=submit]`)), chromedp.WaitVisible(chromedp.CSS(`#new-key`)))
	status, body = r.call(t, "GET", "/_herald/v1/whoami", map[string]string{"Authorization": "Bearer " + eval[string](t, r, `document.getElementById('new-key').textContent`)}, "")
	if status != http.StatusOK || !strings.Contains(body, `"tenant":"`+matrixTenant+`"`) {
		t.Errorf("the key a tenant's admin made is %d %s", status, body)
	}
	r.do(t, "minting a portal token of the tenant", chromedp.Click(chromedp.CSS(`#mint-portal-token button[type=submit]`)), chromedp.WaitVisible(chromedp.CSS(`#portal-snippet`)))
	r.waitText(t, "#portal-token", "of tenant "+matrixTenant)
	tv.hidden(t, "keys, after a key and a token were made")
	r.screenshot(t, "manage-09-portal-keys")
	r.switchTo(t, testAdminKey)
}

// manageEventTypes: an operator creates an event type in the schema
// editor, which checks the schema and an example as they are typed and
// shows Herald's own error on the schema field, edits it and deprecates
// it; a tenant reads the catalogue without a control to change it.
func manageEventTypes(t *testing.T, r *uiRig, tv *tenantView) {
	// Event types: the editor checks the schema as it is typed...
	r.visit(t, "#/event-types", "#create-event-type")
	r.setInput(t, `#create-event-type [name=name]`, "ui.parcel.sent")
	r.setInput(t, `#create-event-type [name=schema]`, `{"type": "object",`)
	r.waitText(t, "#schema-check", "Not JSON: it ends too soon at line 1, column 19")
	r.setInput(t, `#create-event-type [name=schema]`, `{"type": "strang"}`)
	r.waitText(t, "#schema-check", "schema/type: type must be one of")
	r.setInput(t, `#create-event-type [name=schema]`, `{"type": "object", "required": ["carrier"], "properties": {"carrier": {"type": "string", "minLength": 2}}}`)
	r.waitText(t, "#schema-check", "valid structure")
	// ... and an example against it.
	r.setInput(t, `#create-event-type [name=example]`, `{"carrier": 7}`)
	r.waitText(t, "#example-check", "data/carrier: is integer, want string")
	r.setInput(t, `#create-event-type [name=example]`, `{}`)
	r.waitText(t, "#example-check", "lacks the required property carrier")
	r.setInput(t, `#create-event-type [name=example]`, `{"carrier": "ups"}`)
	r.waitText(t, "#example-check", "The example matches the schema.")
	r.do(t, "keeping the example", chromedp.Click(chromedp.CSS(`#keep-example`)))
	r.screenshot(t, "manage-06-event-type-editor")
	// A schema only Herald can refuse: its error is on the schema field.
	schema := eval[string](t, r, `document.querySelector('#create-event-type [name=schema]').value`)
	r.setInput(t, `#create-event-type [name=schema]`, `{"$ref": "#/$defs/missing"}`)
	r.do(t, "creating with a schema Herald refuses", chromedp.Click(chromedp.CSS(`#create-event-type button[type=submit]`)))
	r.fieldError(t, "#create-event-type", "schema", "")
	r.setInput(t, `#create-event-type [name=schema]`, schema)
	r.setInput(t, `#create-event-type [name=description]`, "A parcel left.")
	r.do(t, "creating the event type", chromedp.Click(chromedp.CSS(`#create-event-type button[type=submit]`)))
	r.waitText(t, "#event-type-saved", "Created ui.parcel.sent")
	r.waitText(t, "#event-type-list", "ui.parcel.sent\tA parcel left.\tcurrent")
	var et struct {
		Schema struct {
			Examples []map[string]string `json:"examples"`
		} `json:"schema"`
		Deprecated  bool `json:"deprecated"`
		Description string
	}
	r.admin(t, "GET", "/_herald/v1/event-types/ui.parcel.sent", "", http.StatusOK, &et)
	if len(et.Schema.Examples) != 1 || et.Schema.Examples[0]["carrier"] != "ups" {
		t.Errorf("the stored schema's examples are %v", et.Schema.Examples)
	}
	// Edited on its page: its example is the schema's.
	r.visit(t, "#/event-types/ui.parcel.sent", "#edit-event-type")
	r.waitText(t, "#example-check", "The example matches the schema.")
	r.setInput(t, `#edit-event-type [name=description]`, "A parcel left the depot.")
	r.do(t, "saving the event type", chromedp.Click(chromedp.CSS(`#edit-event-type button[type=submit]`)))
	r.waitText(t, "#event-type-saved", "Saved ui.parcel.sent")
	// Deprecated from the list.
	r.visit(t, "#/event-types", "#event-type-list table")
	r.do(t, "deprecating", chromedp.Click(chromedp.CSS(`button.deprecate[data-name="ui.parcel.sent"]`)))
	r.waitText(t, "#event-type-list", "ui.parcel.sent\tA parcel left the depot.\tdeprecated")
	r.admin(t, "GET", "/_herald/v1/event-types/ui.parcel.sent", "", http.StatusOK, &et)
	if !et.Deprecated || et.Description != "A parcel left the depot." {
		t.Errorf("after the edit and deprecation the type is %+v", et)
	}

	tv.signIn(t)
	r.visit(t, "#/event-types", "#event-type-list table")
	if n := eval[float64](t, r, `document.querySelectorAll('main form, main textarea, main button.deprecate').length`); n != 0 {
		t.Errorf("a tenant's event types view has %v editing controls; the catalogue is the installation's", n)
	}
	r.visit(t, "#/event-types/ui.parcel.sent", "#event-type-list table")
	tv.hidden(t, "event types")
}
