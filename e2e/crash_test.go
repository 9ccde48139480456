package e2e

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/heraldstreams/herald/protocol"
)

// ack is one append that got a 2xx: its body and the tail it was given.
type ack struct {
	stream string
	body   string
	next   string
}

// TestKillNineLosesNoAcknowledgedAppend drives concurrent appends on many
// streams, kills herald with SIGKILL in the middle of the load, restarts it
// on the same data directory and checks that every acknowledged append is
// there byte-exact at the offset it was given, and that producer state,
// closure, TTL, Expires-At, forks and content types survived.
func TestKillNineLosesNoAcknowledgedAppend(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	srv := startHerald(t, dir)
	base := srv.base + "/crash"

	// State that must survive besides the load.
	expires := time.Now().Add(2 * time.Hour).UTC().Truncate(time.Second)
	setup := []struct {
		method, path string
		hdr          map[string]string
		body         string
		want         int
	}{
		{"PUT", "/json", map[string]string{"Content-Type": "application/json"}, `[{"a":1},{"b":2}]`, 201},
		{"PUT", "/ttl", map[string]string{"Content-Type": "text/plain", "Stream-TTL": "3600"}, "t", 201},
		{"PUT", "/abs", map[string]string{"Content-Type": "text/plain", "Stream-Expires-At": expires.Format(time.RFC3339)}, "e", 201},
		{"PUT", "/closed", map[string]string{"Content-Type": "text/plain"}, "first;", 201},
		{"POST", "/closed", map[string]string{"Content-Type": "text/plain", "Stream-Closed": "true"}, "last", 204},
		{"PUT", "/producer", map[string]string{"Content-Type": "text/plain"}, "", 201},
		{"POST", "/producer", map[string]string{"Content-Type": "text/plain", "Producer-Id": "p1", "Producer-Epoch": "3", "Producer-Seq": "0"}, "a", 200},
		{"POST", "/producer", map[string]string{"Content-Type": "text/plain", "Producer-Id": "p1", "Producer-Epoch": "3", "Producer-Seq": "1"}, "b", 200},
		{"PUT", "/fork-src", map[string]string{"Content-Type": "text/plain"}, "source-", 201},
		{"PUT", "/fork", map[string]string{"Stream-Forked-From": "/crash/fork-src"}, "", 201},
		{"POST", "/fork", map[string]string{"Content-Type": "text/plain"}, "fork", 204},
		{"POST", "/fork-src", map[string]string{"Content-Type": "text/plain"}, "more", 204},
	}
	for _, s := range setup {
		resp, body := do(t, s.method, base+s.path, s.hdr, s.body)
		if resp.StatusCode != s.want {
			t.Fatalf("%s %s = %d %s, want %d", s.method, s.path, resp.StatusCode, body, s.want)
		}
	}

	const streams = 40
	types := []string{"application/octet-stream", "text/plain"}
	for i := range streams {
		resp, body := do(t, "PUT", fmt.Sprintf("%s/load-%d", base, i), map[string]string{"Content-Type": types[i%2]}, "")
		if resp.StatusCode != http.StatusCreated {
			t.Fatalf("create load-%d = %d %s", i, resp.StatusCode, body)
		}
	}

	// Load: 16 writers until the process dies under them.
	var (
		mu         sync.Mutex
		acks       []ack
		wg         sync.WaitGroup
		enough     = make(chan struct{})
		enoughOnce sync.Once
	)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for w := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 7))
			for i := 0; ctx.Err() == nil; i++ {
				n := rng.IntN(streams)
				path := fmt.Sprintf("/load-%d", n)
				body := fmt.Sprintf("w%02d-i%05d-%s;", w, i, string(make([]byte, rng.IntN(64))))
				resp, _, err := tryDo(ctx, "POST", base+path, map[string]string{"Content-Type": types[n%2]}, body)
				if err != nil {
					return // the server is gone
				}
				if resp.StatusCode/100 == 2 {
					mu.Lock()
					acks = append(acks, ack{path, body, resp.Header.Get("Stream-Next-Offset")})
					if len(acks) >= 2000 {
						enoughOnce.Do(func() { close(enough) })
					}
					mu.Unlock()
				}
			}
		}()
	}
	// Kill once a good number of appends were acknowledged.
	select {
	case <-enough:
	case <-time.After(20 * time.Second):
	}
	srv.kill()
	cancel()
	wg.Wait()
	if len(acks) < 100 {
		t.Fatalf("only %d appends were acknowledged before the kill\n%s", len(acks), srv.logs)
	}
	t.Logf("%d appends acknowledged before SIGKILL", len(acks))

	srv = startHerald(t, dir)
	base = srv.base + "/crash"

	// Every acknowledged append is at its offset, byte-exact.
	contents := make(map[string][]byte)
	for i := range streams {
		path := fmt.Sprintf("/load-%d", i)
		contents[path] = readAll(t, base+path)
	}
	for _, a := range acks {
		end, err := protocol.ParsePosition(a.next)
		if err != nil {
			t.Fatalf("ack of %s has offset %q: %v", a.stream, a.next, err)
		}
		data := contents[a.stream]
		start := end - int64(len(a.body))
		if start < 0 || end > int64(len(data)) || string(data[start:end]) != a.body {
			t.Fatalf("acknowledged append to %s ending at %d is lost or changed (stream has %d bytes)", a.stream, end, len(data))
		}
	}

	// Everything else survived too.
	checks := []struct {
		method, path string
		hdr          map[string]string
		body         string
		status       int
		header       map[string]string
		wantBody     string
	}{
		{"GET", "/json", nil, "", 200, map[string]string{"Content-Type": "application/json"}, `[{"a":1},{"b":2}]`},
		{"HEAD", "/ttl", nil, "", 200, map[string]string{"Stream-TTL": "3600", "Content-Type": "text/plain"}, ""},
		{"GET", "/closed", nil, "", 200, map[string]string{"Stream-Closed": "true"}, "first;last"},
		{"POST", "/closed", map[string]string{"Content-Type": "text/plain"}, "x", 409, map[string]string{"Stream-Closed": "true"}, ""},
		{"POST", "/producer", map[string]string{"Content-Type": "text/plain", "Producer-Id": "p1", "Producer-Epoch": "2", "Producer-Seq": "0"}, "z", 403, map[string]string{"Producer-Epoch": "3"}, ""},
		{"POST", "/producer", map[string]string{"Content-Type": "text/plain", "Producer-Id": "p1", "Producer-Epoch": "3", "Producer-Seq": "1"}, "b", 204, nil, ""},
		{"GET", "/producer", nil, "", 200, nil, "ab"},
		{"GET", "/fork", nil, "", 200, map[string]string{"Content-Type": "text/plain"}, "source-fork"},
		{"GET", "/fork-src", nil, "", 200, nil, "source-more"},
	}
	for _, c := range checks {
		resp, body := do(t, c.method, base+c.path, c.hdr, c.body)
		if resp.StatusCode != c.status {
			t.Errorf("%s %s = %d %s, want %d", c.method, c.path, resp.StatusCode, body, c.status)
			continue
		}
		for k, v := range c.header {
			if got := resp.Header.Get(k); got != v {
				t.Errorf("%s %s: %s = %q, want %q", c.method, c.path, k, got, v)
			}
		}
		if c.method == "GET" && body != c.wantBody {
			t.Errorf("%s %s body = %q, want %q", c.method, c.path, body, c.wantBody)
		}
	}
	resp, _ := do(t, "HEAD", base+"/abs", nil, "")
	got, err := time.Parse(time.RFC3339, resp.Header.Get("Stream-Expires-At"))
	if resp.StatusCode != http.StatusOK || err != nil || !got.Equal(expires) {
		t.Errorf("HEAD /abs = %d, Stream-Expires-At %q (%v), want %v", resp.StatusCode, resp.Header.Get("Stream-Expires-At"), err, expires)
	}
}

// readAll reads a whole stream with catch-up reads.
func readAll(t *testing.T, url string) []byte {
	t.Helper()
	var out []byte
	offset := "-1"
	for range 100000 {
		resp, body := do(t, "GET", url+"?offset="+offset, nil, "")
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s = %d %s", url, resp.StatusCode, body)
		}
		out = append(out, body...)
		if resp.Header.Get("Stream-Up-To-Date") == "true" {
			return out
		}
		offset = resp.Header.Get("Stream-Next-Offset")
	}
	t.Fatalf("GET %s never reached the tail", url)
	return nil
}
