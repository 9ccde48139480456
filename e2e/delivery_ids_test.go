package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"
)

// idReceiver records the webhook-id of every attempt of every event, by
// the event's data, and fails each event's first attempt so it is retried.
type idReceiver struct {
	mu       sync.Mutex
	attempts map[string][]string // "src/run/i" → webhook-id of each attempt
	accepted map[string]int      // "src/run/i" → accepted attempts
	notify   chan struct{}
}

func newIDReceiver(t *testing.T) (*idReceiver, *httptest.Server) {
	rc := &idReceiver{attempts: map[string][]string{}, accepted: map[string]int{}, notify: make(chan struct{}, 1)}
	srv := httptest.NewServer(rc)
	t.Cleanup(srv.Close)
	return rc, srv
}

func (rc *idReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, "read", http.StatusBadRequest)
		return
	}
	var ev struct {
		ID   string
		Data struct {
			Src string
			Run int
			I   int
		}
	}
	if err := json.Unmarshal(body, &ev); err != nil || ev.ID != r.Header.Get("webhook-id") {
		http.Error(w, "not an event", http.StatusBadRequest)
		return
	}
	key := fmt.Sprintf("%s/%d/%d", ev.Data.Src, ev.Data.Run, ev.Data.I)
	rc.mu.Lock()
	defer rc.mu.Unlock()
	rc.attempts[key] = append(rc.attempts[key], ev.ID)
	if len(rc.attempts[key]) == 1 {
		http.Error(w, "try again", http.StatusServiceUnavailable)
		return
	}
	rc.accepted[key]++
	select {
	case rc.notify <- struct{}{}:
	default:
	}
	w.WriteHeader(http.StatusNoContent)
}

// waitAccepted waits until each key was accepted at least n times.
func (rc *idReceiver) waitAccepted(t *testing.T, keys []string, n int, logs fmt.Stringer) {
	t.Helper()
	deadline := time.After(20 * time.Second)
	for {
		rc.mu.Lock()
		missing := 0
		for _, k := range keys {
			if rc.accepted[k] < n {
				missing++
			}
		}
		rc.mu.Unlock()
		if missing == 0 {
			return
		}
		select {
		case <-rc.notify:
		case <-deadline:
			t.Fatalf("%d of %d events not accepted %d times\n%s", missing, len(keys), n, logs)
		}
	}
}

// idOf returns the one id every attempt of key carried.
func (rc *idReceiver) idOf(t *testing.T, key string) string {
	t.Helper()
	rc.mu.Lock()
	defer rc.mu.Unlock()
	ids := rc.attempts[key]
	if len(ids) < 2 {
		t.Fatalf("%s: %d attempts, want a failed one and a retry", key, len(ids))
	}
	for _, id := range ids {
		if id != ids[0] {
			t.Fatalf("%s was sent with different ids: %v", key, ids)
		}
	}
	return ids[0]
}

// appendEvents appends events without an id to /orders (plain JSON
// appends) and returns their keys.
func appendEvents(t *testing.T, base, src string, run, n int) []string {
	t.Helper()
	var keys []string
	for i := range n {
		body := fmt.Sprintf(`{"type":"order.paid","data":{"src":%q,"run":%d,"i":%d}}`, src, run, i)
		if resp, out := do(t, "POST", base+"/orders", map[string]string{"Content-Type": "application/json"}, body); resp.StatusCode != http.StatusNoContent {
			t.Fatalf("append: %d %s", resp.StatusCode, out)
		}
		keys = append(keys, fmt.Sprintf("%s/%d/%d", src, run, i))
	}
	return keys
}

// setUpOrders creates the endpoint and the /orders stream on a server.
func setUpOrders(t *testing.T, base, hook string) string {
	t.Helper()
	id, _ := createEndpoint(t, base, `{"url":"`+hook+`","streams":["/orders"]}`)
	if resp, out := do(t, "PUT", base+"/orders", map[string]string{"Content-Type": "application/json"}, ""); resp.StatusCode != http.StatusCreated {
		t.Fatalf("create /orders: %d %s", resp.StatusCode, out)
	}
	return id
}

// Events appended without an id get one that no other installation
// gives: two Herald data directories with the same stream, appended the
// same way, send different ids to one receiver. An id is the same on every
// retry and after a restart (a replay sends it again), and positions
// appended again after a backup is restored get new ids.
func TestDeliveryEventIDsUniqueAndStable(t *testing.T) {
	t.Parallel()
	rc, srv := newIDReceiver(t)
	hook := srv.URL + "/hooks"
	dirA, dirB := t.TempDir(), t.TempDir()
	a := startHerald(t, dirA, deliveryFlags...)
	b := startHerald(t, dirB, deliveryFlags...)
	epA := setUpOrders(t, a.base, hook)
	setUpOrders(t, b.base, hook)
	keysA := appendEvents(t, a.base, "A", 1, 5)
	keysB := appendEvents(t, b.base, "B", 1, 5)
	rc.waitAccepted(t, append(slices.Clone(keysA), keysB...), 1, a.logs)

	seen := map[string]string{} // id → key
	record := func(key string) string {
		id := rc.idOf(t, key)
		if other, dup := seen[id]; dup && other != key {
			t.Fatalf("events %s and %s were both sent as %s", other, key, id)
		}
		seen[id] = key
		return id
	}
	first := map[string]string{}
	for _, k := range append(slices.Clone(keysA), keysB...) {
		first[k] = record(k)
	}

	// Restart A: a replay sends the same ids.
	if err := a.terminate(30 * time.Second); err != nil {
		t.Fatalf("stop: %v", err)
	}
	b.kill()
	backup := t.TempDir()
	copyDir(t, dirA, backup)
	a = startHerald(t, dirA, deliveryFlags...)
	resp, out := do(t, "POST", a.base+"/_herald/v1/endpoints/"+epA+"/replay", map[string]string{"Content-Type": "application/json"},
		`{"stream":"/orders","offset":"-1"}`)
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("replay: %d %s", resp.StatusCode, out)
	}
	rc.waitAccepted(t, keysA, 2, a.logs)
	rc.mu.Lock()
	for _, k := range keysA {
		if ids := rc.attempts[k]; ids[len(ids)-1] != first[k] {
			t.Errorf("%s was %s, and %s after a restart", k, first[k], ids[len(ids)-1])
		}
	}
	rc.mu.Unlock()
	after := appendEvents(t, a.base, "A", 2, 2)
	rc.waitAccepted(t, after, 1, a.logs)
	for _, k := range after {
		record(k)
	}

	// Restore the backup (taken before run 2's appends): the same
	// positions, appended again with other events, get other ids.
	if err := a.terminate(30 * time.Second); err != nil {
		t.Fatalf("stop: %v", err)
	}
	if err := os.RemoveAll(dirA); err != nil {
		t.Fatal(err)
	}
	copyDir(t, backup, dirA)
	a = startHerald(t, dirA, deliveryFlags...)
	restored := appendEvents(t, a.base, "A", 3, 2)
	rc.waitAccepted(t, restored, 1, a.logs)
	for _, k := range restored {
		record(k)
	}
}

// copyDir copies a stopped server's data directory, the database and
// the segment files under it.
func copyDir(t *testing.T, from, to string) {
	t.Helper()
	err := filepath.WalkDir(from, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(from, p)
		if err != nil {
			return err
		}
		switch {
		case e.IsDir():
			return os.MkdirAll(filepath.Join(to, rel), 0o700)
		case !e.Type().IsRegular():
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(to, rel), data, 0o600)
	})
	if err != nil {
		t.Fatal(err)
	}
}
