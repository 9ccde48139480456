package e2e

import (
	"net/http"
	"testing"
	"time"
)

// TestReplicasSpawnAtOnce: a subscription created on replica A matches a
// stream created right after on replica B, with A stopped: B learned of
// the subscription from the change feed, so the stream's consumer is
// spawned and woken at once, not at B's next refresh or the stream's
// next append.
func TestReplicasSpawnAtOnce(t *testing.T) {
	t.Parallel()
	hook, wakes := wakeHook(t, nil)
	defer hook.Close()
	r := startReplicas(t, 2, "--webhook-allow-cidrs", "127.0.0.0/8")
	a, b := r[0], r[1]
	createSubscription(t, a.base, "/jobs/*", "jobs", hook.URL+"/hook")
	a.kill() // at once: B has not refreshed anything on a timer since
	start := time.Now()
	if resp, body := do(t, "PUT", b.base+"/jobs/j1", map[string]string{"Content-Type": "text/plain"}, "first"); resp.StatusCode != http.StatusCreated {
		t.Fatalf("create on B: %d %s", resp.StatusCode, body)
	}
	select {
	case w := <-wakes:
		if w.PrimaryStream != "/jobs/j1" {
			t.Fatalf("wake = %+v", w)
		}
		t.Logf("wake %v after the create", time.Since(start))
	case <-time.After(2 * time.Second):
		t.Fatalf("no wake within 2s of the create on B:\n%s", b.logs)
	}
}

// TestReplicasLongPoll: a long-poll on replica A answers with an append
// made on replica B.
func TestReplicasLongPoll(t *testing.T) {
	t.Parallel()
	r := startReplicas(t, 2, "--webhook-allow-cidrs", "127.0.0.0/8")
	a, b := r[0], r[1]
	text := map[string]string{"Content-Type": "text/plain"}
	resp, body := do(t, "PUT", b.base+"/s", text, "")
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("create: %d %s", resp.StatusCode, body)
	}
	tail := resp.Header.Get("Stream-Next-Offset")
	type answer struct {
		status int
		body   string
		err    error
	}
	got := make(chan answer, 1)
	go func() {
		resp, body, err := tryDo(t.Context(), "GET", a.base+"/s?live=long-poll&offset="+tail, nil, "")
		if err != nil {
			got <- answer{err: err}
			return
		}
		got <- answer{status: resp.StatusCode, body: body}
	}()
	// The long-poll is open on A before the append: otherwise it would
	// find the data at once and pass without A learning of B's append.
	waitForMetric(t, a.base, `herald_stream_live_reads{mode="long-poll"} 1`)
	start := time.Now()
	if resp, body := do(t, "POST", b.base+"/s", text, "hello"); resp.StatusCode != http.StatusNoContent {
		t.Fatalf("append on B: %d %s", resp.StatusCode, body)
	}
	select {
	case ans := <-got:
		if ans.err != nil || ans.status != http.StatusOK || ans.body != "hello" {
			t.Fatalf("long-poll on A = %d %q, %v", ans.status, ans.body, ans.err)
		}
		t.Logf("long-poll on A answered %v after the append on B", time.Since(start))
	case <-time.After(time.Second):
		t.Fatal("the long-poll on A did not see the append on B within 1s")
	}
}
