package e2e

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"
)

// waitLog waits until rc accepted n events and returns them in order.
func (rc *eventReceiver) waitLog(n int, timeout time.Duration, logs interface{ String() string }) []receivedEvent {
	rc.t.Helper()
	deadline := time.After(timeout)
	for {
		rc.mu.Lock()
		got, bad := append([]receivedEvent(nil), rc.log...), append([]string(nil), rc.bad...)
		rc.mu.Unlock()
		if len(bad) > 0 {
			rc.t.Fatalf("requests that do not verify: %v", bad)
		}
		if len(got) >= n {
			return got
		}
		select {
		case <-rc.notify:
		case <-deadline:
			rc.t.Fatalf("%d of %d events delivered: %+v\n%s", len(got), n, got, logs)
		}
	}
}

// Hostile tenants and one event id: globex publishes order-1001, acme
// publishes the same id and gets a new event of its own (never
// globex's data); acme taking an id first does not stop globex's event;
// each tenant's endpoint receives its own event, and the platform's
// endpoint, which receives every tenant's, receives both.
func TestHostileEventIDsAreUniquePerTenant(t *testing.T) {
	t.Parallel()
	k := startKeyed(t, t.TempDir(), deliveryFlags...)
	acme, globex := k.newKey("acme"), k.newKey("globex")
	recA, srvA := newEventReceiver(t)
	recG, srvG := newEventReceiver(t)
	recP, srvP := newEventReceiver(t)
	recA.secret = k.createEndpoint(acme, `{"url":"`+srvA.URL+`"}`).Secret
	recG.secret = k.createEndpoint(globex, `{"url":"`+srvG.URL+`"}`).Secret
	recP.secret = k.createEndpoint(tenantAdminKey, `{"url":"`+srvP.URL+`"}`).Secret

	type published struct {
		Event struct {
			ID   string          `json:"id"`
			Data json.RawMessage `json:"data"`
		} `json:"event"`
		Duplicate bool `json:"duplicate"`
	}
	publish := func(key, id string, i, status int) published {
		t.Helper()
		var out published
		resp, raw := k.call(key, "POST", "/_herald/v1/events", `{"id":"`+id+`","type":"order.paid","data":{"i":`+strconv.Itoa(i)+`}}`, &out)
		if resp.StatusCode != status {
			t.Fatalf("publish %s (i=%d): %d %s, want %d", id, i, resp.StatusCode, raw, status)
		}
		return out
	}
	publish(globex, "order-1001", 1, http.StatusAccepted)
	if got := publish(acme, "order-1001", 2, http.StatusAccepted); got.Duplicate || string(got.Event.Data) != `{"i":2}` {
		t.Fatalf("acme's publish of globex's id = %+v, want a new event of acme", got)
	}
	if got := publish(acme, "order-1001", 3, http.StatusOK); !got.Duplicate || string(got.Event.Data) != `{"i":2}` {
		t.Fatalf("acme's repeat = %+v, want acme's own event as first seen", got)
	}
	// acme takes an id first: globex's real event is still delivered.
	publish(acme, "order-2002", 4, http.StatusAccepted)
	publish(globex, "order-2002", 5, http.StatusAccepted)
	if got := publish(globex, "order-2002", 6, http.StatusOK); string(got.Event.Data) != `{"i":5}` {
		t.Fatalf("globex's repeat = %+v, want globex's own event", got)
	}

	is := func(who string, got []receivedEvent, want ...int) {
		t.Helper()
		var seen []int
		for _, ev := range got {
			seen = append(seen, ev.Data.I)
		}
		if len(seen) != len(want) {
			t.Fatalf("%s received %v, want %v", who, seen, want)
		}
		for _, i := range want {
			found := false
			for _, s := range seen {
				found = found || s == i
			}
			if !found {
				t.Fatalf("%s received %v, want %v", who, seen, want)
			}
		}
	}
	is("globex", recG.waitLog(2, 20*time.Second, k.logs), 1, 5)
	is("acme", recA.waitLog(2, 20*time.Second, k.logs), 2, 4)
	is("the platform", recP.waitLog(4, 20*time.Second, k.logs), 1, 2, 4, 5)
}

// headerReceiver records the requests it gets.
type headerReceiver struct {
	got chan http.Header
}

func newHeaderReceiver(t *testing.T) (*headerReceiver, *httptest.Server) {
	h := &headerReceiver{got: make(chan http.Header, 64)}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.got <- r.Header.Clone()
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(srv.Close)
	return h, srv
}

func (h *headerReceiver) next(t *testing.T, logs interface{ String() string }) http.Header {
	t.Helper()
	select {
	case hdr := <-h.got:
		return hdr
	case <-time.After(20 * time.Second):
		t.Fatalf("no request after 20s\n%s", logs)
		return nil
	}
}

// A credential that may change an endpoint's URL cannot have its hidden
// header values sent to a host of its choosing: moving the URL to
// another origin drops them (the answer names them), the new host
// receives none, and a value set again in the same request is kept.
func TestHostileURLChangeDropsHeaderValues(t *testing.T) {
	t.Parallel()
	k := startKeyed(t, t.TempDir(), deliveryFlags...)
	acme := k.newKey("acme")
	homeRec, home := newHeaderReceiver(t)
	thief, thiefSrv := newHeaderReceiver(t)
	ep := k.createEndpoint(tenantAdminKey, `{"url":"`+home.URL+`","tenant":"acme","headers":{"X-Api-Key":"platform-secret","X-Region":"eu"}}`)

	var patched struct {
		Headers        map[string]string `json:"headers"`
		DroppedHeaders []string          `json:"dropped_headers"`
	}
	resp, raw := k.call(acme, "PATCH", "/_herald/v1/endpoints/"+ep.ID, `{"url":"`+thiefSrv.URL+`/collect","headers":{"X-Api-Key":"***","X-Region":"us"}}`, &patched)
	if resp.StatusCode != http.StatusOK || strings.Join(patched.DroppedHeaders, ",") != "X-Api-Key" || strings.Contains(raw, "platform-secret") {
		t.Fatalf("PATCH to another origin: %d %s, want X-Api-Key dropped", resp.StatusCode, raw)
	}
	if resp, raw := k.call(acme, "POST", "/_herald/v1/endpoints/"+ep.ID+"/test", "", nil); resp.StatusCode != http.StatusOK {
		t.Fatalf("test: %d %s", resp.StatusCode, raw)
	}
	hdr := thief.next(t, k.logs)
	if hdr.Get("X-Api-Key") != "" || hdr.Get("X-Region") != "us" {
		t.Fatalf("the new host received %v", hdr)
	}
	if resp, raw := k.call(acme, "POST", "/_herald/v1/events", `{"type":"order.paid","data":{}}`, nil); resp.StatusCode != http.StatusAccepted {
		t.Fatalf("publish: %d %s", resp.StatusCode, raw)
	}
	if hdr := thief.next(t, k.logs); hdr.Get("X-Api-Key") != "" {
		t.Fatalf("a delivery to the new host carried the dropped value: %v", hdr)
	}
	// Set again in the request that moves it, a value goes along; sent
	// back masked, it does not.
	resp, raw = k.call(acme, "PATCH", "/_herald/v1/endpoints/"+ep.ID, `{"url":"`+home.URL+`","headers":{"X-Api-Key":"acme-own-key","X-Region":"***"}}`, &patched)
	if resp.StatusCode != http.StatusOK || strings.Join(patched.DroppedHeaders, ",") != "X-Region" {
		t.Fatalf("PATCH back: %d %s, want X-Region dropped", resp.StatusCode, raw)
	}
	if resp, raw := k.call(acme, "POST", "/_herald/v1/endpoints/"+ep.ID+"/test", "", nil); resp.StatusCode != http.StatusOK {
		t.Fatalf("test: %d %s", resp.StatusCode, raw)
	}
	if hdr := homeRec.next(t, k.logs); hdr.Get("X-Api-Key") != "acme-own-key" || hdr.Get("X-Region") != "" {
		t.Fatalf("back home the endpoint sent %v", hdr)
	}
}
