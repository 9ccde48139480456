//go:build browser

package main

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/heraldstreams/herald/auth"
	"github.com/heraldstreams/herald/store"
)

// shotAtBothWidths saves the page at 1280 px and at 390 px (a phone), as name-1280
// and name-390, and checks that at 390 px nothing scrolls sideways.
func (r *uiRig) shotAtBothWidths(t *testing.T, name string) {
	t.Helper()
	r.screenshot(t, name+"-1280")
	r.do(t, "phone width", chromedp.EmulateViewport(390, 844))
	if over := eval[bool](t, r, `document.documentElement.scrollWidth > window.innerWidth + 1`); over {
		t.Errorf("%s: at 390 px the page is %v px wide", name, eval[float64](t, r, `document.documentElement.scrollWidth`))
	}
	r.screenshot(t, name+"-390")
	r.do(t, "desktop width", chromedp.EmulateViewport(1280, 800))
}

// fill sets a form control's value as typing would (an input event too).
func fill(sel, value string) chromedp.Action[chromedp.Void] {
	return chromedp.Evaluate[chromedp.Void](`void ((s, v) => { const e = document.querySelector(s); e.value = v; e.dispatchEvent(new Event('input')); e.dispatchEvent(new Event('change')); })(` +
		jsString(sel) + `, ` + jsString(value) + `)`)
}

// jsString is s as a JavaScript string literal.
func jsString(s string) string {
	b, err := json.Marshal(s)
	if err != nil {
		panic(err) // a string always marshals
	}
	return string(b)
}

// storedEndpoint reads an endpoint from the store, its secrets included.
func (r *uiRig) storedEndpoint(t *testing.T, id string) *store.Endpoint {
	t.Helper()
	ep, err := r.app.st.EndpointGet(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	return ep
}

// noExceptions fails the test when a page threw.
func (r *uiRig) noExceptions(t *testing.T) {
	t.Helper()
	r.errsMu.Lock()
	defer r.errsMu.Unlock()
	if len(r.exceptions) > 0 {
		t.Errorf("the page threw: %v", r.exceptions)
	}
}

// endpointView is what the tests read of an endpoint.
type endpointView struct {
	URL           string            `json:"url"`
	Name          string            `json:"name"`
	Description   string            `json:"description"`
	EventTypes    []string          `json:"event_types"`
	Streams       []string          `json:"streams"`
	Filter        map[string]any    `json:"filter"`
	Headers       map[string]string `json:"headers"`
	RetrySchedule []string          `json:"retry_schedule"`
	RateLimit     float64           `json:"rate_limit"`
	MaxInFlight   int               `json:"max_in_flight"`
	Ordering      string            `json:"ordering"`
	TimeoutMS     int               `json:"timeout_ms"`
	FailurePolicy string            `json:"failure_policy"`
	Batch         *struct {
		MaxEvents int `json:"max_events"`
		MaxWaitMS int `json:"max_wait_ms"`
	} `json:"batch"`
	Config map[string]any `json:"config"`
}

// editEndpoint opens an endpoint's edit form, lets change fill it, saves
// and waits for the answer (sel: "#saved" or a field's error).
func (r *uiRig) editEndpoint(t *testing.T, id, wait string, change ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	// A fresh route each time, so the form opens anew.
	r.visit(t, "#/endpoints/"+id+"/edit?at="+strconv.FormatInt(time.Now().UnixNano(), 10), "#edit-endpoint")
	steps := append(change, chromedp.Click(chromedp.CSS(`#save-endpoint`)), chromedp.WaitVisible(chromedp.CSS(wait)))
	r.do(t, "editing endpoint "+id, steps...)
}

// TestDashboardEditsEndpoints drives the endpoint form in Chromium: an
// operator changes every field of an endpoint (the filter with the
// builder, then as JSON; a header whose value is write-only), sees the
// API's validation error on the field it concerns, sends a test event of
// a catalogue type with its example payload, and rotates the secret with
// the overlap shown; a Kafka endpoint's config is edited with its
// password kept; a tenant's portal edits its own endpoint, and editing
// another tenant's by id fails.
func TestDashboardEditsEndpoints(t *testing.T) {
	t.Parallel()
	r := newUIRig(t)
	r.do(t, "opening the dashboard", chromedp.Navigate(r.ui), chromedp.WaitVisible(chromedp.CSS(`#signin`)))
	r.signIn(t, testAdminKey)
	var ep struct{ ID string }
	r.admin(t, "POST", "/_herald/v1/endpoints", `{"url":"`+r.receiver.URL+`/a","event_types":["order.*"],"headers":{"X-Api-Key":"hdr-s3cret"}}`, http.StatusCreated, &ep)

	// Every field, changed on the form.
	r.visit(t, "#/endpoints/"+ep.ID, "#edit")
	r.shotAtBothWidths(t, "40-endpoint-detail")
	r.visit(t, "#/endpoints/"+ep.ID+"/edit", "#edit-endpoint")
	if v := eval[string](t, r, `document.querySelector('#header-rows .header-value').value`); v != "" || strings.Contains(r.pageText(t), "hdr-s3cret") {
		t.Fatalf("the form shows a header value (%q)", v)
	}
	if eval[float64](t, r, `document.querySelector('#ep-config').getClientRects().length`) != 0 {
		t.Error("a webhook's form shows the broker config")
	}
	r.shotAtBothWidths(t, "41-endpoint-edit")
	r.editEndpoint(t, ep.ID, "#saved",
		fill(`#ep-url`, r.receiver.URL+"/b"),
		fill(`#ep-name`, "orders"),
		fill(`#ep-description`, "the shop's orders"),
		fill(`#ep-event_types`, "order.*, invoice.paid"),
		fill(`#ep-streams`, "/shop/*"),
		chromedp.Click(chromedp.CSS(`#filter-add`)),
		fill(`.filter-row:last-child .filter-path`, "data.total"),
		fill(`.filter-row:last-child .filter-op`, "gte"),
		fill(`.filter-row:last-child .filter-value`, "10"),
		chromedp.Click(chromedp.CSS(`#filter-add`)),
		fill(`.filter-row:last-child .filter-path`, "data.region"),
		fill(`.filter-row:last-child .filter-op`, "in"),
		fill(`.filter-row:last-child .filter-value`, "eu, us"),
		chromedp.Click(chromedp.CSS(`#header-add`)),
		fill(`.header-row:last-child .header-name`, "X-Team"),
		fill(`.header-row:last-child .header-value`, "blue"),
		fill(`#ep-retry_schedule`, "0s, 5s, 1m"),
		fill(`#ep-rate_limit`, "5"),
		fill(`#ep-max_in_flight`, "3"),
		fill(`#ep-ordering`, "stream"),
		fill(`#ep-batch_max_events`, "10"),
		fill(`#ep-batch_max_wait_ms`, "200"),
		fill(`#ep-failure_policy`, "retry_all"),
		fill(`#ep-timeout_ms`, "4000"))
	var got endpointView
	r.admin(t, "GET", "/_herald/v1/endpoints/"+ep.ID, "", http.StatusOK, &got)
	if got.URL != r.receiver.URL+"/b" || got.Name != "orders" || got.Description != "the shop's orders" ||
		strings.Join(got.EventTypes, ",") != "order.*,invoice.paid" || strings.Join(got.Streams, ",") != "/shop/*" ||
		got.Filter["data.total"] == nil || got.Filter["data.region"] == nil || got.Headers["X-Team"] != "***" ||
		strings.Join(got.RetrySchedule, ",") != "0,5s,1m" || got.RateLimit != 5 || got.MaxInFlight != 3 ||
		got.Ordering != "stream" || got.Batch == nil || got.Batch.MaxEvents != 10 || got.Batch.MaxWaitMS != 200 ||
		got.FailurePolicy != "retry_all" || got.TimeoutMS != 4000 {
		t.Fatalf("after the edit the endpoint is %+v", got)
	}
	stored := r.storedEndpoint(t, ep.ID)
	if stored.Headers["X-Api-Key"] != "hdr-s3cret" || stored.Headers["X-Team"] != "blue" {
		t.Fatalf("stored headers %v: the untouched value must be kept", stored.Headers)
	}

	// The filter as JSON: the builder's rows become the raw filter, which
	// takes what rows cannot say.
	r.editEndpoint(t, ep.ID, "#saved",
		chromedp.Click(chromedp.CSS(`#filter-mode`)),
		chromedp.WaitVisible(chromedp.CSS(`#filter-raw`)),
		chromedp.Poll[chromedp.Void](`document.querySelector('#filter-raw').value.includes('"gte": 10')`),
		fill(`#filter-raw`, `{"or": [{"data.tier": "gold"}, {"data.total": {"gt": 5000}}]}`))
	got = endpointView{} // decoding into a map adds to it
	r.admin(t, "GET", "/_herald/v1/endpoints/"+ep.ID, "", http.StatusOK, &got)
	if _, ok := got.Filter["or"]; !ok || len(got.Filter) != 1 {
		t.Fatalf("the raw filter saved as %v", got.Filter)
	}
	r.visit(t, "#/endpoints/"+ep.ID+"/edit", "#filter-raw")
	if eval[bool](t, r, `!document.querySelector('#filter-raw').hidden`) != true {
		t.Error("a filter with or opens as rows")
	}

	// The API's validation errors, on the field they concern.
	r.editEndpoint(t, ep.ID, "#error-retry_schedule", fill(`#ep-retry_schedule`, "soon"))
	r.waitText(t, "#error-retry_schedule", "duration")
	if !eval[bool](t, r, `document.activeElement.id === 'ep-retry_schedule' && document.activeElement.getAttribute('aria-invalid') === 'true'`) {
		t.Error("the field in error is not focused and marked invalid")
	}
	r.shotAtBothWidths(t, "42-endpoint-field-error")
	r.editEndpoint(t, ep.ID, "#error-filter", chromedp.Click(chromedp.CSS(`#filter-mode`)), fill(`#filter-raw`, `{"data.x": {"near": 1}}`))
	r.waitText(t, "#error-filter", "near")

	// A test event of a catalogue type, its payload from the type's
	// examples.
	r.admin(t, "POST", "/_herald/v1/event-types", `{"name":"order.paid","schema":{"type":"object","required":["total"],"examples":[{"total":42},{"total":7}]}}`, http.StatusCreated, nil)
	r.visit(t, "#/endpoints/"+ep.ID, "#test-form")
	r.do(t, "choosing the type", fill(`#test-type`, "order.paid"))
	if d := eval[string](t, r, `document.querySelector('#test-data').value`); !strings.Contains(d, `"total": 42`) {
		t.Fatalf("the test data is %q, want the type's first example", d)
	}
	r.do(t, "choosing the second example", fill(`#test-example`, "1"), chromedp.Click(chromedp.CSS(`#test`)))
	r.waitText(t, "#test-result", "accepted the test event (order.paid)")
	r.shotAtBothWidths(t, "43-endpoint-test-sent")

	// The rotation's overlap: the old secret signs until a time shown.
	r.do(t, "rotating the secret",
		chromedp.Click(chromedp.CSS(`#rotate`)), chromedp.WaitVisible(chromedp.CSS(`#confirm-yes`)), chromedp.Click(chromedp.CSS(`#confirm-yes`)),
		chromedp.WaitVisible(chromedp.CSS(`#secret`)))
	r.waitText(t, "#action-result", "keeps signing beside it until")

	// A Kafka endpoint: its config edited, the password kept when left
	// masked.
	var kafka struct{ ID string }
	r.admin(t, "POST", "/_herald/v1/endpoints", `{"type":"kafka","config":{"brokers":["127.0.0.1:9092"],"sasl":{"mechanism":"PLAIN","username":"herald","password":"kafka-s3cret"}}}`, http.StatusCreated, &kafka)
	r.visit(t, "#/endpoints/"+kafka.ID+"/edit", "#ep-config")
	if c := eval[string](t, r, `document.querySelector('#ep-config').value`); !strings.Contains(c, `"password": "***"`) {
		t.Fatalf("the config shows %s", c)
	}
	r.editEndpoint(t, kafka.ID, "#saved", fill(`#ep-config`, `{"brokers":["127.0.0.1:9092"],"topic":"shop","sasl":{"mechanism":"PLAIN","username":"herald","password":"***"}}`))
	if k := r.storedEndpoint(t, kafka.ID); !strings.Contains(string(k.Destination), "kafka-s3cret") || !strings.Contains(string(k.Destination), `"shop"`) {
		t.Fatalf("the stored config is %s", k.Destination)
	}
	r.shotAtBothWidths(t, "44-broker-endpoint-edit")

	// A tenant's portal edits its own endpoint; another tenant's, opened
	// by id, is not found, and the form is not shown.
	mine := r.tenantEndpoint(t, matrixTenant, "/mine")
	theirs := r.tenantEndpoint(t, otherTenant, "/theirs")
	tenantKey := r.key(t, []auth.Scope{auth.ScopeEndpointsRead, auth.ScopeEndpointsWrite, auth.ScopeDeliveriesRead, auth.ScopeDeliveriesWrite}, matrixTenant)
	r.do(t, "signing out", chromedp.Evaluate[chromedp.Void](`sessionStorage.clear()`))
	r.signIn(t, tenantKey)
	r.visit(t, "#/endpoints/"+mine+"/edit", "#edit-endpoint")
	if eval[float64](t, r, `document.querySelectorAll('#ep-tenant').length`) != 0 {
		t.Error("the portal's form offers a tenant")
	}
	r.editEndpoint(t, mine, "#saved", fill(`#ep-description`, "edited in the portal"), fill(`#ep-event_types`, "order.created"))
	got = endpointView{}
	r.admin(t, "GET", "/_herald/v1/endpoints/"+mine, "", http.StatusOK, &got)
	if got.Description != "edited in the portal" || strings.Join(got.EventTypes, ",") != "order.created" {
		t.Fatalf("the portal's edit saved %+v", got)
	}
	r.shotAtBothWidths(t, "45-portal-endpoint-edit")
	r.visit(t, "#/endpoints/"+theirs+"/edit", "main .error")
	r.waitText(t, "main .error", "does not exist")
	if eval[float64](t, r, `document.querySelectorAll('#edit-endpoint').length`) != 0 {
		t.Error("the portal shows a form for another tenant's endpoint")
	}
	got = endpointView{}
	r.admin(t, "GET", "/_herald/v1/endpoints/"+theirs, "", http.StatusOK, &got)
	if got.Description != "" {
		t.Errorf("another tenant's endpoint changed: %+v", got)
	}
	r.noExceptions(t)
}
