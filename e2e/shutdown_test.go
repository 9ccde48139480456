package e2e

import (
	"net/http"
	"net/http/httptrace"
	"testing"
	"time"
)

// TestGracefulShutdown: on SIGTERM an open long-poll is answered at once
// (not at its timeout), the process exits cleanly, and what was written
// before is there after a restart.
func TestGracefulShutdown(t *testing.T) {
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
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			polled <- result{err: err}
			return
		}
		resp.Body.Close()
		polled <- result{status: resp.StatusCode}
	}()
	<-armed
	// The long-poll request is written; a HEAD round trip after it makes
	// sure the server has accepted its connection too.
	do(t, "HEAD", srv.base+"/s", nil, "")

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
