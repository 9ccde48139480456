package dispatch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/heraldstreams/herald/delivery"
	"github.com/heraldstreams/herald/delivery/internal/deliverytest"
	"github.com/heraldstreams/herald/store"
)

// Issue item 5: with ordering "stream" a receiver sees each stream's
// events in offset order although some attempts fail: event k+1 is not
// sent before event k is delivered.
func TestEngineOrderingStreamAcrossFailures(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t, func(c *EngineConfig) {
			c.RetrySchedule = delivery.Schedule{0, time.Second, 2 * time.Second, 4 * time.Second}
		})
		r.endpoint(&CreateEndpointParams{Active: true, Config: delivery.EndpointConfig{Ordering: delivery.OrderingStream, MaxInFlight: 8}})
		failedOnce := map[string]bool{}
		var mu sync.Mutex
		r.rc.SetRespond(func(n int, ev delivery.Event) (int, map[string]string) {
			mu.Lock()
			defer mu.Unlock()
			var d struct{ I int }
			if err := json.Unmarshal(ev.Data, &d); err != nil {
				t.Errorf("data %s: %v", ev.Data, err)
			}
			if d.I%3 == 0 && !failedOnce[ev.ID] {
				failedOnce[ev.ID] = true
				return http.StatusInternalServerError, nil
			}
			return http.StatusOK, nil
		})
		const n = 12
		for i := range n {
			for _, s := range []string{"/orders/a", "/orders/b"} {
				r.publish("order.updated", s, fmt.Sprintf(`{"i":%d,"s":%q}`, i, s))
			}
		}
		synctest.Wait()
		time.Sleep(time.Minute)
		synctest.Wait()
		got := r.rc.Requests()
		// Per stream: requests are for event 0 (maybe twice), then 1, ...
		// never an event before the previous one's success.
		next := map[string]int{}
		for _, g := range got {
			var d struct {
				I int
				S string
			}
			if err := json.Unmarshal(g.Event.Data, &d); err != nil {
				t.Fatal(err)
			}
			switch {
			case d.I == next[d.S]:
				if !(d.I%3 == 0 && g.At.Equal(firstAttempt(got, g.Event.ID))) {
					next[d.S]++ // this attempt succeeded
				}
			default:
				t.Fatalf("stream %s: got event %d while waiting for %d", d.S, d.I, next[d.S])
			}
		}
		if next["/orders/a"] != n || next["/orders/b"] != n {
			t.Fatalf("delivered %v, want %d per stream", next, n)
		}
		if len(got) != 2*n+2*(n/3) {
			t.Fatalf("%d requests, want %d", len(got), 2*n+2*(n/3))
		}
	})
}

func firstAttempt(got []deliverytest.Received, id string) time.Time {
	for _, g := range got {
		if g.Event.ID == id {
			return g.At
		}
	}
	return time.Time{}
}

// blockingReceiver holds every request until released, counting how many
// are held at once.
type blockingReceiver struct {
	mu      sync.Mutex
	held    int
	maxHeld int
	release chan struct{}
}

func (b *blockingReceiver) hold() {
	b.mu.Lock()
	b.held++
	b.maxHeld = max(b.maxHeld, b.held)
	b.mu.Unlock()
	<-b.release
	b.mu.Lock()
	b.held--
	b.mu.Unlock()
}

// max_in_flight per endpoint, the endpoint's share of the global bound
// and the global bound hold.
func TestEngineInFlightLimits(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t, func(c *EngineConfig) { c.GlobalMaxInFlight = 8 }) // a share is 2
		b := &blockingReceiver{release: make(chan struct{})}
		r.rc.SetRespond(func(int, delivery.Event) (int, map[string]string) {
			b.hold()
			return http.StatusOK, nil
		})
		r.endpoint(&CreateEndpointParams{Active: true, Config: delivery.EndpointConfig{MaxInFlight: 1, EventTypes: []string{"one.*"}}})
		for i := range 6 {
			r.publish("one.x", "", fmt.Sprintf(`{"i":%d}`, i))
		}
		synctest.Wait()
		if b.maxHeld != 1 {
			t.Fatalf("%d in flight, want max_in_flight 1", b.maxHeld)
		}
		// A max_in_flight over the share gets the share.
		r.endpoint(&CreateEndpointParams{Active: true, Config: delivery.EndpointConfig{MaxInFlight: 10, EventTypes: []string{"two.*"}}})
		for i := range 6 {
			r.publish("two.x", "", fmt.Sprintf(`{"i":%d}`, i))
		}
		synctest.Wait()
		if b.maxHeld != 3 {
			t.Fatalf("%d in flight, want 1 + the share 2", b.maxHeld)
		}
		// Endpoints together stop at the global bound.
		for _, typ := range []string{"three", "four", "five"} {
			r.endpoint(&CreateEndpointParams{Active: true, Config: delivery.EndpointConfig{EventTypes: []string{typ + ".*"}}})
			for i := range 3 {
				r.publish(typ+".x", "", fmt.Sprintf(`{"i":%d}`, i))
			}
		}
		synctest.Wait()
		if b.maxHeld != 8 {
			t.Fatalf("%d in flight, want the global bound 8", b.maxHeld)
		}
		close(b.release)
		synctest.Wait()
		if n := len(r.rc.Requests()); n != 21 {
			t.Fatalf("%d requests, want 21", n)
		}
	})
}

// Issue item 6: rate_limit caps deliveries per second.
func TestEngineRateLimit(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t, nil)
		r.endpoint(&CreateEndpointParams{Active: true, Config: delivery.EndpointConfig{RateLimit: 4}})
		start := time.Now()
		for i := range 9 {
			r.publish("a.b", "", fmt.Sprintf(`{"i":%d}`, i))
		}
		synctest.Wait()
		time.Sleep(10 * time.Second)
		synctest.Wait()
		got := r.rc.Requests()
		if len(got) != 9 {
			t.Fatalf("%d requests, want 9", len(got))
		}
		for i, g := range got {
			if min := time.Duration(i) * 250 * time.Millisecond; g.At.Sub(start) < min {
				t.Fatalf("request %d after %v, faster than 4/s allows (%v)", i, g.At.Sub(start), min)
			}
		}
		if last := got[8].At.Sub(start); last > 2100*time.Millisecond {
			t.Fatalf("9 requests at 4/s took %v", last)
		}
	})
}

// Events are matched by type patterns, stream patterns, field filters and
// tenant; messages that are not events (no string type) are skipped; an
// event appended to a stream without an id gets a stable derived one.
func TestEngineMatching(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t, nil)
		ep := r.endpoint(&CreateEndpointParams{Active: true, Config: delivery.EndpointConfig{
			EventTypes: []string{"scenario.*", "tool.done"},
			Streams:    []string{"/shops/*/events"},
			Filter:     json.RawMessage(`{"data.region": {"in": ["eu", "uk"]}}`),
			Tenant:     "acme",
		}})
		ctx := context.Background()
		pub := func(typ, stream, tenant, data string) {
			if _, err := r.e.Publish(ctx, &PublishParams{Event: &delivery.Event{Type: typ, Data: json.RawMessage(data)}, Stream: stream, Tenant: tenant}); err != nil {
				t.Fatal(err)
			}
		}
		pub("scenario.started", "/shops/a/events", "acme", `{"region":"eu","n":1}`) // yes
		pub("scenario.started", "/shops/a/events", "other", `{"region":"eu"}`)      // other tenant
		pub("scenario.started", "/elsewhere", "acme", `{"region":"eu"}`)            // other stream
		pub("user.created", "/shops/a/events", "acme", `{"region":"eu"}`)           // other type
		pub("tool.done", "/shops/b/events", "acme", `{"region":"us"}`)              // filtered out
		pub("tool.done", "/shops/b/events", "acme", `{"region":"uk","n":2}`)        // yes
		// Plain appends: a non-event, then an event without id.
		if _, err := r.st.StreamAppend(ctx, &store.StreamAppendParams{Path: "/shops/b/events", ContentType: "application/json",
			Data: []byte("{\"hello\":1}\n{\"type\":\"scenario.x\",\"tenant\":\"acme\",\"data\":{\"region\":\"eu\",\"n\":3}}\n"), Messages: 2, Now: time.Now()}); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		got := r.rc.Requests()
		var ns []string
		for _, g := range got {
			ns = append(ns, string(g.Event.Data))
		}
		if len(got) != 3 {
			t.Fatalf("received %v", ns)
		}
		var last delivery.Event
		for _, g := range got {
			if g.Event.Type == "scenario.x" {
				last = g.Event
			}
			if g.Event.Timestamp.IsZero() {
				t.Fatalf("event without a timestamp: %s", g.Body)
			}
		}
		if last.ID == "" || string(last.Data) != `{"region":"eu","n":3}` {
			t.Fatalf("derived event = %+v", last)
		}
		// The id is stable: a replay sends the same id.
		res, err := r.e.Replay(ctx, &ReplayParams{EndpointID: ep.ID, Stream: "/shops/b/events", HasFrom: true})
		if err != nil || res.Queued != 2 {
			t.Fatalf("replay = %+v, %v", res, err)
		}
		synctest.Wait()
		again := r.rc.Requests()
		if len(again) != 5 || (again[3].Event.ID != last.ID && again[4].Event.ID != last.ID) {
			t.Fatalf("replayed %d requests, none with the derived id %q", len(again), last.ID)
		}
	})
}

// Replay since a time re-delivers the matching events from then on;
// retention prunes finished deliveries and their attempts.
func TestEngineReplayAndRetention(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t, func(c *EngineConfig) { c.Retention = time.Hour })
		ep := r.endpoint(&CreateEndpointParams{Active: true})
		ctx := context.Background()
		r.publish("a.one", "/s1", `{}`)
		time.Sleep(time.Minute)
		since := time.Now()
		r.publish("a.two", "/s1", `{}`)
		r.publish("a.three", "/s2", `{}`)
		synctest.Wait()
		if n := len(r.rc.Requests()); n != 3 {
			t.Fatalf("%d requests", n)
		}
		res, err := r.e.Replay(ctx, &ReplayParams{EndpointID: ep.ID, Since: since})
		if err != nil || res.Queued != 2 {
			t.Fatalf("replay = %+v, %v", res, err)
		}
		synctest.Wait()
		got := r.rc.Requests()
		if len(got) != 5 || got[3].Event.Type == "a.one" || got[4].Event.Type == "a.one" {
			t.Fatalf("replayed %d requests", len(got))
		}
		if _, err := r.e.Replay(ctx, &ReplayParams{EndpointID: ep.ID, Stream: "/nope/x", HasFrom: true}); err != nil {
			t.Fatalf("replay of an unknown stream: %v", err)
		}

		time.Sleep(2 * time.Hour)
		r.publish("a.four", "/s1", `{}`)
		synctest.Wait()
		n, err := r.e.PruneOnce(ctx)
		if err != nil || n != 3 {
			t.Fatalf("pruned %d, %v; want the 3 finished more than an hour ago", n, err)
		}
		left := r.deliveries(ep.ID)
		if len(left) != 1 || left[0].EventType != "a.four" {
			t.Fatalf("left %+v", left)
		}
	})
}

// Endpoints without a schedule of their own follow the engine's
// configured default; one with a schedule follows it.
func TestEngineScheduleDefaults(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t, func(c *EngineConfig) { c.RetrySchedule = delivery.Schedule{0, time.Second} })
		r.rc.SetRespond(func(int, delivery.Event) (int, map[string]string) { return http.StatusInternalServerError, nil })
		def := r.endpoint(&CreateEndpointParams{Active: true, Config: delivery.EndpointConfig{EventTypes: []string{"def.*"}}})
		own := r.endpoint(&CreateEndpointParams{Active: true, Config: delivery.EndpointConfig{EventTypes: []string{"own.*"}, RetrySchedule: delivery.Schedule{0, time.Minute, time.Minute}}})
		r.publish("def.x", "", `{}`)
		r.publish("own.x", "", `{}`)
		synctest.Wait()
		time.Sleep(time.Hour)
		synctest.Wait()
		if d := r.deliveries(def.ID); len(d) != 1 || d[0].Attempts != 2 || d[0].Status != store.DeliveryExhausted {
			t.Fatalf("default schedule: %+v", d)
		}
		if d := r.deliveries(own.ID); len(d) != 1 || d[0].Attempts != 3 {
			t.Fatalf("own schedule: %+v", d)
		}
	})
}

// Stop lets in-flight deliveries finish and records their outcome; a
// send still running when Stop's context ends is cancelled and left to
// its lease.
func TestEngineStopFinishesInFlight(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t, nil)
		ep := r.endpoint(&CreateEndpointParams{Active: true})
		b := &blockingReceiver{release: make(chan struct{})}
		r.rc.SetRespond(func(int, delivery.Event) (int, map[string]string) {
			b.hold()
			return http.StatusOK, nil
		})
		r.publish("a.b", "", `{}`)
		synctest.Wait()
		stopped := make(chan struct{})
		go func() {
			r.e.Stop(context.Background())
			close(stopped)
		}()
		synctest.Wait()
		select {
		case <-stopped:
			t.Fatal("Stop returned with a delivery in flight")
		default:
		}
		close(b.release)
		<-stopped
		if d := r.deliveries(ep.ID); len(d) != 1 || d[0].Status != store.DeliveryDelivered {
			t.Fatalf("after Stop: %+v", d)
		}
	})
}

// newClaimCountingRig is newRig with its claims counted.
func newClaimCountingRig(t *testing.T) (*rig, *claimCounter) {
	var cc *claimCounter
	r := newRig(t, func(c *EngineConfig) {
		cc = &claimCounter{EngineStore: c.Store}
		c.Store = cc
	})
	return r, cc
}

// claimCounter counts the claims the engine makes.
type claimCounter struct {
	EngineStore
	mu      sync.Mutex
	claims  int
	claimed int // deliveries the claims leased
}

func (c *claimCounter) DeliveryClaim(ctx context.Context, p *store.DeliveryClaimParams) (*store.DeliveryClaimResult, error) {
	res, err := c.EngineStore.DeliveryClaim(ctx, p)
	c.mu.Lock()
	c.claims++
	if err == nil {
		c.claimed += len(res.Deliveries)
	}
	c.mu.Unlock()
	return res, err
}

func (c *claimCounter) leased() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.claimed
}

func (c *claimCounter) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.claims
}

// An endpoint with free slots gets fresh events leased as they are
// stored and sends them at once: no claim, no second commit before the
// POST. A failure goes back to the store's schedule and is claimed when
// due, without anything waking the runner.
func TestEngineSendsFreshEventsWithoutClaiming(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		r, cc := newClaimCountingRig(t)
		ep := r.endpoint(&CreateEndpointParams{Active: true})
		synctest.Wait() // the runner's first look at the store
		before := cc.count()
		for i := range 5 {
			r.publish("a.b", "", fmt.Sprintf(`{"i":%d}`, i))
			synctest.Wait()
		}
		if n := len(r.rc.Requests()); n != 5 {
			t.Fatalf("%d requests, want 5", n)
		}
		if n := cc.count() - before; n != 0 {
			t.Fatalf("%d claims for 5 fresh events, want 0", n)
		}
		for _, d := range r.deliveries(ep.ID) {
			if d.Status != store.DeliveryDelivered || d.Attempts != 1 {
				t.Fatalf("delivery %s: %s after %d attempts", d.EventID, d.Status, d.Attempts)
			}
		}
		r.rc.SetRespond(func(n int, _ delivery.Event) (int, map[string]string) {
			if n == 5 {
				return http.StatusServiceUnavailable, nil
			}
			return http.StatusOK, nil
		})
		r.publish("a.b", "", `{"i":5}`)
		synctest.Wait()
		time.Sleep(delivery.DefaultSchedule()[1]) // the first retry is due
		synctest.Wait()
		got := r.rc.Requests()
		if len(got) != 7 || got[6].Event.ID != got[5].Event.ID {
			t.Fatalf("%d requests, want the failed event sent again", len(got))
		}
		if n := cc.count() - before; n == 0 {
			t.Fatal("the retry was sent without a claim")
		}
	})
}

// failFirstEnqueue fails the first DeliveryEnqueue without writing.
type failFirstEnqueue struct {
	EngineStore
	failed atomic.Bool
}

func (f *failFirstEnqueue) DeliveryEnqueue(ctx context.Context, p *store.DeliveryEnqueueParams) (*store.DeliveryEnqueueResult, error) {
	if f.failed.CompareAndSwap(false, true) {
		return nil, errors.New("disk full")
	}
	return f.EngineStore.DeliveryEnqueue(ctx, p)
}

// A fresh event is POSTed only once its match committed with the
// delivery leased (the store keeps the endpoint's limits across
// replicas). If that commit fails, nothing is POSTed: the event is
// matched again and sent once, and its delivery records that attempt.
func TestEngineFreshSendWaitsForItsMatch(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		fail := &failFirstEnqueue{}
		r := newRig(t, func(c *EngineConfig) {
			fail.EngineStore = c.Store
			c.Store = fail
		})
		ep := r.endpoint(&CreateEndpointParams{Active: true})
		synctest.Wait()
		pub := r.publish("a.b", "", `{"n":1}`)
		time.Sleep(time.Hour) // past a sweep, which matches the failed stream again
		synctest.Wait()
		if !fail.failed.Load() {
			t.Fatal("the match did not fail")
		}
		got := r.rc.Requests()
		if len(got) != 1 || got[0].Event.ID != pub.Event.ID {
			t.Fatalf("%d requests, want the event once, after the match succeeded", len(got))
		}
		ds := r.deliveries(ep.ID)
		if len(ds) != 1 || ds[0].Status != store.DeliveryDelivered || ds[0].Attempts != 1 {
			t.Fatalf("deliveries = %+v", ds)
		}
	})
}
