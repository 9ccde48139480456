package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/heraldstreams/herald/client"
)

// exampleConsumer builds ./examples/consumer once per test run.
func exampleConsumer(t *testing.T) string {
	return buildBinary(t, "../examples/consumer")
}

// freeAddr returns a loopback address nothing listens on.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	if err := ln.Close(); err != nil {
		t.Fatal(err)
	}
	return addr
}

// createSubscription creates a subscription and returns its secret.
func createSubscription(t *testing.T, base, pattern, id, hook string) string {
	t.Helper()
	resp, body := do(t, "PUT", base+pattern+"?subscription="+id, jsonBody, `{"webhook": "`+hook+`"}`)
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("create subscription: %d %s", resp.StatusCode, body)
	}
	var sub struct {
		Secret string `json:"webhook_secret"`
	}
	if err := json.Unmarshal([]byte(body), &sub); err != nil || sub.Secret == "" {
		t.Fatalf("create subscription: %s (%v)", body, err)
	}
	return sub.Secret
}

// wakeHook is a webhook endpoint that answers every wake 2xx (the
// consumer goes LIVE) and sends it on the returned channel; check, when
// set, vets each request first (a failure answers 400 and fails the
// test).
func wakeHook(t *testing.T, check func(r *http.Request, body []byte) error) (*httptest.Server, <-chan *client.Wake) {
	wakes := make(chan *client.Wake, 16)
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err == nil && check != nil {
			err = check(r, body)
		}
		if err != nil {
			t.Errorf("wake: %v", err)
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		wake, err := client.ParseWake(body)
		if err != nil {
			t.Errorf("wake: %v", err)
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		wakes <- wake
		io.WriteString(w, "{}")
	}))
	return hook, wakes
}

// metric returns the value of one sample of /_herald/metrics, "" when it
// is absent.
func metric(t *testing.T, base, sample string) string {
	t.Helper()
	_, body := do(t, "GET", base+"/_herald/metrics", nil, "")
	for line := range strings.SplitSeq(body, "\n") {
		if v, ok := strings.CutPrefix(line, sample+" "); ok {
			return v
		}
	}
	return ""
}

// lineWaiter hands the lines a process prints to a test, one at a time.
type lineWaiter struct {
	lines chan string
}

func watchLines(r io.Reader) *lineWaiter {
	w := &lineWaiter{lines: make(chan string, 1024)}
	go func() {
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			w.lines <- sc.Text()
		}
		close(w.lines)
	}()
	return w
}

// next returns the next line containing want, failing the test after
// timeout.
func (w *lineWaiter) next(t *testing.T, want string, timeout time.Duration) string {
	t.Helper()
	deadline := time.After(timeout)
	for {
		select {
		case line, ok := <-w.lines:
			if !ok {
				t.Fatalf("the consumer exited before printing %q", want)
			}
			if strings.Contains(line, want) {
				return line
			}
		case <-deadline:
			t.Fatalf("the consumer did not print %q within %v", want, timeout)
		}
	}
}

// startExampleConsumer runs the example consumer with args (and env
// added to the test's environment, HERALD_KEY removed) until the test
// ends, and returns its output once it listens.
func startExampleConsumer(t *testing.T, env []string, args ...string) *lineWaiter {
	t.Helper()
	cmd := exec.Command(exampleConsumer(t), args...)
	cmd.Env = append(withoutHeraldKey(os.Environ()), env...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := cmd.Process.Kill(); err == nil {
			cmd.Wait()
		}
	})
	lines := watchLines(out)
	lines.next(t, "consumer listening", 30*time.Second)
	return lines
}

// withoutHeraldKey drops HERALD_KEY from an environment, so a test's
// consumer sees only the key the test gives it.
func withoutHeraldKey(env []string) []string {
	out := env[:0:0]
	for _, e := range env {
		if !strings.HasPrefix(e, "HERALD_KEY=") {
			out = append(out, e)
		}
	}
	return out
}

// TestExampleConsumer runs the example consumer against the real Herald:
// an append wakes it, it reads the new events with the Durable Streams
// protocol, acks them, says done and sleeps; the next append wakes it
// again from where it acked.
func TestExampleConsumer(t *testing.T) {
	t.Parallel()
	srv := startHerald(t, t.TempDir(), "--webhook-allow-cidrs", "127.0.0.0/8")
	hookAddr := freeAddr(t)
	secret := createSubscription(t, srv.base, "/agents/*", "example", "http://"+hookAddr+"/webhook")

	lines := startExampleConsumer(t, nil, "-listen", hookAddr, "-secret", secret)

	resp, body := do(t, "PUT", srv.base+"/agents/task-1", map[string]string{"Content-Type": "text/plain"}, "hello")
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("create stream: %d %s", resp.StatusCode, body)
	}
	lines.next(t, "msg=wake", 10*time.Second)
	if l := lines.next(t, "msg=batch", 10*time.Second); !strings.Contains(l, "offset=-1") || !strings.Contains(l, "data=hello") {
		t.Fatalf("first batch: %s", l)
	}
	if l := lines.next(t, "msg=sleep", 10*time.Second); !strings.Contains(l, "status=200") {
		t.Fatalf("first wake ended: %s", l)
	}

	resp, _ = do(t, "POST", srv.base+"/agents/task-1", map[string]string{"Content-Type": "text/plain"}, " world")
	next := resp.Header.Get("Stream-Next-Offset")
	lines.next(t, "msg=wake", 10*time.Second)
	l := lines.next(t, "msg=batch", 10*time.Second)
	if !strings.Contains(l, `data=" world"`) || !strings.Contains(l, "next_offset="+next) {
		t.Fatalf("second batch (only the new event, up to %s): %s", next, l)
	}
	lines.next(t, "msg=sleep", 10*time.Second)

	// Herald's metrics: two wake cycles, no retry, the consumer IDLE. The
	// done callback is answered before the consumer's webhook response
	// completes, so wait for the state rather than assume it.
	deadline := time.Now().Add(10 * time.Second)
	for metric(t, srv.base, `herald_subscription_consumers{state="IDLE"}`) != "1" {
		if time.Now().After(deadline) {
			t.Fatalf("the consumer is not IDLE:\n%s", srv.logs)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if got := metric(t, srv.base, "herald_subscription_wakes_total"); got != "2" {
		t.Fatalf("wakes_total = %s", got)
	}
	if got := metric(t, srv.base, "herald_subscription_wake_retries_total"); got != "0" {
		t.Fatalf("wake_retries_total = %s", got)
	}
}

// TestSubscriptionsSurviveKill9: after kill -9 and a restart on the same
// data directory the subscription, its consumer, epoch, offsets, secret
// and token key are all there: a token issued before the kill still
// works, and the next wake starts from the acked offset with the next
// epoch.
func TestSubscriptionsSurviveKill9(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var secret string
	var mu sync.Mutex
	hook, wakes := wakeHook(t, func(r *http.Request, body []byte) error {
		mu.Lock()
		s := secret
		mu.Unlock()
		return client.VerifyWakeSignature(s, r.Header.Get(client.WakeSignatureHeader), body, time.Now(), 0)
	})
	defer hook.Close()

	srv := startHerald(t, dir, "--webhook-allow-cidrs", "127.0.0.0/8")
	s := createSubscription(t, srv.base, "/jobs/*", "jobs", hook.URL+"/hook")
	mu.Lock()
	secret = s
	mu.Unlock()
	do(t, "PUT", srv.base+"/jobs/j1", map[string]string{"Content-Type": "text/plain"}, "")
	resp, _ := do(t, "POST", srv.base+"/jobs/j1", map[string]string{"Content-Type": "text/plain"}, "first")
	acked := resp.Header.Get("Stream-Next-Offset")

	var w1 *client.Wake
	select {
	case w1 = <-wakes:
	case <-time.After(10 * time.Second):
		t.Fatalf("no wake:\n%s", srv.logs)
	}
	ctx := context.Background()
	cb := client.NewCallbackClient(w1, nil)
	if _, err := cb.Send(ctx, client.Callback{Acks: []client.StreamOffset{{Path: "/jobs/j1", Offset: acked}}}); err != nil {
		t.Fatal(err)
	}

	srv.kill()
	srv = startHerald(t, dir, "--webhook-allow-cidrs", "127.0.0.0/8")

	resp, body := do(t, "GET", srv.base+"/**?subscription=jobs", nil, "")
	if resp.StatusCode != http.StatusOK || strings.Contains(body, "secret") || !strings.Contains(body, `"pattern":"/jobs/*"`) {
		t.Fatalf("subscription after kill -9: %d %s", resp.StatusCode, body)
	}
	// The callback URL names the new port; the consumer id and the token
	// are the same.
	w1.Callback = srv.base + "/callback/" + w1.ConsumerID
	w1.Token = cb.Token()
	cb = client.NewCallbackClient(w1, nil)
	res, err := cb.Send(ctx, client.Callback{Done: true})
	if err != nil {
		t.Fatalf("callback with a token from before the kill: %v\n%s", err, srv.logs)
	}
	if len(res.Streams) != 1 || res.Streams[0].Offset != acked {
		t.Fatalf("streams after restart: %+v, want acked %s", res.Streams, acked)
	}

	do(t, "POST", srv.base+"/jobs/j1", map[string]string{"Content-Type": "text/plain"}, "second")
	select {
	case w2 := <-wakes:
		if w2.Epoch != w1.Epoch+1 || w2.Streams[0].Offset != acked || w2.WakeID == w1.WakeID {
			t.Fatalf("wake after restart: %+v (first %+v)", w2, w1)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("no wake after restart:\n%s", srv.logs)
	}
}
