package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Tests of the real binary against what a hostile page, client or former
// key holder tries: a foreign web page calling a development Herald, idle
// connections that would lock everyone else out, a revoked key's open
// reads, and the audit trail that records each.

// TestForeignPagesCannotUseDevelopmentHerald: with access control off, a
// page of another site gets no CORS grant and none of its requests, even
// those a browser sends without asking (a text/plain POST, a form, a
// DELETE or PUT, were the preflight skipped), reaches a stream: 403
// ORIGIN_NOT_ALLOWED, nothing written or deleted. A page served on
// loopback (any port), and an origin of --cors-origins, keep working,
// preflights included; clients that send no Origin (SDKs, the conformance
// suite) too.
func TestForeignPagesCannotUseDevelopmentHerald(t *testing.T) {
	t.Parallel()
	s := startHerald(t, t.TempDir(), "--cors-origins", "https://console.example")
	if resp, body := do(t, "PUT", s.base+"/dev/s", map[string]string{"Content-Type": "text/plain"}, "kept"); resp.StatusCode != http.StatusCreated {
		t.Fatalf("create without Origin: %d %s", resp.StatusCode, body)
	}
	for _, origin := range []string{"https://evil.example", "http://evil.example:4437", "null", "https://console.example:8443", "http://console.example"} {
		for _, req := range []struct{ method, path, contentType, body string }{
			{"POST", "/dev/s", "text/plain", "injected"},
			{"POST", "/dev/s", "application/x-www-form-urlencoded", "a=b"},
			{"PUT", "/dev/other", "text/plain", ""},
			{"DELETE", "/dev/s", "", ""},
			{"GET", "/dev/s?offset=-1", "", ""},
			{"OPTIONS", "/dev/s", "", ""},
			{"GET", "/_herald/v1/streams", "", ""},
		} {
			hdr := map[string]string{"Origin": origin, "Access-Control-Request-Method": "DELETE"}
			if req.contentType != "" {
				hdr["Content-Type"] = req.contentType
			}
			resp, body := do(t, req.method, s.base+req.path, hdr, req.body)
			if req.method == "OPTIONS" {
				// A stream's preflight is answered without a grant, so
				// the browser never sends the request it asked about.
				if resp.StatusCode != http.StatusNoContent || resp.Header.Get("Access-Control-Allow-Origin") != "" {
					t.Errorf("preflight from %s: %d %v", origin, resp.StatusCode, resp.Header)
				}
				continue
			}
			if resp.StatusCode != http.StatusForbidden || errorCode(t, resp, body) != "ORIGIN_NOT_ALLOWED" || resp.Header.Get("Access-Control-Allow-Origin") != "" {
				t.Errorf("%s %s from %s: %d %v %s", req.method, req.path, origin, resp.StatusCode, resp.Header, body)
			}
		}
	}
	if resp, body := do(t, "GET", s.base+"/dev/s?offset=-1", nil, ""); resp.StatusCode != http.StatusOK || body != "kept" {
		t.Fatalf("after the foreign requests the stream reads %d %q, want 200 \"kept\"", resp.StatusCode, body)
	}
	if resp, _ := do(t, "HEAD", s.base+"/dev/other", nil, ""); resp.StatusCode != http.StatusNotFound {
		t.Fatalf("a foreign PUT created a stream: %d", resp.StatusCode)
	}

	for _, origin := range []string{"http://localhost:5173", "http://127.0.0.1:3000", "http://[::1]:8080", "https://console.example"} {
		resp, body := do(t, "OPTIONS", s.base+"/dev/s", map[string]string{"Origin": origin, "Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": "content-type"}, "")
		if resp.StatusCode != http.StatusNoContent || resp.Header.Get("Access-Control-Allow-Origin") != origin {
			t.Errorf("preflight from %s: %d %v %s", origin, resp.StatusCode, resp.Header, body)
		}
		resp, body = do(t, "POST", s.base+"/dev/s", map[string]string{"Origin": origin, "Content-Type": "text/plain"}, "+")
		if resp.StatusCode != http.StatusNoContent || resp.Header.Get("Access-Control-Allow-Origin") != origin ||
			!strings.Contains(resp.Header.Get("Access-Control-Expose-Headers"), "Stream-Next-Offset") {
			t.Errorf("append from %s: %d %v %s", origin, resp.StatusCode, resp.Header, body)
		}
	}
}

// TestIdleConnectionsCannotLockOutOthers: one client address holds at most
// --max-connections-per-client connections, so connections that send
// nothing, from one address, cannot take every slot: the admin, from
// another address, still gets through. A connection that sends no
// complete request within --header-timeout is closed.
func TestIdleConnectionsCannotLockOutOthers(t *testing.T) {
	t.Parallel()
	const perClient = 4
	s := startHeraldEnv(t, heraldBinary(t), []string{"HERALD_ADMIN_KEY=" + e2eAdminKey}, t.TempDir(),
		"--max-connections", "8", "--max-connections-per-client", "4", "--header-timeout", "3s")
	addr := strings.TrimPrefix(s.base, "http://")
	dialFrom := func(local string) net.Conn {
		t.Helper()
		d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(local)}}
		c, err := d.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close() }) // closing twice is harmless here
		return c
	}
	health := "GET /_herald/healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
	// The readiness probe's connection counts until the server sees it
	// closed: an attacker's connection refused meanwhile is opened again,
	// until perClient of them are held open.
	var idle []net.Conn
	var opened []time.Time
	for len(idle) < perClient {
		at := time.Now()
		c := dialFrom("127.0.0.1")
		if err := c.SetReadDeadline(time.Now().Add(200 * time.Millisecond)); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Read(make([]byte, 1)); isTimeout(err) {
			idle = append(idle, c) // held open, sending nothing
			opened = append(opened, at)
			continue
		}
		_ = c.Close() // refused: closed by the server already
	}

	// The attacker's address is full: its next connection is closed at once.
	extra := dialFrom("127.0.0.1")
	if err := extra.SetReadDeadline(time.Now().Add(5 * time.Second)); err != nil {
		t.Fatal(err)
	}
	_, _ = io.WriteString(extra, health) // may fail: the server may have closed it already
	if n, err := extra.Read(make([]byte, 1)); n != 0 || err == nil || isTimeout(err) {
		t.Fatalf("connection beyond the per-client limit: read %d bytes, %v; want it closed", n, err)
	}

	// The admin, from another address, is served meanwhile.
	admin := dialFrom("127.0.0.2")
	resp, body := rawRequest(t, admin, "GET /_herald/v1/keys HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer "+e2eAdminKey+"\r\n\r\n", 5*time.Second)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("admin from 127.0.0.2: %d %s", resp.StatusCode, body)
	}
	// The idle connections are closed after the header timeout: each
	// read ends with the server's close, not the test's deadline.
	for i, c := range idle {
		if err := c.SetReadDeadline(time.Now().Add(15 * time.Second)); err != nil {
			t.Fatal(err)
		}
		if n, err := c.Read(make([]byte, 1)); n != 0 || err == nil || isTimeout(err) {
			t.Fatalf("idle connection: read %d bytes, %v; want it closed by the server", n, err)
		}
		if took := time.Since(opened[i]); took < 2900*time.Millisecond || took > 10*time.Second {
			t.Errorf("idle connection closed after %v, want about the 3s header timeout", took)
		}
	}
	// Their address is served again.
	resp, _ = rawRequest(t, dialFrom("127.0.0.1"), health, 5*time.Second)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("a new connection of the freed address: %d", resp.StatusCode)
	}
	if got := metricWith(t, s.base, "herald_http_client_connections_refused_total"); got == "" || got == "0" {
		t.Errorf("herald_http_client_connections_refused_total = %q, want at least 1", got)
	}
}

// metricWith reads a sample of /_herald/metrics with the admin key.
func metricWith(t *testing.T, base, sample string) string {
	t.Helper()
	_, body := do(t, "GET", base+"/_herald/metrics", map[string]string{"Authorization": "Bearer " + e2eAdminKey}, "")
	for line := range strings.SplitSeq(body, "\n") {
		if v, ok := strings.CutPrefix(line, sample+" "); ok {
			return v
		}
	}
	return ""
}

// newE2EKey makes a key with the admin key and returns its id and secret.
func newE2EKey(t *testing.T, base, body string) (id, key string) {
	t.Helper()
	hdr := map[string]string{"Authorization": "Bearer " + e2eAdminKey, "Content-Type": "application/json"}
	resp, out := do(t, "POST", base+"/_herald/v1/keys", hdr, body)
	var k struct{ ID, Key string }
	if resp.StatusCode != http.StatusCreated || json.Unmarshal([]byte(out), &k) != nil || k.Key == "" {
		t.Fatalf("create key %s: %d %s", body, resp.StatusCode, out)
	}
	return k.ID, k.Key
}

// openSSE starts an SSE read with key and returns its body once the first
// control event arrived (the read is live at the server).
func openSSE(t *testing.T, url, key string) *bufio.Reader {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	req, err := http.NewRequestWithContext(ctx, "GET", url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("SSE: %d", resp.StatusCode)
	}
	r := bufio.NewReader(resp.Body)
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("SSE ended before its first control event: %v", err)
		}
		if strings.HasPrefix(line, "event: control") {
			return r
		}
	}
}

// sseEnd reads an SSE body to its end and returns when it ended.
func sseEnd(t *testing.T, r *bufio.Reader) time.Time {
	t.Helper()
	done := make(chan time.Time, 1)
	go func() {
		_, _ = io.Copy(io.Discard, r) // ends with the response, cut or not
		done <- time.Now()
	}()
	select {
	case end := <-done:
		return end
	case <-time.After(20 * time.Second):
		t.Fatal("the SSE response was not ended")
		return time.Time{}
	}
}

// TestRevokedKeyLosesItsLiveReads: deleting a key ends its open SSE
// responses and long-polls within a second (the long-poll answers 401
// INVALID_KEY), and a key that expires while reading loses its SSE
// response within a second of its expiry, long before --sse-max-duration.
func TestRevokedKeyLosesItsLiveReads(t *testing.T) {
	t.Parallel()
	s := startHeraldEnv(t, heraldBinary(t), []string{"HERALD_ADMIN_KEY=" + e2eAdminKey}, t.TempDir(),
		"--sse-max-duration", "60s", "--long-poll-timeout", "30s")
	admin := map[string]string{"Authorization": "Bearer " + e2eAdminKey, "Content-Type": "text/plain"}
	if resp, body := do(t, "PUT", s.base+"/rev/s", admin, "hello"); resp.StatusCode != http.StatusCreated {
		t.Fatalf("create: %d %s", resp.StatusCode, body)
	}

	id, key := newE2EKey(t, s.base, `{"scopes":["streams:read"]}`)
	sse := openSSE(t, s.base+"/rev/s?offset=-1&live=sse", key)
	type answer struct {
		status int
		body   string
		at     time.Time
	}
	polled := make(chan answer, 1)
	go func() {
		req, _ := http.NewRequest("GET", s.base+"/rev/s?offset=now&live=long-poll", nil)
		req.Header.Set("Authorization", "Bearer "+key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			polled <- answer{status: -1, body: err.Error(), at: time.Now()}
			return
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		polled <- answer{resp.StatusCode, string(b), time.Now()}
	}()
	// Wait until the long-poll waits at the server.
	for metricWith(t, s.base, `herald_stream_live_reads{mode="long-poll"}`) != "1" {
		time.Sleep(10 * time.Millisecond) // polling another process: no signal to wait on
	}

	revoked := time.Now()
	if resp, body := do(t, "DELETE", s.base+"/_herald/v1/keys/"+id, admin, ""); resp.StatusCode != http.StatusNoContent {
		t.Fatalf("delete key: %d %s", resp.StatusCode, body)
	}
	if took := sseEnd(t, sse).Sub(revoked); took > time.Second {
		t.Errorf("the SSE response of a deleted key ended %v after the delete, want within 1s", took)
	}
	select {
	case a := <-polled:
		if a.status != http.StatusUnauthorized || !strings.Contains(a.body, `"INVALID_KEY"`) {
			t.Errorf("the long-poll of a deleted key answered %d %s, want 401 INVALID_KEY", a.status, a.body)
		}
		if took := a.at.Sub(revoked); took > time.Second {
			t.Errorf("the long-poll of a deleted key answered %v after the delete, want within 1s", took)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the long-poll of a deleted key was not answered")
	}

	expires := time.Now().Add(2 * time.Second).UTC()
	_, short := newE2EKey(t, s.base, `{"scopes":["streams:read"],"expires_at":"`+expires.Format(time.RFC3339Nano)+`"}`)
	sse = openSSE(t, s.base+"/rev/s?offset=-1&live=sse", short)
	end := sseEnd(t, sse)
	if late := end.Sub(expires); late > time.Second || late < -100*time.Millisecond {
		t.Errorf("the SSE response of an expiring key ended %v after its expiry, want within 1s", late)
	}
}

// TestRevocationAcrossReplicas: a key deleted through one replica loses
// its open SSE response on another within a second, and the other
// replica, which had just verified it, refuses it at once.
func TestRevocationAcrossReplicas(t *testing.T) {
	t.Parallel()
	keyFile := filepath.Join(t.TempDir(), "admin.key")
	if err := os.WriteFile(keyFile, []byte(e2eAdminKey), 0o600); err != nil {
		t.Fatal(err)
	}
	rs := startReplicas(t, 2, "--admin-key-file", keyFile, "--sse-max-duration", "60s")
	a, b := rs[0], rs[1]
	admin := map[string]string{"Authorization": "Bearer " + e2eAdminKey, "Content-Type": "text/plain"}
	if resp, body := do(t, "PUT", a.base+"/rev/s", admin, "hello"); resp.StatusCode != http.StatusCreated {
		t.Fatalf("create: %d %s", resp.StatusCode, body)
	}
	id, key := newE2EKey(t, a.base, `{"scopes":["streams:read"]}`)
	sse := openSSE(t, b.base+"/rev/s?offset=-1&live=sse", key) // b has verified and cached the key

	revoked := time.Now()
	if resp, body := do(t, "DELETE", a.base+"/_herald/v1/keys/"+id, admin, ""); resp.StatusCode != http.StatusNoContent {
		t.Fatalf("delete key on a: %d %s", resp.StatusCode, body)
	}
	if took := sseEnd(t, sse).Sub(revoked); took > time.Second {
		t.Errorf("the SSE response on b ended %v after the delete on a, want within 1s", took)
	}
	if resp, body := do(t, "GET", b.base+"/rev/s?offset=-1", map[string]string{"Authorization": "Bearer " + key}, ""); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("b after the delete on a: %d %s, want 401", resp.StatusCode, body)
	}
}
