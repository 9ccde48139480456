package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/heraldstreams/herald/client"
)

// runPullWake measures the reserved API's pull-wake delivery as a worker
// sees it: -loops closed loops of append → wake event in the wake stream
// (read by long-poll) → claim → read the new data → ack done. A loop
// whose wake event does not come within -wake-timeout, or whose claim
// does not find the appended data, counts as stalled: a lost wake.
func runPullWake(ctx context.Context, args []string, out *output) error {
	fs := flag.NewFlagSet("pullwake", flag.ContinueOnError)
	var tf targetFlags
	tf.add(fs)
	root := fs.String("root", "/", "the server's --stream-root")
	loops := fs.Int("loops", 1000, "closed loops: append, wake, claim, read, ack")
	wakeTimeout := fs.Duration("wake-timeout", 10*time.Second, "how long a loop waits for its wake event before it counts as stalled")
	if err := parse(fs, args); err != nil {
		return err
	}
	if *loops < 1 {
		return errors.New("pullwake: -loops must be at least 1")
	}
	t := newTarget(tf, 8, 60*time.Second)
	rootURL := t.base + strings.TrimSuffix(*root, "/")
	run := "bench/pull-" + runID()
	wake, work := run+"/wake", run+"/work/s"
	if err := t.createStream(ctx, rootURL+"/"+wake, "application/json", nil); err != nil {
		return err
	}
	if err := t.createStream(ctx, rootURL+"/"+work, "text/plain", nil); err != nil {
		return err
	}
	subID := strings.ReplaceAll(run, "/", "-")
	cfg := fmt.Sprintf(`{"type":"pull-wake","pattern":%q,"wake_stream":%q,"lease_ttl_ms":10000}`, run+"/work/*", wake)
	resp, body, err := t.do(ctx, http.MethodPut, rootURL+"/__ds/subscriptions/"+subID, "application/json", []byte(cfg))
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusCreated {
		return fmt.Errorf("pullwake: creating the subscription: %d %s", resp.StatusCode, body)
	}
	defer func() {
		if _, _, err := t.do(context.WithoutCancel(ctx), http.MethodDelete, rootURL+"/__ds/subscriptions/"+subID, "", nil); err != nil {
			t.errs.note(err)
		}
	}()
	w := &client.PullWorker{RootURL: rootURL, Subscription: subID, Worker: "bench", Key: tf.key, HTTPClient: t.hc}

	var lat latencies
	var stalls, claims, wakeEvents int
	offset := "-1"
	for i := 0; i < *loops && ctx.Err() == nil; i++ {
		msg := fmt.Sprintf("m%06d;", i)
		start := time.Now()
		if _, err := t.appendTo(ctx, rootURL+"/"+work, "text/plain", []byte(msg)); err != nil {
			t.errs.note(err)
			stalls++
			continue
		}
		// Wait for a wake event after the last one seen.
		events, next, err := t.awaitWake(ctx, rootURL+"/"+wake, offset, *wakeTimeout)
		if err != nil || events == 0 {
			t.errs.note(err)
			stalls++
			continue
		}
		wakeEvents += events
		offset = next
		lat.add(time.Since(start))
		got, err := drain(ctx, w, msg)
		claims += got
		if err != nil {
			t.errs.note(err)
			stalls++
		}
	}
	s := lat.summary()
	return out.emit(t.errs.addTo(result{"test": "pullwake", "loops": *loops, "stalled_loops": stalls, "claims": claims,
		"wake_events": wakeEvents, "wake_p50": s.p50, "wake_p99": s.p99}),
		fmt.Sprintf("pullwake: %d loops, %d stalled, append→wake event p50 %.1f ms p99 %.1f ms", *loops, stalls, s.p50, s.p99))
}

// drain claims the subscription's wakes until one holds msg and ends
// with nothing pending, reading and acking every pending stream. It
// returns how many wakes it claimed.
func drain(ctx context.Context, w *client.PullWorker, msg string) (int, error) {
	seen := false
	for n := 1; ; n++ {
		next, err := w.Work(ctx, func(_ context.Context, _ string, data []byte) error {
			seen = seen || strings.Contains(string(data), msg)
			return nil
		})
		switch {
		case err != nil:
			return n, err
		case !seen:
			return n, fmt.Errorf("pullwake: the claim did not hold %q", msg)
		case !next:
			return n, nil
		}
	}
}

// awaitWake long-polls the wake stream from offset until it holds at
// least one event, and returns how many it read and the next offset.
func (t *target) awaitWake(ctx context.Context, stream, offset string, timeout time.Duration) (int, string, error) {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		resp, body, err := t.do(ctx, http.MethodGet, stream+"?live=long-poll&offset="+url.QueryEscape(offset), "", nil)
		if err != nil {
			return 0, offset, err
		}
		next := resp.Header.Get("Stream-Next-Offset")
		if next != "" {
			offset = next
		}
		if resp.StatusCode == http.StatusOK {
			var events []json.RawMessage
			if err := json.Unmarshal(body, &events); err != nil {
				return 0, offset, err
			}
			if len(events) > 0 {
				return len(events), offset, nil
			}
		}
	}
	return 0, offset, fmt.Errorf("pullwake: no wake event within %s", timeout)
}
