package e2e

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"strings"
	"testing"
	"time"
)

// TestGracefulShutdown: on SIGTERM an open long-poll is answered at once
// (not at its timeout), the process exits cleanly, and what was written
// before is there after a restart.
func TestGracefulShutdown(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	// A long-poll timeout far beyond the test's patience: only the shutdown
	// can end the read in time.
	srv := startHerald(t, dir, "--long-poll-timeout", "5m")
	resp, body := do(t, "PUT", srv.base+"/s", map[string]string{"Content-Type": "text/plain"}, "kept")
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("create = %d %s", resp.StatusCode, body)
	}
	tail := resp.Header.Get("Stream-Next-Offset")

	type result struct {
		status int
		err    error
	}
	polled := make(chan result, 1)
	armed := make(chan struct{})
	go func() {
		req, err := http.NewRequest("GET", srv.base+"/s?live=long-poll&offset="+tail, nil)
		if err != nil {
			polled <- result{err: err}
			close(armed)
			return
		}
		req = req.WithContext(httptrace.WithClientTrace(req.Context(), &httptrace.ClientTrace{
			WroteRequest: func(httptrace.WroteRequestInfo) { close(armed) },
		}))
		// A connection of its own: a pooled one could be closed as idle
		// by the shutdown and the request retried elsewhere.
		client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
		resp, err := client.Do(req)
		if err != nil {
			polled <- result{err: err}
			return
		}
		resp.Body.Close()
		polled <- result{status: resp.StatusCode}
	}()
	<-armed
	// Wait until the server reports the long-poll open, so the SIGTERM
	// finds it waiting (and not, say, still in the kernel's backlog).
	waitForMetric(t, srv.base, `herald_stream_live_reads{mode="long-poll"} 1`)

	if err := srv.terminate(15 * time.Second); err != nil {
		t.Fatalf("herald exited with %v\n%s", err, srv.logs)
	}
	select {
	case r := <-polled:
		if r.err != nil || r.status != http.StatusNoContent {
			t.Fatalf("long-poll during shutdown = %d, %v; want 204", r.status, r.err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("long-poll still open after herald exited")
	}

	srv = startHerald(t, dir)
	if got := string(readAll(t, srv.base+"/s")); got != "kept" {
		t.Fatalf("after restart the stream holds %q", got)
	}
}

// waitForMetric polls /_herald/metrics until a line equals want.
func waitForMetric(t *testing.T, base, want string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, body := do(t, "GET", base+"/_herald/metrics", nil, "")
		for _, line := range strings.Split(body, "\n") {
			if line == want {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("metric %q never appeared", want)
		}
		time.Sleep(10 * time.Millisecond) // polling another process: no signal to wait on
	}
}

// TestShutdownHasOneDeadline: --shutdown-timeout bounds the whole
// shutdown, not each step of it. A request body that never ends holds the
// HTTP drain for the whole deadline, and a delivery in flight to an
// endpoint that never answers is then cancelled at once (it is sent again
// after a restart): herald exits within the deadline, not after it twice.
func TestShutdownHasOneDeadline(t *testing.T) {
	hung := make(chan struct{}, 1)
	release := make(chan struct{})
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case hung <- struct{}{}:
		default:
		}
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	defer hook.Close()
	defer close(release)
	const deadline = 3 * time.Second
	srv := startHerald(t, t.TempDir(), "--webhook-allow-cidrs", "127.0.0.0/8", "--delivery-timeout", "60s",
		"--body-read-timeout", "5m", "--shutdown-timeout", deadline.String())
	createEndpoint(t, srv.base, fmt.Sprintf(`{"url":%q,"event_types":["*"]}`, hook.URL+"/hook"))
	if resp, body := do(t, "POST", srv.base+"/_herald/v1/events", map[string]string{"Content-Type": "application/json"},
		`{"type":"order.paid","data":{}}`); resp.StatusCode/100 != 2 {
		t.Fatalf("publish: %d %s", resp.StatusCode, body)
	}
	<-hung // the delivery is in flight
	if resp, body := do(t, "PUT", srv.base+"/slow", map[string]string{"Content-Type": "text/plain"}, ""); resp.StatusCode != http.StatusCreated {
		t.Fatalf("create: %d %s", resp.StatusCode, body)
	}
	conn, err := net.Dial("tcp", strings.TrimPrefix(srv.base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := fmt.Fprintf(conn, "POST /slow HTTP/1.1\r\nHost: %s\r\nContent-Type: text/plain\r\nContent-Length: 1000\r\n\r\nx",
		strings.TrimPrefix(srv.base, "http://")); err != nil {
		t.Fatal(err)
	}
	waitForMetric(t, srv.base, "herald_http_body_buffered_bytes 1000") // the append is reading its body

	start := time.Now()
	// The body never ends, so the drain runs out of time: herald says so
	// and exits with an error.
	if err := srv.terminate(4 * deadline); err == nil || !strings.Contains(srv.logs.String(), "http shutdown: context deadline exceeded") {
		t.Fatalf("herald exited with %v\n%s", err, srv.logs)
	}
	if took := time.Since(start); took > deadline+time.Second+deadline/2 {
		t.Fatalf("shutdown took %v with --shutdown-timeout %v\n%s", took, deadline, srv.logs)
	}
}
