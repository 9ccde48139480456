package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/heraldstreams/herald/internal/testbin"
)

// TestMain removes the herald binary the tests built.
func TestMain(m *testing.M) { os.Exit(testbin.Main(m)) }

// heraldBinary builds herald from this repository once per test run and
// returns its path.
func heraldBinary(t *testing.T) string {
	t.Helper()
	return testbin.Build(t, "../herald", false)
}

// startHerald runs the herald of heraldBinary, `herald serve` on a free
// loopback port with an empty data directory, and returns its base URL
// once it is ready. The process is killed when the test ends.
func startHerald(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	bin := heraldBinary(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	if err := ln.Close(); err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	cmd := exec.Command(bin, "serve", "--addr", addr, "--data-dir", filepath.Join(dir, "data"),
		"--log-level", "warn", "--long-poll-timeout", "5s", "--webhook-allow-cidrs", "127.0.0.0/8")
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		if err := cmd.Process.Kill(); err != nil {
			t.Errorf("killing herald: %v", err)
		}
		<-exited
	})
	base := "http://" + addr
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get(base + "/_herald/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return base
			}
		}
		select {
		case err := <-exited:
			t.Fatalf("herald exited before it was ready: %v\n%s", err, logs.String())
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("herald not ready after 30 s\n%s", logs.String())
		}
	}
}

// bench runs one workload and returns its JSON line, decoded, after
// checking that the human summary names the workload.
func bench(t *testing.T, args ...string) map[string]any {
	t.Helper()
	var js, human bytes.Buffer
	if err := run(context.Background(), args, &output{json: &js, human: &human}); err != nil {
		t.Fatalf("herald-bench %s: %v\n%s", strings.Join(args, " "), err, human.String())
	}
	lines := strings.Split(strings.TrimSpace(js.String()), "\n")
	if len(lines) != 1 {
		t.Fatalf("herald-bench %s printed %d JSON lines:\n%s", args[0], len(lines), js.String())
	}
	var r map[string]any
	if err := json.Unmarshal([]byte(lines[0]), &r); err != nil {
		t.Fatalf("herald-bench %s: %v in %s", args[0], err, lines[0])
	}
	if r["test"] != args[0] || !strings.HasPrefix(human.String(), args[0]) {
		t.Fatalf("herald-bench %s: test %v, summary %q", args[0], r["test"], human.String())
	}
	t.Logf("%s\n%s", lines[0], human.String())
	return r
}

// positive checks that each key of r is a number above zero.
func positive(t *testing.T, r map[string]any, keys ...string) {
	t.Helper()
	for _, k := range keys {
		if v, ok := r[k].(float64); !ok || v <= 0 {
			t.Errorf("%v: %s = %v, want a positive number", r["test"], k, r[k])
		}
	}
}

// zero checks that each key of r is the number zero.
func zero(t *testing.T, r map[string]any, keys ...string) {
	t.Helper()
	for _, k := range keys {
		if v, ok := r[k].(float64); !ok || v != 0 {
			t.Errorf("%v: %s = %v, want 0", r["test"], k, r[k])
		}
	}
	if classes, ok := r["error_classes"]; ok {
		t.Errorf("%v: errors: %v", r["test"], classes)
	}
}

// ordered checks that the latencies under keys do not decrease and that
// the last is below a minute: a percentile out of order or absurd means
// the numbers are wrong, whatever the machine's speed.
func ordered(t *testing.T, r map[string]any, keys ...string) {
	t.Helper()
	prev := 0.0
	for _, k := range keys {
		v, ok := r[k].(float64)
		if !ok || v < prev || v > 60_000 {
			t.Errorf("%v: %s = %v after %v: latencies must be ordered and under a minute", r["test"], k, r[k], prev)
		}
		prev = v
	}
}

// TestWorkloads runs each workload once against one herald, all at
// once: each works on streams and a subscription of its own.
func TestWorkloads(t *testing.T) {
	t.Parallel()
	base := startHerald(t)
	t.Run("append", func(t *testing.T) {
		t.Parallel()
		r := bench(t, "append", "-base", base, "-streams", "3", "-c", "4", "-d", "1s")
		positive(t, r, "rps", "n", "p50")
		zero(t, r, "errors", "non2xx")
		ordered(t, r, "p50", "p90", "p99", "max")
	})
	t.Run("create", func(t *testing.T) {
		t.Parallel()
		r := bench(t, "create", "-base", base, "-n", "100", "-c", "4")
		if r["n"] != 100.0 {
			t.Errorf("created %v streams, want 100", r["n"])
		}
		positive(t, r, "rps", "p50")
		zero(t, r, "errors")
		ordered(t, r, "p50", "p99")
	})
	t.Run("seed and read", func(t *testing.T) {
		t.Parallel()
		url := base + "/bench/big"
		r := bench(t, "seed", "-base", base, "-url", url, "-bytes", "200000", "-msg", "100", "-batch", "500")
		if r["msgs"] != 2000.0 {
			t.Errorf("seeded %v messages, want 2000", r["msgs"])
		}
		for _, full := range []string{"true", "false"} {
			r = bench(t, "read", "-base", base, "-url", url, "-c", "2", "-d", "1s", "-full="+full)
			positive(t, r, "MBps", "ops", "http_reqs", "p50")
			zero(t, r, "errors")
			ordered(t, r, "p50", "p99")
			// Every read starts at -1, so every operation reads every
			// message: 2,000 of them framed as JSON, at least 200 kB.
			if b := r["bytes_per_op"].(float64); b < 200_000 {
				t.Errorf("read -full=%s: %v bytes a read, want the whole stream", full, b)
			}
		}
	})
	for _, mode := range []string{"long-poll", "sse"} {
		t.Run("live "+mode, func(t *testing.T) {
			t.Parallel()
			r := bench(t, "live", "-base", base, "-mode", mode, "-readers", "20", "-n", "20")
			if r["deliveries"] != 400.0 {
				t.Errorf("%v deliveries, want 20 readers × 20 appends", r["deliveries"])
			}
			zero(t, r, "missing", "reader_errors")
			positive(t, r, "send2recv_p50", "post_p50")
			ordered(t, r, "send2recv_p50", "send2recv_p99", "send2recv_max")
		})
	}
	t.Run("hold", func(t *testing.T) {
		t.Parallel()
		r := bench(t, "hold", "-base", base, "-n", "50", "-hold", "1s")
		zero(t, r, "completed_early", "errors")
	})
	// The webhook workloads one after the other: both name their
	// subscription "bench".
	t.Run("webhook", func(t *testing.T) {
		t.Parallel()
		for _, mode := range []string{"callback", "respond"} {
			r := bench(t, "webhook", "-base", base, "-mode", mode, "-streams", "20", "-c", "10", "-lat", "10", "-d", "1s")
			if r["creation_wakes"] != 20.0 || r["lat_n"] != 10.0 {
				t.Errorf("creation wakes %v, timed wakes %v; want 20 and 10", r["creation_wakes"], r["lat_n"])
			}
			positive(t, r, "wakes_per_s", "hooks_per_s", "appends", "send2hook_p50", "tp_lat_p50")
			zero(t, r, "lat_lost", "wake_timeouts", "stalled_loops", "append_errors", "unexpected_hooks", "bad_signatures", "consumer_errors")
			ordered(t, r, "send2hook_p50", "send2hook_p99")
			ordered(t, r, "tp_lat_p50", "tp_lat_p99")
		}
	})
}

// TestPullWakeNoLostWake runs the pull-wake workload: every append is
// followed by its wake event, a claim that holds it, and an ack.
func TestPullWakeNoLostWake(t *testing.T) {
	t.Parallel()
	base := startHerald(t)
	r := bench(t, "pullwake", "-base", base, "-loops", "200")
	if r["loops"] != 200.0 || r["claims"].(float64) < 200 {
		t.Errorf("%v loops, %v claims; want 200 and at least one claim a loop", r["loops"], r["claims"])
	}
	zero(t, r, "stalled_loops")
	ordered(t, r, "wake_p50", "wake_p99")
}

func TestUsage(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{nil, {"nope"}, {"append", "-c", "0"}, {"live", "-mode", "poll"}, {"webhook", "-c", "5", "-streams", "2"}, {"pullwake", "-loops", "0"}, {"read"}, {"append", "extra"}} {
		var js, human bytes.Buffer
		if err := run(context.Background(), args, &output{json: &js, human: &human}); err == nil {
			t.Errorf("herald-bench %q: no error", args)
		}
		if js.Len() != 0 {
			t.Errorf("herald-bench %q printed a result: %s", args, js.String())
		}
	}
}

// TestWebhookRefusesForgedWakes sends the receiver a wake signed with
// another secret: it must answer 401 and count it, without routing it.
func TestWebhookRefusesForgedWakes(t *testing.T) {
	t.Parallel()
	rc := &receiver{router: newRouter(4), errs: &errorTally{}}
	rc.wakeConfig.Store(&wakeConfig{secret: "whsec_right"})
	body := []byte(`{"consumer_id":"s:%2Fa","epoch":1,"wake_id":"w","primary_stream":"/a","streams":[],"triggered_by":[],"callback":"http://x/cb","token":"t"}`)
	ts := fmt.Sprint(time.Now().Unix())
	for _, sig := range []string{"", "t=" + ts + ",sha256=" + strings.Repeat("ab", 32)} {
		req, err := http.NewRequest(http.MethodPost, "/hook", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		if sig != "" {
			req.Header.Set("Webhook-Signature", sig)
		}
		w := httptest.NewRecorder()
		rc.ServeHTTP(w, req)
		if w.Code != http.StatusUnauthorized {
			t.Errorf("signature %q: status %d, want 401", sig, w.Code)
		}
	}
	if rc.badSig.Load() != 2 || len(rc.router.queue) != 0 {
		t.Errorf("bad signatures %d, routed %d; want 2 and 0", rc.badSig.Load(), len(rc.router.queue))
	}
}
