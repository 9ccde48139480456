//go:build browser

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/heraldstreams/herald/internal/testenv"
)

// artefactsEnv names the directory the dashboard's screenshots are saved
// in; by default a new temporary directory, whose path the test logs.
const artefactsEnv = "HERALD_UI_ARTEFACTS"

// uiRig is a Herald with access control on (its circuit breaker trips
// after breakerThreshold failures in a row), a webhook receiver that fails
// on demand, and a headless Chromium on the dashboard.
type uiRig struct {
	*matrix
	ctx   context.Context
	ui    string
	shots string
	// failing makes the receiver answer 500; breakerDown does so for the
	// paths under /breaker only. Under /hang it never answers, until the
	// request ends or hang is closed.
	failing     atomic.Bool
	breakerDown atomic.Bool
	hang        chan struct{}
	received    atomic.Int64
	errsMu      sync.Mutex
	exceptions  []string
}

const breakerThreshold = 3

// newUIRig starts the rig; flags are more flags of herald serve.
func newUIRig(t *testing.T, flags ...string) *uiRig {
	t.Helper()
	browser := testenv.NeedChromium(t)
	r := &uiRig{hang: make(chan struct{})}
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if _, err := io.Copy(io.Discard, req.Body); err != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		r.received.Add(1)
		switch {
		case strings.HasPrefix(req.URL.Path, "/hang"):
			select {
			case <-req.Context().Done():
			case <-r.hang:
			}
			w.WriteHeader(http.StatusServiceUnavailable)
		case r.failing.Load() || strings.HasPrefix(req.URL.Path, "/breaker") && r.breakerDown.Load():
			http.Error(w, "receiver down for the test", http.StatusInternalServerError)
		default:
			w.WriteHeader(http.StatusNoContent)
		}
	}))
	t.Cleanup(receiver.Close)
	t.Cleanup(func() { close(r.hang) }) // before the receiver closes: it waits for its requests
	a := startHerald(t, append([]string{"--webhook-allow-cidrs", "127.0.0.0/8", "--delivery-retry-schedule", "0,1h",
		"--delivery-breaker-threshold", strconv.Itoa(breakerThreshold)}, flags...)...)
	base := "http://" + a.ln.Addr().String()
	r.matrix = &matrix{t: t, app: a, base: base, receiver: receiver}
	r.ui = base + "/_herald/ui/"

	r.shots = os.Getenv(artefactsEnv)
	if r.shots == "" {
		var err error
		if r.shots, err = os.MkdirTemp("", "herald-ui-"); err != nil {
			t.Fatal(err)
		}
	} else if err := os.MkdirAll(r.shots, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Logf("dashboard screenshots: %s", r.shots)

	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(browser), chromedp.NoSandbox, chromedp.WindowSize(1280, 800))
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelCtx := chromedp.NewContext(allocCtx)
	t.Cleanup(func() {
		cancelCtx()
		cancelAlloc()
	})
	if err := chromedp.Do(ctx); err != nil { // starts the browser
		t.Fatalf("starting %s: %v", browser, err)
	}
	if err := chromedp.Listen(ctx, func(ev any) {
		if e, ok := ev.(*runtime.EventExceptionThrown); ok {
			r.errsMu.Lock()
			d := e.ExceptionDetails
			msg := d.Text
			if d.Exception != nil {
				msg += " " + d.Exception.Description
			}
			r.exceptions = append(r.exceptions, fmt.Sprintf("%s (%s:%d)", msg, d.URL, d.LineNumber+1))
			r.errsMu.Unlock()
		}
	}); err != nil {
		t.Fatal(err)
	}
	r.ctx = ctx
	return r
}

// do runs browser steps, each within 20 s.
func (r *uiRig) do(t *testing.T, what string, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	ctx, cancel := context.WithTimeout(r.ctx, 20*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		t.Fatalf("%s: %v; the page shows: %s", what, err, r.mainText())
	}
}

// mainText is what the page's main element shows, for a failure's
// message.
func (r *uiRig) mainText() string {
	ctx, cancel := context.WithTimeout(r.ctx, 5*time.Second)
	defer cancel()
	text, err := chromedp.Run(ctx, chromedp.Evaluate[string](`location.href + "\n" + document.querySelector('main').innerText`))
	if err != nil {
		return "(unreadable: " + err.Error() + ")"
	}
	return text
}

// eval evaluates a JavaScript expression into out.
func eval[T any](t *testing.T, r *uiRig, expr string) T {
	t.Helper()
	ctx, cancel := context.WithTimeout(r.ctx, 10*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		t.Fatalf("evaluating %s: %v", expr, err)
	}
	return v
}

// waitText waits until the element at sel shows want.
func (r *uiRig) waitText(t *testing.T, sel, want string) {
	t.Helper()
	js, err := json.Marshal([]string{sel, want})
	if err != nil {
		t.Fatal(err)
	}
	expr := fmt.Sprintf(`(([s, w]) => { const e = document.querySelector(s); return !!e && e.innerText.includes(w); })(%s)`, js)
	r.do(t, "waiting for "+sel+" to show "+want, chromedp.Poll[chromedp.Void](expr, chromedp.WithPollingTimeout(15*time.Second)))
}

// visit opens a view of the dashboard (a fragment route such as
// "#/endpoints") and waits until it has rendered sel.
func (r *uiRig) visit(t *testing.T, route, sel string) {
	t.Helper()
	js, err := json.Marshal(route)
	if err != nil {
		t.Fatal(err)
	}
	r.do(t, "opening "+route, chromedp.Evaluate[chromedp.Void]("location.hash = "+string(js)), chromedp.WaitVisible(chromedp.CSS(sel)))
}

// until reopens a route until its sel shows want: the views show what
// was true when they were opened.
func (r *uiRig) until(t *testing.T, route, sel, want string) {
	t.Helper()
	expr, err := json.Marshal([]string{sel, want})
	if err != nil {
		t.Fatal(err)
	}
	sep := "?"
	if strings.Contains(route, "?") {
		sep = "&"
	}
	for i, deadline := 0, time.Now().Add(15*time.Second); ; i++ {
		r.visit(t, route+sep+"n="+strconv.Itoa(i), sel)
		if eval[bool](t, r, fmt.Sprintf(`(([s, w]) => document.querySelector(s).innerText.includes(w))(%s)`, expr)) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never showed %q in %s: %s", route, want, sel, eval[string](t, r, "document.querySelector('main').innerText"))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// screenshot saves the page as <name>.png in the artefact directory.
func (r *uiRig) screenshot(t *testing.T, name string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(r.ctx, 20*time.Second)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	if err := os.WriteFile(filepath.Join(r.shots, name+".png"), png, 0o644); err != nil {
		t.Fatal(err)
	}
}

// refresh clicks the view's Refresh button and waits until the view is
// loaded again, with the keyboard's focus back on the button.
func (r *uiRig) refresh(t *testing.T) {
	t.Helper()
	r.do(t, "refreshing",
		chromedp.Evaluate[chromedp.Void](`document.getElementById('loaded').dataset.old = 'yes'`),
		chromedp.Click(chromedp.CSS(`#refresh`)),
		chromedp.Poll[chromedp.Void](`(() => { const l = document.getElementById('loaded'); return !!l && !l.dataset.old && document.activeElement.id === 'refresh'; })()`,
			chromedp.WithPollingTimeout(15*time.Second)))
}

// refreshUntil refreshes the shown view until sel shows want.
func (r *uiRig) refreshUntil(t *testing.T, sel, want string) {
	t.Helper()
	expr, err := json.Marshal([]string{sel, want})
	if err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(15 * time.Second); !eval[bool](t, r, fmt.Sprintf(`(([s, w]) => document.querySelector(s).innerText.includes(w))(%s)`, expr)); {
		if time.Now().After(deadline) {
			t.Fatalf("refreshing never showed %q in %s: %s", want, sel, eval[string](t, r, "document.querySelector('main').innerText"))
		}
		time.Sleep(100 * time.Millisecond)
		r.refresh(t)
	}
}

// rows counts the rows of the table in sel.
func (r *uiRig) rows(t *testing.T, sel string) int {
	t.Helper()
	js, err := json.Marshal(sel + " tbody tr")
	if err != nil {
		t.Fatal(err)
	}
	return int(eval[float64](t, r, "document.querySelectorAll("+string(js)+").length"))
}

// waitRows waits until the table in sel has n rows and shows want.
func (r *uiRig) waitRows(t *testing.T, sel string, n int, want string) {
	t.Helper()
	js, err := json.Marshal([]string{sel, want})
	if err != nil {
		t.Fatal(err)
	}
	expr := fmt.Sprintf(`(([s, w]) => { const e = document.querySelector(s); return !!e && e.querySelectorAll('tbody tr').length === %d && e.innerText.includes(w); })(%s)`, n, js)
	r.do(t, fmt.Sprintf("waiting for %s to show %d rows with %s", sel, n, want), chromedp.Poll[chromedp.Void](expr, chromedp.WithPollingTimeout(15*time.Second)))
}

// loadMore checks that the paged list in sel shows a first page of 100
// rows, loads the rest with its Load more button and checks that it then
// shows all want rows, each once, with the keyboard's focus on the count
// where the button was.
func (r *uiRig) loadMore(t *testing.T, sel string, want int) {
	t.Helper()
	if n := r.rows(t, sel); n != 100 {
		t.Errorf("%s: the first page has %d rows, want 100", sel, n)
	}
	r.do(t, "loading more in "+sel, chromedp.Click(chromedp.CSS(sel+`-more`)), chromedp.WaitNotVisible(chromedp.CSS(sel+`-more`)))
	all := fmt.Sprintf("Showing all %d", want)
	r.waitFocus(t, sel+` [role=status]`, all)
	if n := r.rows(t, sel); n != want {
		t.Errorf("%s: after Load more %d rows, want %d", sel, n, want)
	}
	js, err := json.Marshal(sel + " tbody a")
	if err != nil {
		t.Fatal(err)
	}
	if n := eval[float64](t, r, `new Set([...document.querySelectorAll(`+string(js)+`)].map(a => a.textContent)).size`); int(n) != want {
		t.Errorf("%s: %v different ids in %d rows", sel, n, want)
	}
}

// waitFocus waits until the focused element matches sel and shows text.
func (r *uiRig) waitFocus(t *testing.T, sel, text string) {
	t.Helper()
	js, err := json.Marshal([]string{sel, text})
	if err != nil {
		t.Fatal(err)
	}
	r.do(t, "waiting for the focus on "+sel, chromedp.Poll[chromedp.Void](
		fmt.Sprintf(`(([s, w]) => !!document.activeElement && document.activeElement.matches(s) && document.activeElement.innerText.includes(w))(%s)`, js),
		chromedp.WithPollingTimeout(15*time.Second)))
}

// signIn signs in on the sign-in form with key.
func (r *uiRig) signIn(t *testing.T, key string) {
	t.Helper()
	r.do(t, "signing in",
		chromedp.Navigate(r.ui),
		chromedp.WaitVisible(chromedp.CSS(`#signin input[name=key]`)),
		chromedp.SendKeys(chromedp.CSS(`#signin input[name=key]`), key),
		chromedp.Click(chromedp.CSS(`#signin button[type=submit]`)),
		chromedp.WaitVisible(chromedp.CSS(`#nav a`)))
}

// keyOffer checks the question a #key= link asks before signing in: the
// tenant and scopes its key would sign in as, and the tenant of the
// session it would replace (signedIn; "" for none). Until it is answered
// nothing is signed in with the link's key and no view is shown.
func (r *uiRig) keyOffer(t *testing.T, tenant, scopes, signedIn string) {
	t.Helper()
	r.waitText(t, "#key-offer-tenant", tenant)
	r.waitText(t, "#key-offer-scopes", scopes)
	if signedIn == "" {
		if k := eval[any](t, r, `sessionStorage.getItem('herald.key')`); k != nil {
			t.Errorf("before the question is answered sessionStorage holds %v", k)
		}
		if n := eval[float64](t, r, `document.querySelectorAll('#key-offer-current').length`); n != 0 {
			t.Error("the question speaks of a session when there is none")
		}
	} else {
		r.waitText(t, "#key-offer-current", signedIn)
	}
	if !eval[bool](t, r, `document.getElementById('nav').hidden`) || eval[float64](t, r, `document.querySelectorAll('#endpoint-list').length`) != 0 {
		t.Error("a view is shown before the link's question is answered")
	}
	if eval[float64](t, r, `document.getElementById('who').getClientRects().length`) != 0 {
		t.Error("the session's name and Sign out are shown beside the link's question")
	}
	r.waitFocus(t, "#key-offer h1", "Sign in from a link?")
}

// pageText is everything the page shows and holds: its text, and the
// values and attributes of its elements.
func (r *uiRig) pageText(t *testing.T) string {
	return eval[string](t, r, `document.body.innerText + "\n" + document.documentElement.outerHTML`)
}

func (r *uiRig) publish(t *testing.T, typ, tenant string, n int) {
	t.Helper()
	body := fmt.Sprintf(`{"type":%q,"data":{"n":%d},"tenant":%q}`, typ, n, tenant)
	r.admin(t, "POST", "/_herald/v1/events", body, http.StatusAccepted, nil)
}

// TestDashboardInBrowser drives the dashboard in headless Chromium against
// a real Herald: an operator signs in, creates an endpoint, watches a
// delivery arrive, sees a failing one's attempts, retries it and refreshes
// until it is delivered, pauses and resumes the endpoint, sends it a test
// event, replays its events after confirming, rotates its secret (shown
// once), deletes another, re-enables one the circuit breaker disabled,
// tails a stream, lists the streams under a prefix and opens one, lists
// subscriptions and sees a consumer stuck waking on the overview, which
// refreshes itself, and consumers' offsets, tails and deadlines; signs
// in and reaches the endpoints with the keyboard alone; then a tenant's
// key sees its own endpoints and deliveries and nothing of another
// tenant's, and the event types read-only, on a desktop and on a phone,
// and so does the portal opened at a minted portal token's URL once the
// visitor has seen whom it signs in as and said yes (a link never signs
// in silently, nor replaces a session unasked); a tenant with more than a page of endpoints and deliveries
// loads the rest.
// streamTail is a stream's Stream-Next-Offset, from a HEAD of it.
func (r *uiRig) streamTail(t *testing.T, path string) string {
	t.Helper()
	req, err := http.NewRequest(http.MethodHead, r.base+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+testAdminKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	tail := resp.Header.Get("Stream-Next-Offset")
	if resp.StatusCode != http.StatusOK || tail == "" {
		t.Fatalf("HEAD %s: %d, Stream-Next-Offset %q", path, resp.StatusCode, tail)
	}
	return tail
}

// consumerDetail opens a subscription's consumers and the detail of
// consumer id.
func (r *uiRig) consumerDetail(t *testing.T, subscription, id string) {
	t.Helper()
	js, err := json.Marshal(id)
	if err != nil {
		t.Fatal(err)
	}
	r.visit(t, "#/subscriptions/"+subscription+"?at="+strconv.FormatInt(time.Now().UnixNano(), 10), "main table")
	r.do(t, "opening consumer "+id,
		chromedp.Evaluate[chromedp.Void](`[...document.querySelectorAll('main tbody tr')].find(tr => tr.cells[0].textContent === `+string(js)+`).querySelector('button.consumer-details').click()`),
		chromedp.WaitVisible(chromedp.CSS(`#consumer-detail table`)))
}

// waitDeliveries waits until the endpoint has at least n deliveries.
func (r *uiRig) waitDeliveries(t *testing.T, endpoint string, n int) {
	t.Helper()
	for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		var list struct{ Data []struct{ ID string } }
		r.admin(t, "GET", "/_herald/v1/endpoints/"+endpoint+"/deliveries?limit=1000", "", http.StatusOK, &list)
		if len(list.Data) >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the endpoint has %d deliveries, want %d", len(list.Data), n)
		}
	}
}

// tenantEndpoint makes an endpoint of tenant for order events and returns
// its id.
func (r *uiRig) tenantEndpoint(t *testing.T, tenant, path string) string {
	t.Helper()
	var ep struct{ ID string }
	r.admin(t, "POST", "/_herald/v1/endpoints", `{"url":"`+r.receiver.URL+path+`","tenant":"`+tenant+`","event_types":["order.*"]}`, http.StatusCreated, &ep)
	return ep.ID
}
