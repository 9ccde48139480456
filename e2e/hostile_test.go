package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/heraldstreams/herald/internal/testbin"
)

// Tests of the real binary against clients that misbehave on purpose:
// bodies announced but not sent, bodies sent a byte at a time, connection
// floods, oversized headers and disguised paths.

// dialRaw opens a plain TCP connection to herald, for requests net/http's
// client would not send.
func dialRaw(t *testing.T, base string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() }) // closing twice is harmless here
	return c
}

// rawRequest writes req on c and reads one response, waiting at most
// timeout for it.
func rawRequest(t *testing.T, c net.Conn, req string, timeout time.Duration) (*http.Response, string) {
	t.Helper()
	if _, err := io.WriteString(c, req); err != nil {
		t.Fatal(err)
	}
	return readRaw(t, c, timeout)
}

// readRaw reads one response from c within timeout.
func readRaw(t *testing.T, c net.Conn, timeout time.Duration) (*http.Response, string) {
	t.Helper()
	if err := c.SetReadDeadline(time.Now().Add(timeout)); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("no response within %v: %v", timeout, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(b)
}

// errorCode returns the JSON error code of an error body, failing the test
// when the body is not Herald's JSON error.
func errorCode(t *testing.T, resp *http.Response, body string) string {
	t.Helper()
	var e struct {
		Error struct{ Code, Message string } `json:"error"`
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		t.Fatalf("%d with Content-Type %q, want a JSON error: %q", resp.StatusCode, ct, body)
	}
	if err := json.Unmarshal([]byte(body), &e); err != nil || e.Error.Code == "" || e.Error.Message == "" {
		t.Fatalf("%d body %q is not a JSON error: %v", resp.StatusCode, body, err)
	}
	return e.Error.Code
}

// plainHeraldBinary builds ./cmd/herald without the race detector, once
// per test run, for measuring memory as a user's herald uses it.
func plainHeraldBinary(t *testing.T) string {
	t.Helper()
	return testbin.Build(t, "../cmd/herald", false)
}

// rssBytes is the resident set size of a process.
func rssBytes(t *testing.T, pid int) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Fatal("no VmRSS in /proc status")
	return 0
}

// waitForMetricAtLeast polls a metric sample until it reaches want.
func waitForMetricAtLeast(t *testing.T, base, sample string, want float64) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		v, err := strconv.ParseFloat(metric(t, base, sample), 64)
		if err == nil && v >= want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("metric %s = %q, never reached %v", sample, metric(t, base, sample), want)
		}
		time.Sleep(10 * time.Millisecond) // polling another process: no signal to wait on
	}
}

// TestAnnouncedBodiesReserveNoMemory: 300 connections that announce the
// largest body and send none of it do not make Herald hold memory for
// them, and Herald keeps serving.
func TestAnnouncedBodiesReserveNoMemory(t *testing.T) {
	t.Parallel()
	// The binary as shipped: the race detector's own memory would swamp
	// what is measured.
	srv := startHeraldBinary(t, plainHeraldBinary(t), t.TempDir())
	resp, body := do(t, "PUT", srv.base+"/big", map[string]string{"Content-Type": "text/plain"}, "")
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("create = %d %s", resp.StatusCode, body)
	}
	goroutines, err := strconv.ParseFloat(metric(t, srv.base, "go_goroutines"), 64)
	if err != nil {
		t.Fatal(err)
	}
	const conns = 300
	req := "POST /big HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: text/plain\r\nContent-Length: 16777216\r\n\r\n"
	flood := func() []net.Conn {
		cs := make([]net.Conn, conns)
		for i := range cs {
			cs[i] = dialRaw(t, srv.base)
			if _, err := io.WriteString(cs[i], req); err != nil {
				t.Fatal(err)
			}
		}
		// Every connection has its goroutine once Herald has accepted it.
		waitForMetricAtLeast(t, srv.base, "go_goroutines", goroutines+conns)
		return cs
	}
	// Two waves, the first one closed: memory a server reserved for the
	// first and freed is reused, and so touched, by the second.
	for _, c := range flood() {
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
	}
	for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if n, err := strconv.ParseFloat(metric(t, srv.base, "go_goroutines"), 64); err == nil && n < goroutines+10 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the first wave's connections are still served")
		}
	}
	flood()
	// Handlers start as their headers are parsed: watch the resident set
	// for a while instead of looking once.
	const limit = 150 << 20
	pid := srv.cmd.Process.Pid
	for end := time.Now().Add(2 * time.Second); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		if rss := rssBytes(t, pid); rss > limit {
			t.Fatalf("RSS %d MB with %d announced bodies; want under %d MB", rss>>20, conns, limit>>20)
		}
	}
	resp, body = do(t, "POST", srv.base+"/big", map[string]string{"Content-Type": "text/plain"}, "still serving")
	if resp.StatusCode != http.StatusNoContent {
		t.Fatalf("append beside the announced bodies = %d %s", resp.StatusCode, body)
	}
	t.Logf("RSS with %d announced bodies: %d MB", conns, rssBytes(t, pid)>>20)
}

// TestBodyBudget: the bytes of request bodies buffered at once are bounded
// by --max-buffered-bytes; a request beyond it gets 503 SERVER_BUSY with
// Retry-After, and succeeds once the budget is free again.
func TestBodyBudget(t *testing.T) {
	t.Parallel()
	srv := startHerald(t, t.TempDir(), "--max-buffered-bytes", "1048576", "--max-body-bytes", "1048576")
	resp, body := do(t, "PUT", srv.base+"/s", map[string]string{"Content-Type": "application/octet-stream"}, "")
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("create = %d %s", resp.StatusCode, body)
	}
	// A slow upload holds most of the budget: 700 KiB of its 900 KiB.
	slow := dialRaw(t, srv.base)
	const total, sent = 900 << 10, 700 << 10
	head := fmt.Sprintf("POST /s HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/octet-stream\r\nContent-Length: %d\r\n\r\n", total)
	if _, err := io.WriteString(slow, head+strings.Repeat("a", sent)); err != nil {
		t.Fatal(err)
	}
	waitForMetricAtLeast(t, srv.base, "herald_http_body_buffered_bytes", sent)

	hdr := map[string]string{"Content-Type": "application/octet-stream"}
	resp, body = do(t, "POST", srv.base+"/s", hdr, strings.Repeat("b", 400<<10))
	if resp.StatusCode != http.StatusServiceUnavailable || errorCode(t, resp, body) != "SERVER_BUSY" || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("append beyond the budget = %d %q Retry-After %q; want 503 SERVER_BUSY with Retry-After", resp.StatusCode, body, resp.Header.Get("Retry-After"))
	}
	if got := metric(t, srv.base, "herald_http_body_budget_refusals_total"); got != "1" {
		t.Fatalf("herald_http_body_budget_refusals_total = %q, want 1", got)
	}

	// The slow upload completes; its budget returns; the retry succeeds.
	resp, body = rawRequest(t, slow, strings.Repeat("a", total-sent), 10*time.Second)
	if resp.StatusCode != http.StatusNoContent {
		t.Fatalf("slow upload = %d %s", resp.StatusCode, body)
	}
	resp, body = do(t, "POST", srv.base+"/s", hdr, strings.Repeat("b", 400<<10))
	if resp.StatusCode != http.StatusNoContent {
		t.Fatalf("retry after the budget is free = %d %s", resp.StatusCode, body)
	}
	if got := metric(t, srv.base, "herald_http_body_buffered_bytes"); got != "0" {
		t.Fatalf("herald_http_body_buffered_bytes after every body = %q, want 0", got)
	}
	if got := len(readAll(t, srv.base+"/s")); got != total+400<<10 {
		t.Fatalf("stream holds %d bytes, want %d", got, total+400<<10)
	}
}

// TestSlowBodiesAreCut: a body that stops arriving is cut after
// --body-read-timeout with 408 BODY_TIMEOUT, on stream routes and on
// Herald's API alike, and counted; an upload at a steady rate that takes
// longer than the timeout, a long-poll and an SSE response are not cut.
// Each case waits out real time of its own, so they run at once.
func TestSlowBodiesAreCut(t *testing.T) {
	t.Parallel()
	srv := startHerald(t, t.TempDir(), "--body-read-timeout", "1s", "--min-body-rate", "65536", "--sse-max-duration", "2s")
	hdr := map[string]string{"Content-Type": "application/octet-stream"}
	// The live reads read a stream of their own, which the uploads leave
	// alone: an append would end the long-poll early.
	var tail string
	for _, path := range []string{"/s", "/live"} {
		resp, body := do(t, "PUT", srv.base+path, hdr, "")
		if resp.StatusCode != http.StatusCreated {
			t.Fatalf("create %s = %d %s", path, resp.StatusCode, body)
		}
		tail = resp.Header.Get("Stream-Next-Offset")
	}

	t.Run("cases", func(t *testing.T) {
		t.Run("stalled bodies", func(t *testing.T) {
			t.Parallel()
			// An append whose body stalls after one byte.
			start := time.Now()
			stalled := dialRaw(t, srv.base)
			resp, body := rawRequest(t, stalled, "POST /s HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/octet-stream\r\nContent-Length: 100\r\n\r\nx", 10*time.Second)
			if resp.StatusCode != http.StatusRequestTimeout || errorCode(t, resp, body) != "BODY_TIMEOUT" {
				t.Fatalf("stalled append = %d %s; want 408 BODY_TIMEOUT", resp.StatusCode, body)
			}
			if took := time.Since(start); took > 5*time.Second {
				t.Fatalf("stalled append cut after %v; want about 1s", took)
			}

			// A stalled body on Herald's own API: the server ends the request.
			api := dialRaw(t, srv.base)
			if _, err := io.WriteString(api, "POST /_herald/v1/endpoints HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"); err != nil {
				t.Fatal(err)
			}
			if err := api.SetReadDeadline(time.Now().Add(10 * time.Second)); err != nil {
				t.Fatal(err)
			}
			if _, err := io.ReadAll(api); err != nil {
				t.Fatalf("API request with a stalled body still open: %v", err)
			}
			waitForMetricAtLeast(t, srv.base, "herald_http_bodies_cut_total", 2)
		})

		t.Run("steady upload", func(t *testing.T) {
			t.Parallel()
			// 256 KiB in 16 KiB pieces, one every 100 ms: 160 KiB/s, above
			// the minimum rate, for longer than the timeout.
			pr, pw := io.Pipe()
			go func() {
				for range 16 {
					if _, err := pw.Write(make([]byte, 16<<10)); err != nil {
						return
					}
					time.Sleep(100 * time.Millisecond) // the pace of a slow client
				}
				_ = pw.Close() // a pipe's Close never fails
			}()
			req, err := http.NewRequest("POST", srv.base+"/s", pr)
			if err != nil {
				t.Fatal(err)
			}
			req.ContentLength = 256 << 10
			req.Header.Set("Content-Type", "application/octet-stream")
			start := time.Now()
			steady, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			steady.Body.Close()
			if steady.StatusCode != http.StatusNoContent {
				t.Fatalf("steady upload = %d", steady.StatusCode)
			}
			if took := time.Since(start); took < time.Second {
				t.Fatalf("steady upload took %v, not longer than the body timeout: the test proves nothing", took)
			}
		})

		t.Run("long-poll", func(t *testing.T) {
			t.Parallel()
			// A long-poll (2 s in the harness) outlives the body timeout.
			resp, body := do(t, "GET", srv.base+"/live?live=long-poll&offset=now", nil, "")
			if resp.StatusCode != http.StatusNoContent {
				t.Fatalf("long-poll = %d %s", resp.StatusCode, body)
			}
		})

		t.Run("SSE", func(t *testing.T) {
			t.Parallel()
			// An SSE response lasts its --sse-max-duration.
			start := time.Now()
			resp, body := do(t, "GET", srv.base+"/live?live=sse&offset="+tail, nil, "")
			if took := time.Since(start); resp.StatusCode != http.StatusOK || took < 1900*time.Millisecond {
				t.Fatalf("SSE = %d after %v; want 200 lasting 2s: %s", resp.StatusCode, took, body)
			}
		})
	})
	if got := metric(t, srv.base, "herald_http_bodies_cut_total"); got != "2" {
		t.Fatalf("herald_http_bodies_cut_total = %q, want 2", got)
	}
}

// TestConnectionCap: beyond --max-connections open connections, Herald
// closes new connections at once and counts them; once a connection
// closes, new ones are served again.
func TestConnectionCap(t *testing.T) {
	t.Parallel()
	const maxConns = 8
	srv := startHerald(t, t.TempDir(), "--max-connections", strconv.Itoa(maxConns), "--max-connections-per-client", strconv.Itoa(maxConns), "--header-timeout", "60s")
	health := "GET /_herald/healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
	// hold opens a keep-alive connection and proves Herald serves it. The
	// readiness check's connection may still count for a moment after the
	// client is done with it: a refused dial is tried again.
	hold := func() net.Conn {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			c, err := net.Dial("tcp", strings.TrimPrefix(srv.base, "http://"))
			if err != nil {
				t.Fatal(err)
			}
			if err := c.SetDeadline(time.Now().Add(5 * time.Second)); err != nil {
				t.Fatal(err)
			}
			if _, err := io.WriteString(c, health); err == nil {
				resp, err := http.ReadResponse(bufio.NewReader(c), nil)
				if err == nil {
					_, err = io.Copy(io.Discard, resp.Body) // the next answer starts after it
				}
				if err == nil && resp.StatusCode == http.StatusOK {
					t.Cleanup(func() { _ = c.Close() }) // closing twice is harmless here
					return c
				}
			}
			_ = c.Close() // refused: the server closed it already
			if time.Now().After(deadline) {
				t.Fatal("no connection served")
			}
			time.Sleep(10 * time.Millisecond) // polling another process: no signal to wait on
		}
	}
	var held []net.Conn
	for range maxConns {
		held = append(held, hold())
	}

	// Every slot is taken: the next connection is closed without an answer.
	extra := dialRaw(t, srv.base)
	if err := extra.SetReadDeadline(time.Now().Add(5 * time.Second)); err != nil {
		t.Fatal(err)
	}
	_, _ = io.WriteString(extra, health) // may fail: the server may have closed it already
	if n, err := extra.Read(make([]byte, 1)); n != 0 || err == nil || isTimeout(err) {
		t.Fatalf("connection beyond the cap: read %d bytes, %v; want it closed", n, err)
	}

	// A slot frees when a held connection closes.
	if err := held[0].Close(); err != nil {
		t.Fatal(err)
	}
	scrape := hold()
	resp, body := rawRequest(t, scrape, "GET /_herald/metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", 5*time.Second)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("metrics = %d", resp.StatusCode)
	}
	samples := map[string]string{}
	for line := range strings.SplitSeq(body, "\n") {
		if k, v, ok := strings.Cut(line, " "); ok && strings.HasPrefix(k, "herald_http_connections") {
			samples[k] = v
		}
	}
	if samples["herald_http_connections_open"] != strconv.Itoa(maxConns) {
		t.Errorf("herald_http_connections_open = %q, want %d", samples["herald_http_connections_open"], maxConns)
	}
	if n, err := strconv.Atoi(samples["herald_http_connections_refused_total"]); err != nil || n < 1 {
		t.Errorf("herald_http_connections_refused_total = %q, want at least 1", samples["herald_http_connections_refused_total"])
	}
}

func isTimeout(err error) bool {
	ne, ok := err.(net.Error)
	return ok && ne.Timeout()
}

// TestProtocolHeaderCaps: the protocol headers Herald stores are capped at
// 256 bytes (400 HEADER_TOO_LONG), and the whole header section at
// --max-header-bytes (431).
func TestProtocolHeaderCaps(t *testing.T) {
	t.Parallel()
	srv := startHerald(t, t.TempDir(), "--max-header-bytes", "16384")
	ok := strings.Repeat("p", 256)
	long := strings.Repeat("p", 257)
	resp, body := do(t, "PUT", srv.base+"/s", map[string]string{"Content-Type": "text/plain"}, "")
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("create = %d %s", resp.StatusCode, body)
	}
	for _, c := range []struct {
		name, method, path string
		hdr                map[string]string
		want               int
	}{
		{"Stream-Seq at the cap", "POST", "/s", map[string]string{"Content-Type": "text/plain", "Stream-Seq": ok}, http.StatusNoContent},
		{"Stream-Seq over it", "POST", "/s", map[string]string{"Content-Type": "text/plain", "Stream-Seq": long + "z"}, http.StatusBadRequest},
		{"Producer-Id at the cap", "POST", "/s", map[string]string{"Content-Type": "text/plain", "Producer-Id": ok, "Producer-Epoch": "0", "Producer-Seq": "0"}, http.StatusOK},
		{"Producer-Id over it", "POST", "/s", map[string]string{"Content-Type": "text/plain", "Producer-Id": long, "Producer-Epoch": "0", "Producer-Seq": "0"}, http.StatusBadRequest},
		{"Content-Type over it", "PUT", "/t", map[string]string{"Content-Type": "text/" + long}, http.StatusBadRequest},
		{"Content-Type of an append over it", "POST", "/s", map[string]string{"Content-Type": "text/" + long}, http.StatusBadRequest},
		{"Stream-Seq of 900 KiB", "POST", "/s", map[string]string{"Content-Type": "text/plain", "Stream-Seq": strings.Repeat("9", 900<<10)}, http.StatusRequestHeaderFieldsTooLarge},
	} {
		resp, body := do(t, c.method, srv.base+c.path, c.hdr, "x")
		if resp.StatusCode != c.want {
			t.Errorf("%s: %d %.200s; want %d", c.name, resp.StatusCode, body, c.want)
			continue
		}
		if c.want == http.StatusBadRequest {
			if code := errorCode(t, resp, body); code != "HEADER_TOO_LONG" {
				t.Errorf("%s: code %s, want HEADER_TOO_LONG", c.name, code)
			}
		}
	}
	// Nothing over the cap was stored: the stream holds the two accepted
	// appends, and /t does not exist.
	if got := string(readAll(t, srv.base+"/s")); got != "xx" {
		t.Fatalf("stream holds %q, want the two accepted appends", got)
	}
	if resp, _ := do(t, "HEAD", srv.base+"/t", nil, ""); resp.StatusCode != http.StatusNotFound {
		t.Fatalf("HEAD /t = %d, want 404", resp.StatusCode)
	}
}

// TestReservedPrefixAliases: a percent-encoded spelling of /_herald/ or
// /callback/, or of a route under them, is refused with 400
// NON_CANONICAL_PATH, so that a proxy rule
// on the literal prefix cannot be walked around; so is a reserved path
// with "." segments or repeated slashes, which net/http would otherwise
// redirect with an HTML body.
func TestReservedPrefixAliases(t *testing.T) {
	t.Parallel()
	srv := startHerald(t, t.TempDir())
	for _, path := range []string{
		"/%5fherald/healthz",
		"/%5Fherald/healthz",
		"/_herald%2Fhealthz",
		"/%5f%68erald/v1/endpoints",
		"/_%68erald/readyz",
		"/%63allback/c1",
		"/callback%2fc1",
		"/%5fherald",
		"/_herald/v1/%6beys",
		"/_herald/%761/keys",
		"/_herald/v1/keys/%6b",
		"/_herald/v1/endpoints/ep%2Fdeliveries",
		"/_herald/v1/consumers/s:%2fa",
	} {
		c := dialRaw(t, srv.base)
		resp, body := rawRequest(t, c, "GET "+path+" HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n", 5*time.Second)
		if resp.StatusCode != http.StatusBadRequest || errorCode(t, resp, body) != "NON_CANONICAL_PATH" {
			t.Errorf("GET %s = %d %s; want 400 NON_CANONICAL_PATH", path, resp.StatusCode, body)
		}
	}
	// The canonical spelling, and encodings elsewhere in a stream path,
	// are served as before.
	if resp, body := do(t, "GET", srv.base+"/_herald/healthz", nil, ""); resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /_herald/healthz = %d %s", resp.StatusCode, body)
	}
	c := dialRaw(t, srv.base)
	resp, body := rawRequest(t, c, "PUT /a%5fb/%5fherald HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 0\r\nConnection: close\r\n\r\n", 5*time.Second)
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("PUT /a%%5fb/%%5fherald = %d %s", resp.StatusCode, body)
	}

	// A path net/http's mux would redirect to its cleaned form: a JSON
	// refusal, not a redirect with an HTML body.
	for _, path := range []string{"/_herald//healthz", "/_herald/./healthz", "/_herald/v1/../healthz"} {
		c := dialRaw(t, srv.base)
		resp, body := rawRequest(t, c, "GET "+path+" HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n", 5*time.Second)
		if resp.StatusCode != http.StatusBadRequest || errorCode(t, resp, body) != "NON_CANONICAL_PATH" {
			t.Errorf("GET %s = %d %s; want 400 NON_CANONICAL_PATH", path, resp.StatusCode, body)
		}
	}
}
