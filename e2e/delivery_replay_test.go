package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// postCounter is a receiver that counts the POSTs it is sent.
func postCounter(t *testing.T) (*atomic.Int64, *httptest.Server) {
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(srv.Close)
	return &n, srv
}

// expectStatus sends a request and fails unless it answers status;
// the body is decoded into out when not nil.
func expectStatus(t *testing.T, s *server, method, path, body string, status int, out any) {
	t.Helper()
	resp, got := do(t, method, s.base+path, jsonHeader, body)
	if resp.StatusCode != status {
		t.Fatalf("%s %s: %d %s, want %d", method, path, resp.StatusCode, got, status)
	}
	if out != nil {
		if err := json.Unmarshal([]byte(got), out); err != nil {
			t.Fatalf("%s %s: %q: %v", method, path, got, err)
		}
	}
}

// Raw appends that repeat an event id are delivered once, a publish of an
// id seen before answers with the event as first stored, and the attempt
// log holds exactly the POSTs the receiver got.
func TestDeliveryDuplicateIDsAttemptLog(t *testing.T) {
	t.Parallel()
	posts, recv := postCounter(t)
	s := startHerald(t, t.TempDir(), "--webhook-allow-cidrs", "127.0.0.0/8")
	epID, _ := createEndpoint(t, s.base, `{"url":"`+recv.URL+`/hook","streams":["/dup/**"]}`)
	expectStatus(t, s, "PUT", "/dup/orders", "", http.StatusCreated, nil)
	one := `{"id":"ord-1","type":"order.paid","timestamp":"2026-01-01T00:00:00Z","data":{"n":%d}}`
	expectStatus(t, s, "POST", "/dup/orders", "["+fmt.Sprintf(one, 1)+","+fmt.Sprintf(one, 2)+"]", http.StatusNoContent, nil)
	expectStatus(t, s, "POST", "/dup/orders", fmt.Sprintf(one, 3), http.StatusNoContent, nil)
	expectStatus(t, s, "POST", "/_herald/v1/events", `{"id":"ord-2","type":"order.paid","stream":"/dup/orders","data":{"n":4}}`,
		http.StatusAccepted, nil)
	expectStatus(t, s, "POST", "/dup/orders", `{"id":"ord-2","type":"order.paid","data":{"n":5}}`, http.StatusNoContent, nil)
	// A last new event: the endpoint's cursor moves through the stream in
	// order, so once its delivery is listed every duplicate before it was
	// matched, and any delivery made of one is listed too.
	expectStatus(t, s, "POST", "/dup/orders", `{"id":"ord-3","type":"order.paid","data":{"n":6}}`, http.StatusNoContent, nil)
	var list struct {
		Data []struct {
			EventID      string `json:"event_id"`
			Status       string `json:"status"`
			AttemptCount int    `json:"attempt_count"`
		}
	}
	deadline := time.Now().Add(15 * time.Second)
	for {
		expectStatus(t, s, "GET", "/_herald/v1/endpoints/"+epID+"/deliveries", "", http.StatusOK, &list)
		last, finished := false, true
		for _, d := range list.Data {
			last = last || d.EventID == "ord-3"
			finished = finished && d.Status == "delivered"
		}
		if last && finished {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("deliveries after 15s: %+v, want ord-3's listed and every one delivered\n%s", list.Data, s.logs)
		}
		time.Sleep(20 * time.Millisecond) // polling another process: no signal to wait on
	}
	// The appended ids are seen once matched.
	var dup struct {
		Event struct {
			ID, Type, Timestamp string
			Data                json.RawMessage
		}
		Stream    string
		Duplicate bool
	}
	expectStatus(t, s, "POST", "/_herald/v1/events", `{"id":"ord-1","type":"order.refunded","data":{"n":9}}`, http.StatusOK, &dup)
	if !dup.Duplicate || dup.Stream != "/dup/orders" || dup.Event.Type != "order.paid" || dup.Event.Timestamp != "2026-01-01T00:00:00Z" ||
		string(dup.Event.Data) != `{"n":1}` {
		t.Fatalf("duplicate publish = %+v, want the first ord-1", dup)
	}

	attempts := 0
	for _, d := range list.Data {
		attempts += d.AttemptCount
	}
	// ord-1, ord-2 and ord-3, each once.
	if got := posts.Load(); got != 3 || len(list.Data) != 3 || attempts != 3 {
		t.Fatalf("%d POSTs received, %d deliveries with %d attempts; want 3 of each\n%s", got, len(list.Data), attempts, s.logs)
	}
}

type replayJob struct {
	ID        string `json:"id"`
	State     string `json:"state"`
	Queued    int    `json:"queued"`
	Total     int    `json:"total"`
	Truncated bool   `json:"truncated"`
}

// A replay job bounded by until, interrupted by a restart, resumes in the
// next Herald and finishes with every event in its window queued once.
func TestDeliveryReplayJobAcrossRestart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	_, recv := postCounter(t)
	flags := []string{"--webhook-allow-cidrs", "127.0.0.0/8", "--delivery-replay-batch", "5"}
	s := startHerald(t, dir, flags...)
	expectStatus(t, s, "PUT", "/replay/r", "", http.StatusCreated, nil)
	const perYear, batch = 2000, 1000
	for _, year := range []string{"2020", "2030"} {
		for b := 0; b < perYear; b += batch {
			var msgs []string
			for i := b; i < b+batch; i++ {
				msgs = append(msgs, fmt.Sprintf(`{"id":"e-%s-%d","type":"t.x","timestamp":"%s-01-01T00:00:00Z","data":{}}`, year, i, year))
			}
			expectStatus(t, s, "POST", "/replay/r", "["+strings.Join(msgs, ",")+"]", http.StatusNoContent, nil)
		}
	}
	// Created after the events (and paused): only the replay queues them.
	epID, _ := createEndpoint(t, s.base, `{"url":"`+recv.URL+`/hook","streams":["/replay/**"],"active":false}`)
	var job replayJob
	expectStatus(t, s, "POST", "/_herald/v1/endpoints/"+epID+"/replay",
		`{"stream":"/replay/r","offset":"-1","until":"2025-01-01T00:00:00Z"}`, http.StatusAccepted, &job)
	if job.State != "running" || !strings.HasPrefix(job.ID, "rpl_") {
		t.Fatalf("replay answered %+v; want a job still running (a step per event)", job)
	}
	if err := s.terminate(30 * time.Second); err != nil {
		t.Fatalf("stop: %v\n%s", err, s.logs)
	}
	s = startHerald(t, dir, flags...)
	// The job must keep moving, however slow the machine: it fails when
	// its progress stands still for 30 s, not after a fixed time.
	var progress []int
	last, moved := -1, time.Now()
	for job.State == "running" {
		expectStatus(t, s, "GET", "/_herald/v1/replays/"+job.ID, "", http.StatusOK, &job)
		progress = append(progress, job.Total)
		if job.Total+job.Queued != last {
			last, moved = job.Total+job.Queued, time.Now()
		} else if time.Since(moved) > 30*time.Second {
			t.Fatalf("job stuck at %+v for 30 s\n%s", job, s.logs)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if job.State != "done" || job.Total != perYear || job.Queued != perYear || job.Truncated {
		t.Fatalf("job = %+v; want %d events queued once each", job, perYear)
	}
	for i := 1; i < len(progress); i++ {
		if progress[i] < progress[i-1] {
			t.Fatalf("progress went back: %v", progress)
		}
	}
	// An unknown job is 404.
	expectStatus(t, s, "GET", "/_herald/v1/replays/rpl_000000000000000000000000", "", http.StatusNotFound, nil)
}
