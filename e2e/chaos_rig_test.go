package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/heraldstreams/herald/internal/testenv"
)

// pgCluster is a PostgreSQL cluster of the test's own, started by
// scripts/postgres.sh, which the test restarts.
type pgCluster struct {
	dir, url string
}

// startCluster starts a throwaway cluster, stopped when the test ends.
// Like every PostgreSQL test it fails without PostgreSQL (testenv).
func startCluster(t *testing.T) *pgCluster {
	t.Helper()
	testenv.NeedPostgres(t)
	out, err := exec.Command("bash", "../scripts/postgres.sh").CombinedOutput()
	if err != nil {
		t.Fatalf("start a PostgreSQL cluster: %v\n%s", err, out)
	}
	c := &pgCluster{}
	for line := range strings.Lines(string(out)) {
		if v, ok := strings.CutPrefix(line, "export HERALD_TEST_POSTGRES_URL='"); ok {
			c.url = strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "'"))
		}
		if v, ok := strings.CutPrefix(line, "# stop with: scripts/postgres.sh stop "); ok {
			c.dir = strings.TrimSpace(v)
		}
	}
	if c.url == "" || c.dir == "" {
		t.Fatalf("scripts/postgres.sh said:\n%s", out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("bash", "../scripts/postgres.sh", "stop", c.dir).CombinedOutput(); err != nil {
			t.Errorf("stop the cluster: %v\n%s", err, out)
		}
	})
	return c
}

// restart restarts the cluster with the shutdown mode mode.
func (c *pgCluster) restart(t *testing.T, mode string) {
	t.Helper()
	if out, err := exec.Command("bash", "../scripts/postgres.sh", "restart", c.dir, mode).CombinedOutput(); err != nil {
		t.Fatalf("restart -m %s: %v\n%s", mode, err, out)
	}
}

// fleet is the live replicas, which the clients and the balancer spread
// their requests over; a replica is taken out before it is killed.
type fleet struct {
	mu   sync.Mutex
	live []*server
	next int
}

func (f *fleet) add(s *server) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.live = append(f.live, s)
}

// remove takes s out of the fleet.
func (f *fleet) remove(s *server) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i, x := range f.live {
		if x == s {
			f.live = append(f.live[:i], f.live[i+1:]...)
			return
		}
	}
}

// snapshot returns the live replicas.
func (f *fleet) snapshot() []*server {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]*server(nil), f.live...)
}

// pick returns the next live replica's base URL, round robin.
func (f *fleet) pick() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.next++
	return f.live[f.next%len(f.live)].base
}

// ServeHTTP is the load balancer in front of the replicas (their
// --public-url, where consumers read and call back): it sends each
// request to a live replica, and to another when the one it picked
// refuses the connection (it was just killed).
func (f *fleet) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	for try := 0; ; try++ {
		req, err := http.NewRequestWithContext(r.Context(), r.Method, f.pick()+r.URL.RequestURI(), bytes.NewReader(body))
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		req.Header = r.Header.Clone()
		resp, err := http.DefaultTransport.RoundTrip(req)
		if err != nil {
			if errors.Is(err, syscall.ECONNREFUSED) && try < 5 {
				continue
			}
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		for k, v := range resp.Header {
			w.Header()[k] = v
		}
		w.WriteHeader(resp.StatusCode)
		_, _ = io.Copy(w, resp.Body) // the client reads what it gets
		_ = resp.Body.Close()
		return
	}
}

// chaosStats counts the answers of the load's requests.
type chaosStats struct {
	mu sync.Mutex
	// unavailable counts 503 STORE_UNAVAILABLE answers, refused the
	// other 503s and 500s (each a fault: the test fails on them).
	unavailable int
	faults      []string
}

// answer vets one non-2xx answer: a 503 must be STORE_UNAVAILABLE with
// Retry-After; anything else is a fault.
func (s *chaosStats) answer(what string, resp *http.Response, body string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if resp.StatusCode == http.StatusServiceUnavailable && strings.Contains(body, `"STORE_UNAVAILABLE"`) && resp.Header.Get("Retry-After") != "" {
		s.unavailable++
		return
	}
	s.faults = append(s.faults, fmt.Sprintf("%s: %d %v %s", what, resp.StatusCode, resp.Header, body))
}

// until sends one request to the fleet again and again, as a client of
// the replicas does (on a refused connection, a reset or a 503, to the
// next replica), until it is answered 2xx or ctx ends; it reports
// whether it was.
func (f *fleet) until(ctx context.Context, stats *chaosStats, method, path string, hdr map[string]string, body string) bool {
	for ctx.Err() == nil {
		resp, out, err := tryDo(ctx, method, f.pick()+path, hdr, body)
		switch {
		case err != nil:
		case resp.StatusCode/100 == 2:
			return true
		default:
			stats.answer(method+" "+path, resp, out)
		}
		select {
		case <-ctx.Done():
		case <-time.After(50 * time.Millisecond): // a client's pause before it tries again
		}
	}
	return false
}

// chaosReceiver is the endpoint of the events: it holds each request for
// hold (so that deliveries are in flight when a replica dies), and
// records every arrival by event id, and the requests it holds.
type chaosReceiver struct {
	hold time.Duration
	mu   sync.Mutex
	// arrivals are the times each event id arrived; answered is when
	// each id was first answered 2xx.
	arrivals map[string][]time.Time
	answered map[string]time.Time
	// held are the requests held now: their event and remote port.
	held map[*http.Request]heldRequest
}

type heldRequest struct {
	id   string
	port int
}

// heldRequests returns the requests held now.
func (rc *chaosReceiver) heldRequests() []heldRequest {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	out := make([]heldRequest, 0, len(rc.held))
	for _, h := range rc.held {
		out = append(out, h)
	}
	return out
}

func newChaosReceiver(hold time.Duration) *chaosReceiver {
	return &chaosReceiver{hold: hold, arrivals: map[string][]time.Time{}, answered: map[string]time.Time{}, held: map[*http.Request]heldRequest{}}
}

func (rc *chaosReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var ev struct{ ID string }
	body, err := io.ReadAll(r.Body)
	if err == nil {
		err = json.Unmarshal(body, &ev)
	}
	if err != nil || ev.ID == "" {
		http.Error(w, "not an event", http.StatusBadRequest)
		return
	}
	_, port, _ := net.SplitHostPort(r.RemoteAddr)
	n, _ := strconv.Atoi(port)
	rc.mu.Lock()
	rc.arrivals[ev.ID] = append(rc.arrivals[ev.ID], time.Now())
	rc.held[r] = heldRequest{ev.ID, n}
	rc.mu.Unlock()
	defer func() {
		rc.mu.Lock()
		delete(rc.held, r)
		rc.mu.Unlock()
	}()
	t := time.NewTimer(rc.hold)
	defer t.Stop()
	select {
	case <-t.C:
		rc.mu.Lock()
		if _, ok := rc.answered[ev.ID]; !ok {
			rc.answered[ev.ID] = time.Now()
		}
		rc.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	case <-r.Context().Done(): // the sender died
	}
}

// takeover returns, of the events whose deliveries the killed replica
// held (ids, seen in flight just before it was killed), the longest time
// from the kill (when the replica was dead) to the event's next arrival;
// an event not sent again yet counts until now. An event answered 2xx
// before the kill and not sent again is left out: the replica may have
// recorded its outcome in the moment between the look at the requests
// in flight and its death, and then it is rightly never sent again
// (converge checks that every delivery finished).
func (rc *chaosReceiver) takeover(kill time.Time, ids []string) time.Duration {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	var longest time.Duration
	for _, id := range ids {
		again := time.Since(kill)
		sent := false
		for _, at := range rc.arrivals[id] {
			if at.After(kill) {
				again, sent = at.Sub(kill), true
				break
			}
		}
		if answered, ok := rc.answered[id]; !sent && ok && answered.Before(kill) {
			continue
		}
		longest = max(longest, again)
	}
	return longest
}

// explain says, for a failure's message, when each of ids arrived and
// was answered, relative to the kill.
func (rc *chaosReceiver) explain(kill time.Time, ids []string) string {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	var b strings.Builder
	for _, id := range ids {
		fmt.Fprintf(&b, "\n  %s: arrived", id)
		for _, at := range rc.arrivals[id] {
			fmt.Fprintf(&b, " %v", at.Sub(kill).Round(time.Millisecond))
		}
		if at, ok := rc.answered[id]; ok {
			fmt.Fprintf(&b, ", first answered %v", at.Sub(kill).Round(time.Millisecond))
		}
	}
	return b.String()
}

// missing returns how many of ids were not answered 2xx yet.
func (rc *chaosReceiver) missing(ids []string) int {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	n := 0
	for _, id := range ids {
		if _, ok := rc.answered[id]; !ok {
			n++
		}
	}
	return n
}
