package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/heraldstreams/herald/client"
	"github.com/heraldstreams/herald/internal/secretbox"
)

// takeoverBound is how soon, with the default flags (--replica-heartbeat
// 2s, --replica-dead-after 10s), the deliveries a replica held when it
// was killed are sent again by another (docs/operations.md, Replicas).
const takeoverBound = 15 * time.Second

// TestReplicaChaos runs three replicas on a PostgreSQL cluster of its
// own under appends (idempotent producers), published events and wakes,
// kills replicas with -9 and restarts the database (fast, then
// immediate), and then checks that every acknowledged append is in its
// stream once and in order, every acknowledged event is in its stream
// once and in order and was delivered (and every delivery is recorded
// finished), every consumer acked its streams
// to their tails and no append waited for its consumer beyond
// takeoverBound (no wake lost or stalled), an endpoint with ordering
// "stream" got its stream in order and never held back longer than
// takeoverBound (checkOrdered), the database's absence was answered
// 503 STORE_UNAVAILABLE (never 500), and the deliveries a killed replica
// held were sent again within takeoverBound, not after the 2-minute
// delivery lease (chaosReceiver.takeover). Not parallel: it times takeovers, which other tests'
// load would stretch.
func TestReplicaChaos(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: runs three replicas and a PostgreSQL cluster of its own through two minutes of faults; run without -short for this one")
	}
	pg := startCluster(t)
	kek := filepath.Join(t.TempDir(), secretbox.DefaultFileName)
	f := &fleet{}
	lb := httptest.NewServer(f)
	t.Cleanup(lb.Close)
	start := func() *server {
		s := startHerald(t, t.TempDir(), "--store", "postgres", "--postgres-url", pg.url, "--kek-file", kek,
			"--webhook-allow-cidrs", "127.0.0.0/8", "--public-url", lb.URL, "--access-log=false")
		f.add(s)
		return s
	}
	a, b, c := start(), start(), start()
	all := []*server{a, b, c}

	rc := newChaosReceiver(time.Second)
	events := httptest.NewServer(rc)
	t.Cleanup(events.Close)
	eventsEP, _ := createEndpoint(t, a.base, fmt.Sprintf(`{"url":%q,"streams":["/events/**"],"event_types":["chaos.*"]}`, events.URL+"/hook"))
	// An endpoint that takes the events of /events/p0 one at a time, in
	// order, answering at once: the stream may not be held back.
	ordered := newChaosReceiver(0)
	orderedHook := httptest.NewServer(ordered)
	t.Cleanup(orderedHook.Close)
	orderedEP, _ := createEndpoint(t, a.base, fmt.Sprintf(`{"url":%q,"streams":["/events/p0"],"event_types":["chaos.*"],"ordering":"stream"}`,
		orderedHook.URL+"/hook"))

	var pmu sync.Mutex
	processed := map[string]string{} // stream → the NextOffset of its last batch processed
	seen := map[string]bool{}        // the messages processed, by stream and n
	var lags []wakeLag               // from each append to its first processing
	hook := httptest.NewUnstartedServer(nil)
	secret := createSubscription(t, a.base, "/chaos/*", "chaos", "http://"+hook.Listener.Addr().String()+"/hook")
	hook.Config.Handler = client.NewConsumer(client.ConsumerConfig{Secret: secret, RetryBackoff: 200 * time.Millisecond,
		Process: func(_ context.Context, batch client.Batch) error {
			var msgs []struct {
				N int
				T int64 // when its append was sent, unix ns
			}
			if err := json.Unmarshal(batch.Data, &msgs); err != nil {
				return err
			}
			now := time.Now()
			pmu.Lock()
			processed[batch.Stream] = batch.NextOffset
			for _, m := range msgs {
				key := fmt.Sprintf("%s#%d", batch.Stream, m.N)
				if !seen[key] {
					seen[key] = true
					lags = append(lags, wakeLag{sent: time.Unix(0, m.T), lag: now.Sub(time.Unix(0, m.T))})
				}
			}
			pmu.Unlock()
			return nil
		}})
	hook.Start()
	t.Cleanup(hook.Close)

	const writers, publishers = 4, 2
	for w := range writers {
		if resp, out := do(t, "PUT", fmt.Sprintf("%s/chaos/w%d", a.base, w), jsonBody, ""); resp.StatusCode != http.StatusCreated {
			t.Fatalf("create stream: %d %s", resp.StatusCode, out)
		}
	}

	// The load: each writer appends {"n": 0, 1, ...} to its stream as an
	// idempotent producer, each publisher publishes p<j>-0, p<j>-1, ...,
	// every request sent again (to the next replica) until it is
	// acknowledged.
	stats := &chaosStats{}
	// The load stops between requests, never cutting one short: an
	// append cut short may be written and not acknowledged.
	var stopping atomic.Bool
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	appended := make([]int, writers)
	published := make([][]string, publishers)
	var pubMu sync.Mutex
	acked := map[string]time.Time{} // when each event's publish was acknowledged
	var load sync.WaitGroup
	for w := range writers {
		load.Go(func() {
			path := fmt.Sprintf("/chaos/w%d", w)
			for n := 0; !stopping.Load(); n++ {
				hdr := map[string]string{"Content-Type": "application/json", "Producer-Id": "w" + strconv.Itoa(w),
					"Producer-Epoch": "0", "Producer-Seq": strconv.Itoa(n)}
				if !f.until(ctx, stats, "POST", path, hdr, fmt.Sprintf(`{"n":%d,"t":%d}`, n, time.Now().UnixNano())) {
					return
				}
				appended[w] = n + 1
			}
		})
	}
	for p := range publishers {
		load.Go(func() {
			// At most 40 events a second each, and 10 for /events/p0,
			// whose ordered endpoint sends one at a time: the endpoints'
			// sends keep up on a small machine running race-detector
			// builds, so a lag is a stream held back, not a queue.
			every := 25 * time.Millisecond
			if p == 0 {
				every = 100 * time.Millisecond
			}
			pace := time.NewTicker(every)
			defer pace.Stop()
			for k := 0; !stopping.Load(); k++ {
				<-pace.C
				id := fmt.Sprintf("p%d-%d", p, k)
				body := fmt.Sprintf(`{"id":%q,"type":"chaos.event","stream":"/events/p%d","data":{"k":%d}}`, id, p, k)
				if !f.until(ctx, stats, "POST", "/_herald/v1/events", jsonBody, body) {
					return
				}
				published[p] = append(published[p], id)
				pubMu.Lock()
				acked[id] = time.Now()
				pubMu.Unlock()
			}
		})
	}

	// The chaos, on a timeline from the start of the load.
	t0 := time.Now()
	at := func(d time.Duration) { time.Sleep(time.Until(t0.Add(d))) } // the timeline's next step
	type killed struct {
		at  time.Time
		ids []string // the events whose deliveries it held
	}
	var kills []killed
	// kill kills, of the candidates, the one that holds the most
	// deliveries in flight (once one holds some): its takeover is what
	// is timed.
	kill := func(candidates ...*server) {
		t.Helper()
		var victim *server
		var ids []string
		converge(t, 10*time.Second, all, func() string {
			for _, s := range candidates {
				if held := sentBy(s.cmd.Process.Pid, rc.heldRequests()); len(held) > len(ids) {
					victim, ids = s, held
				}
			}
			if victim == nil {
				return "no candidate replica holds a delivery in flight"
			}
			return ""
		})
		f.remove(victim)
		victim.kill()
		// The kill is timed once the replica is dead: it may have sent
		// and recorded some of ids since they were seen in flight.
		kills = append(kills, killed{time.Now(), ids})
		t.Logf("killed at %v a replica holding %d deliveries in flight", time.Since(t0).Round(time.Millisecond), len(ids))
	}
	at(4 * time.Second)
	kill(b, c)
	at(4*time.Second + takeoverBound + time.Second)
	pg.restart(t, "fast")
	ready(t, f)
	at(22 * time.Second)
	all = append(all, start())
	at(27 * time.Second)
	pg.restart(t, "immediate")
	ready(t, f)
	at(32 * time.Second)
	kill(f.snapshot()...)
	at(32*time.Second + takeoverBound + time.Second)
	stopping.Store(true)
	load.Wait()

	// Every acknowledged event delivered, and every stream's consumer
	// acked to its tail: the replicas converge once the chaos is over.
	var ids []string
	for _, p := range published {
		ids = append(ids, p...)
	}
	converge(t, 60*time.Second, all, func() string {
		if n := rc.missing(ids); n > 0 {
			return fmt.Sprintf("%d of %d acknowledged events not delivered", n, len(ids))
		}
		if n := ordered.missing(published[0]); n > 0 {
			return fmt.Sprintf("%d of %d acknowledged events of /events/p0 not delivered to the ordered endpoint", n, len(published[0]))
		}
		for _, ep := range []string{eventsEP, orderedEP} {
			if why := unfinished(f, ep); why != "" {
				return why
			}
		}
		return ackedToTails(t, f, writers, processed, &pmu)
	})

	for i, k := range kills {
		longest := rc.takeover(k.at, k.ids)
		t.Logf("kill %d: the %d deliveries the killed replica held were all sent again within %v", i+1, len(k.ids), longest.Round(time.Millisecond))
		if longest > takeoverBound {
			t.Errorf("kill %d: a delivery the killed replica held was sent again %v after the kill, beyond %v (times from the kill):%s",
				i+1, longest, takeoverBound, rc.explain(k.at, k.ids))
		}
	}
	pmu.Lock()
	logLags(t, "longest wake lag by when the append was sent", t0, lags)
	pmu.Unlock()
	checkOrdered(t, t0, ordered, published[0], acked)
	checkAppends(t, f, appended)
	checkEvents(t, f, published)
	// A 500 is logged by the replica that answered it (the consumer's
	// reads and callbacks go through the balancer, not the load's
	// clients).
	for _, s := range all {
		for line := range strings.Lines(s.logs.String()) {
			if strings.Contains(line, `msg="request failed"`) {
				t.Errorf("%s answered 500: %s", s.base, line)
			}
		}
	}
	stats.mu.Lock()
	defer stats.mu.Unlock()
	t.Logf("%d appends, %d events; %d answers 503 STORE_UNAVAILABLE while the database restarted", sum(appended), len(ids), stats.unavailable)
	for _, fault := range stats.faults {
		t.Errorf("an answer other than 2xx or 503 STORE_UNAVAILABLE: %s", fault)
	}
}

// ready waits until every live replica's readyz is 200 again, by
// itself, after the database came back.
func ready(t *testing.T, f *fleet) {
	t.Helper()
	live := f.snapshot()
	converge(t, 20*time.Second, live, func() string {
		for _, s := range live {
			resp, body, err := tryDo(context.Background(), "GET", s.base+"/_herald/readyz", nil, "")
			if err != nil || resp.StatusCode != http.StatusOK {
				return fmt.Sprintf("%s is not ready: %v %s", s.base, err, body)
			}
		}
		return ""
	})
}

// converge polls check (which says what is not done yet, "" when all
// is) until it is done, failing after timeout with the replicas' logs.
func converge(t *testing.T, timeout time.Duration, replicas []*server, check func() string) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		why := check()
		if why == "" {
			return
		}
		if time.Now().After(deadline) {
			var logs []byte
			for _, s := range replicas {
				logs = append(logs, s.logs.String()...)
			}
			t.Fatalf("after %v: %s\n%s", timeout, why, logs)
		}
		time.Sleep(100 * time.Millisecond) // polling processes of its own
	}
}

// unfinished says how many deliveries of an endpoint are not finished
// (pending or failed), "" when none: a delivery answered 2xx is recorded
// delivered, by its sender or after its lease is taken over.
func unfinished(f *fleet, endpoint string) string {
	for _, status := range []string{"pending", "failed"} {
		url := f.pick() + "/_herald/v1/endpoints/" + endpoint + "/deliveries?status=" + status + "&count=true&limit=1"
		resp, body, err := tryDo(context.Background(), "GET", url, nil, "")
		if err != nil || resp.StatusCode != http.StatusOK {
			return fmt.Sprintf("list deliveries: %v %s", err, body)
		}
		var list struct{ Total int }
		if err := json.Unmarshal([]byte(body), &list); err != nil {
			return fmt.Sprintf("list deliveries: %v", err)
		}
		if list.Total > 0 {
			return fmt.Sprintf("endpoint %s has %d deliveries %s", endpoint, list.Total, status)
		}
	}
	return ""
}

// ackedToTails says which writer stream's consumer has not acked (and
// processed) it to its tail, "" when none.
func ackedToTails(t *testing.T, f *fleet, writers int, processed map[string]string, mu *sync.Mutex) string {
	t.Helper()
	base := f.pick()
	resp, body, err := tryDo(context.Background(), "GET", base+"/_herald/v1/subscriptions/chaos/consumers?limit=100", nil, "")
	if err != nil || resp.StatusCode != http.StatusOK {
		return fmt.Sprintf("list consumers: %v %s", err, body)
	}
	var list struct {
		Data []struct {
			Streams []struct{ Path, Acked string }
		}
	}
	if err := json.Unmarshal([]byte(body), &list); err != nil {
		t.Fatal(err)
	}
	acked := map[string]string{}
	for _, c := range list.Data {
		for _, s := range c.Streams {
			acked[s.Path] = s.Acked
		}
	}
	for w := range writers {
		path := fmt.Sprintf("/chaos/w%d", w)
		resp, _, err := tryDo(context.Background(), "HEAD", base+path, nil, "")
		if err != nil {
			return err.Error()
		}
		tail := resp.Header.Get("Stream-Next-Offset")
		mu.Lock()
		done := processed[path]
		mu.Unlock()
		if acked[path] != tail || done != tail {
			return fmt.Sprintf("%s: tail %s, acked %q, processed to %q", path, tail, acked[path], done)
		}
	}
	return ""
}

// checkAppends reads every writer's stream: its messages are n = 0, 1,
// ... up to the last acknowledged, each once, in order.
func checkAppends(t *testing.T, f *fleet, appended []int) {
	t.Helper()
	for w, n := range appended {
		var msgs []struct{ N int }
		readJSON(t, f, fmt.Sprintf("/chaos/w%d", w), &msgs)
		if len(msgs) != n {
			t.Errorf("/chaos/w%d holds %d messages, %d appends were acknowledged", w, len(msgs), n)
		}
		for i, m := range msgs {
			if m.N != i {
				t.Errorf("/chaos/w%d: message %d is n=%d (lost, duplicated or out of order)", w, i, m.N)
				break
			}
		}
	}
}

// checkEvents reads every publisher's stream: its events are the ones
// acknowledged, each once, in the order published.
func checkEvents(t *testing.T, f *fleet, published [][]string) {
	t.Helper()
	for p, ids := range published {
		var evs []struct{ ID string }
		readJSON(t, f, fmt.Sprintf("/events/p%d", p), &evs)
		if len(evs) != len(ids) {
			t.Errorf("/events/p%d holds %d events, %d were acknowledged", p, len(evs), len(ids))
		}
		for i := range min(len(evs), len(ids)) {
			if evs[i].ID != ids[i] {
				t.Errorf("/events/p%d: event %d is %s, want %s", p, i, evs[i].ID, ids[i])
				break
			}
		}
	}
}

// readJSON reads a whole JSON stream from a live replica into v.
func readJSON(t *testing.T, f *fleet, path string, v any) {
	t.Helper()
	var all []json.RawMessage
	offset := "-1"
	for {
		resp, body := do(t, "GET", f.pick()+path+"?offset="+offset, nil, "")
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("read %s: %d %s", path, resp.StatusCode, body)
		}
		var page []json.RawMessage
		if err := json.Unmarshal([]byte(body), &page); err != nil {
			t.Fatalf("read %s: %v", path, err)
		}
		all = append(all, page...)
		offset = resp.Header.Get("Stream-Next-Offset")
		if resp.Header.Get("Stream-Up-To-Date") == "true" || len(page) == 0 {
			break
		}
	}
	raw, err := json.Marshal(all)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, v); err != nil {
		t.Fatalf("read %s: %v", path, err)
	}
}

func sum(xs []int) int {
	n := 0
	for _, x := range xs {
		n += x
	}
	return n
}

// wakeLag is how long after its append was sent a message was first
// processed by the consumer (woken, read, acked).
type wakeLag struct {
	sent time.Time
	lag  time.Duration
}

// logLags logs the longest lag of the messages sent in each two seconds
// of the timeline, and fails the test when one is beyond takeoverBound:
// a wake or a stream stalled.
func logLags(t *testing.T, what string, t0 time.Time, lags []wakeLag) {
	t.Helper()
	logLagsWithin(t, what, t0, lags, takeoverBound)
}

// logLagsWithin is logLags with the bound given.
func logLagsWithin(t *testing.T, what string, t0 time.Time, lags []wakeLag, bound time.Duration) {
	t.Helper()
	worst := map[int]time.Duration{}
	last := 0
	for _, l := range lags {
		slot := int(l.sent.Sub(t0) / (2 * time.Second))
		worst[slot] = max(worst[slot], l.lag)
		last = max(last, slot)
	}
	var b strings.Builder
	for slot := 0; slot <= last; slot++ {
		fmt.Fprintf(&b, " %ds:%v", 2*slot, worst[slot].Round(100*time.Millisecond))
	}
	t.Logf("%s:%s", what, b.String())
	for _, l := range lags {
		if l.lag > bound {
			t.Errorf("%s: a message sent at %v waited %v, beyond %v", what, l.sent.Sub(t0).Round(time.Millisecond),
				l.lag.Round(time.Millisecond), bound)
			return
		}
	}
}

// checkOrdered checks the endpoint with ordering "stream" of
// /events/p0: its events first arrived in the order they were published
// (ids), and the stream was never held back longer than takeoverBound,
// whatever died or restarted. An event is held back from when it could
// be sent (its publish was acknowledged and the event before it had
// arrived) until it arrives; the time it then waits behind the events
// published before it is the stream catching up, one at a time, which
// takes as long as the machine is slow, so the whole lag of an event is
// bounded only by twice takeoverBound (a delivery left to its 2-minute
// lease fails both checks).
func checkOrdered(t *testing.T, t0 time.Time, rc *chaosReceiver, ids []string, acked map[string]time.Time) {
	t.Helper()
	rc.mu.Lock()
	defer rc.mu.Unlock()
	var lags, held []wakeLag
	var last time.Time
	for _, id := range ids {
		first := rc.arrivals[id][0]
		if first.Before(last) {
			t.Errorf("/events/p0: %s arrived before the event published before it", id)
		}
		ready := acked[id]
		if last.After(ready) {
			ready = last
		}
		last = first
		lags = append(lags, wakeLag{sent: acked[id], lag: first.Sub(acked[id])})
		held = append(held, wakeLag{sent: acked[id], lag: first.Sub(ready)})
	}
	logLagsWithin(t, "ordered endpoint: longest time an event was held back, by when it was published", t0, held, takeoverBound)
	logLagsWithin(t, "ordered endpoint: longest delivery lag by when the event was published", t0, lags, 2*takeoverBound)
}
