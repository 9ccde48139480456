package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/heraldstreams/herald/client"
)

// The webhook workload's consumer modes.
const (
	// modeCallback handles a wake as Herald's SDK does: claim, read every
	// stream from its acked offset, ack, done, all over the callback API.
	modeCallback = "callback"
	// modeRespond answers the wake request itself with {"done": true}.
	modeRespond = "respond"
)

// maxWakeBody bounds a wake request the receiver reads.
const maxWakeBody = 1 << 20

// runWebhook measures webhook subscriptions: a subscription matching
// -streams new streams wakes a local receiver that acts as their
// consumer. It reports the creation wakes, the latency of -lat sequential
// wakes (append → wake request), and the wakes per second of -c closed
// loops (append, wait for the wake and its handling, append again) over
// -d. A loop that waits -wake-timeout for a wake counts as stalled: a lost
// wake.
func runWebhook(ctx context.Context, args []string, out *output) error {
	r, summary, errs, err := measureWebhook(ctx, args)
	if err != nil {
		return err
	}
	// measureWebhook has stopped its receiver: every error is counted.
	return out.emit(errs.addTo(r), summary)
}

// measureWebhook is runWebhook up to its output.
func measureWebhook(ctx context.Context, args []string) (result, string, *errorTally, error) {
	fs := flag.NewFlagSet("webhook", flag.ContinueOnError)
	var tf targetFlags
	tf.add(fs)
	listen := fs.String("listen", "127.0.0.1:0", "address of the local receiver (Herald must be allowed to call it: --webhook-allow-cidrs 127.0.0.0/8)")
	prefix := fs.String("prefix", "/bench/agents", "stream path prefix")
	nstreams := fs.Int("streams", 1000, "streams, each with its consumer")
	latN := fs.Int("lat", 200, "sequential wakes timed for latency")
	conc := fs.Int("c", 1000, "closed loops for throughput, one stream each (at most -streams)")
	dur := fs.Duration("d", 15*time.Second, "duration of the throughput phase")
	mode := fs.String("mode", modeCallback, "how the consumer ends a wake: callback (claim, read, ack, done over the callback API) or respond (answer {\"done\": true})")
	wakeTimeout := fs.Duration("wake-timeout", 15*time.Second, "how long a loop waits for a wake before it counts as stalled")
	pause := fs.Duration("pause", 5*time.Millisecond, "pause of a loop after each wake")
	if err := parse(fs, args); err != nil {
		return nil, "", nil, err
	}
	if *mode != modeCallback && *mode != modeRespond {
		return nil, "", nil, fmt.Errorf("webhook: -mode is %s or %s, not %q", modeCallback, modeRespond, *mode)
	}
	if *nstreams < 1 || *conc < 1 || *conc > *nstreams || *latN < 0 {
		return nil, "", nil, errors.New("webhook: -streams and -c must be at least 1, -c at most -streams, -lat not negative")
	}
	t := newTarget(tf, *conc+32, 60*time.Second)
	run := fmt.Sprintf("%s-%s", *prefix, runID())
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return nil, "", nil, err
	}
	rc := &receiver{respond: *mode == modeRespond, router: newRouter(2**nstreams + 1000), errs: t.errs}
	srv := &http.Server{Handler: rc, ReadHeaderTimeout: 10 * time.Second}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	defer func() {
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := srv.Shutdown(shutdown); err != nil {
			t.errs.note(fmt.Errorf("stopping the receiver: %w", err))
			if err := srv.Close(); err != nil {
				t.errs.note(fmt.Errorf("closing the receiver: %w", err))
			}
		}
		if err := <-served; !errors.Is(err, http.ErrServerClosed) {
			t.errs.note(fmt.Errorf("receiver: %w", err))
		}
	}()

	subURL := t.base + run + "/*?subscription=bench"
	secret, err := t.createSubscription(ctx, subURL, "http://"+ln.Addr().String()+"/hook")
	if err != nil {
		return nil, "", nil, err
	}
	defer t.deleteSubscription(subURL)
	rc.wakeConfig.Store(&wakeConfig{secret: secret, consumer: client.NewConsumer(client.ConsumerConfig{
		Secret:     secret,
		StreamsURL: t.base,
		HTTPClient: t.keyed,
		Logger:     slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError})),
		Process:    func(context.Context, client.Batch) error { return nil },
	})})

	streams := make([]string, *nstreams)
	urls := make([]string, *nstreams)
	for i := range streams {
		streams[i] = fmt.Sprintf("%s/s%d", run, i)
		urls[i] = t.base + streams[i]
	}
	if err := t.createStreams(ctx, urls, octetStream); err != nil {
		return nil, "", nil, err
	}
	// A new stream is work from its first offset: each consumer wakes once.
	// Up to 5 s of quiet: on a busy machine the first wakes can take more
	// than a second, and a late one would count as unexpected.
	creationWakes := rc.router.drain(*nstreams, 5*time.Second)

	body := bytes.Repeat([]byte("z"), 100)
	var fromSend, fromResp latencies
	lost := 0
	for i := 0; i < *latN && ctx.Err() == nil; i++ {
		p := streams[i%len(streams)]
		t0 := time.Now()
		_, err := t.appendTo(ctx, urls[i%len(urls)], octetStream, body)
		t1 := time.Now()
		if err != nil {
			t.errs.note(err)
			continue
		}
		at, ok := rc.router.await(ctx, p, 5*time.Second)
		if !ok {
			lost++
			continue
		}
		fromSend.add(at.Sub(t0))
		fromResp.add(at.Sub(t1))
		time.Sleep(20 * time.Millisecond)
	}

	loops := rc.router.startLoops(streams[:*conc])
	var wakes, appends, timeouts, appendErrs, stalled atomic.Int64
	tpLats := make([]latencies, *conc)
	hooksBefore := rc.hooks.Load()
	start := time.Now()
	stopAt := start.Add(*dur)
	workers(*conc, func(w int) {
		wakesOf := loops[streams[w]]
		timer := time.NewTimer(*wakeTimeout)
		defer timer.Stop()
		stalledHere := false
		for time.Now().Before(stopAt) && ctx.Err() == nil {
			t0 := time.Now()
			if _, err := t.appendTo(ctx, urls[w], octetStream, body); err != nil {
				appendErrs.Add(1)
				t.errs.note(err)
				time.Sleep(10 * time.Millisecond)
				continue
			}
			appends.Add(1)
			timer.Reset(*wakeTimeout)
			select {
			case at := <-wakesOf:
				wakes.Add(1)
				tpLats[w].add(at.Sub(t0))
			case <-timer.C:
				timeouts.Add(1)
				stalledHere = true
			case <-ctx.Done():
			}
			time.Sleep(*pause)
		}
		if stalledHere {
			stalled.Add(1)
		}
	})
	secs := time.Since(start).Seconds()
	s1, s2, s3 := fromSend.summary(), fromResp.summary(), merge(tpLats).summary()
	wakesPerS := float64(wakes.Load()) / secs
	return result{"test": "webhook", "mode": *mode, "streams": *nstreams,
			"creation_wakes": creationWakes, "lat_n": s1.n, "lat_lost": lost,
			"send2hook_p50": s1.p50, "send2hook_p99": s1.p99, "resp2hook_p50": s2.p50, "resp2hook_p99": s2.p99,
			"tp_conc": *conc, "tp_secs": secs, "wakes_per_s": wakesPerS,
			"hooks_per_s": float64(rc.hooks.Load()-hooksBefore) / secs, "appends": appends.Load(),
			"wake_timeouts": timeouts.Load(), "stalled_loops": stalled.Load(), "append_errors": appendErrs.Load(),
			"unexpected_hooks": rc.router.unexpected.Load(), "bad_signatures": rc.badSig.Load(),
			"consumer_errors": rc.failed.Load(), "tp_lat_p50": s3.p50, "tp_lat_p99": s3.p99},
		fmt.Sprintf("webhook (%s): append → wake p50 %.2f ms, p99 %.2f ms (%d timed, %d lost); %.0f wakes/s over %d loops, %d stalled; %d bad signatures, %d consumer errors",
			*mode, s1.p50, s1.p99, s1.n, lost, wakesPerS, *conc, stalled.Load(), rc.badSig.Load(), rc.failed.Load()), t.errs, nil
}

// createSubscription creates the subscription at subURL with webhook and
// returns its webhook secret.
func (t *target) createSubscription(ctx context.Context, subURL, webhook string) (string, error) {
	req, err := json.Marshal(map[string]string{"webhook": webhook, "description": "herald-bench"})
	if err != nil {
		return "", err
	}
	resp, b, err := t.do(ctx, http.MethodPut, subURL, "application/json", req)
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusCreated {
		return "", fmt.Errorf("creating the subscription: %d %s (Herald calls only webhooks it is allowed to: herald serve --webhook-allow-cidrs 127.0.0.0/8)", resp.StatusCode, bytes.TrimSpace(b))
	}
	var sub struct {
		Secret string `json:"webhook_secret"`
	}
	if err := json.Unmarshal(b, &sub); err != nil || sub.Secret == "" {
		return "", fmt.Errorf("creating the subscription: no webhook_secret in %s", b)
	}
	return sub.Secret, nil
}

// deleteSubscription removes the subscription at subURL, so Herald stops
// waking the receiver once the run is over.
func (t *target) deleteSubscription(subURL string) {
	resp, b, err := t.do(context.Background(), http.MethodDelete, subURL, "", nil)
	if err == nil && resp.StatusCode != http.StatusNoContent {
		err = fmt.Errorf("%d %s", resp.StatusCode, bytes.TrimSpace(b))
	}
	if err != nil {
		t.errs.note(fmt.Errorf("deleting the subscription: %w", err))
	}
}

// wakeConfig is what the receiver knows once the subscription exists.
type wakeConfig struct {
	secret   string
	consumer *client.Consumer
}

// receiver is the consumer side of the webhook workload: it verifies each
// wake's signature, parses it, ends the wake the way its mode says, and
// then hands the wake's arrival time to the router.
type receiver struct {
	respond    bool
	wakeConfig atomic.Pointer[wakeConfig] // nil until the subscription exists
	router     *router
	errs       *errorTally

	hooks  atomic.Int64 // wake requests received
	badSig atomic.Int64 // wakes whose signature did not verify
	failed atomic.Int64 // wakes not parsed or not handled
}

func (rc *receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	at := time.Now()
	body, err := io.ReadAll(io.LimitReader(r.Body, maxWakeBody))
	if err != nil {
		http.Error(w, "unreadable body", http.StatusBadRequest)
		return
	}
	rc.hooks.Add(1)
	cfg := rc.wakeConfig.Load()
	if cfg == nil {
		http.Error(w, "not ready", http.StatusServiceUnavailable)
		return
	}
	if err := client.VerifyWakeSignature(cfg.secret, r.Header.Get(client.WakeSignatureHeader), body, at, 0); err != nil {
		rc.badSig.Add(1)
		rc.errs.note(err)
		http.Error(w, err.Error(), http.StatusUnauthorized)
		return
	}
	wake, err := client.ParseWake(body)
	if err != nil {
		rc.failed.Add(1)
		rc.errs.note(err)
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	if rc.respond {
		rc.reply(w, `{"done": true}`)
		rc.router.deliver(wake.PrimaryStream, at)
		return
	}
	// As the SDK's handler does: a wake whose request is cut (the replica
	// that sent it died) is still handled to its end through the
	// callbacks, which reach a live replica; a wake left claimed would
	// wait for the 45 s liveness timeout, a stall.
	if err := cfg.consumer.HandleWake(context.WithoutCancel(r.Context()), wake); err != nil && !errors.Is(err, client.ErrFenced) {
		rc.failed.Add(1)
		rc.errs.note(err)
		http.Error(w, "handling the wake failed", http.StatusInternalServerError)
		return
	}
	rc.reply(w, "{}")
	rc.router.deliver(wake.PrimaryStream, at)
}

// reply writes the body of a 200 answer to a wake.
func (rc *receiver) reply(w http.ResponseWriter, body string) {
	if _, err := io.WriteString(w, body); err != nil {
		rc.errs.note(fmt.Errorf("answering a wake: %w", err))
	}
}

// wakeAt is the arrival of a wake for a stream.
type wakeAt struct {
	stream string
	at     time.Time
}

// router hands wakes to whoever waits for them: before the loops start,
// to one queue in arrival order; then to the loop of each stream.
type router struct {
	queue chan wakeAt

	mu    sync.Mutex
	loops map[string]chan time.Time // guarded by mu; nil before the loops

	unexpected atomic.Int64 // wakes nobody waited for
}

func newRouter(queue int) *router { return &router{queue: make(chan wakeAt, queue)} }

func (r *router) deliver(stream string, at time.Time) {
	r.mu.Lock()
	loops := r.loops
	r.mu.Unlock()
	if loops == nil {
		select {
		case r.queue <- wakeAt{stream, at}:
		default:
			r.unexpected.Add(1)
		}
		return
	}
	select {
	case loops[stream] <- at: // a nil channel (no such loop) is never ready
	default:
		r.unexpected.Add(1)
	}
}

// drain takes queued wakes until n arrived or none came for quiet, and
// returns how many it took.
func (r *router) drain(n int, quiet time.Duration) int {
	got := 0
	timer := time.NewTimer(quiet)
	defer timer.Stop()
	for got < n {
		select {
		case <-r.queue:
			got++
			timer.Reset(quiet)
		case <-timer.C:
			return got
		}
	}
	return got
}

// await waits for the wake of stream for at most limit, counting the
// wakes of other streams as unexpected.
func (r *router) await(ctx context.Context, stream string, limit time.Duration) (time.Time, bool) {
	timer := time.NewTimer(limit)
	defer timer.Stop()
	for {
		select {
		case w := <-r.queue:
			if w.stream == stream {
				return w.at, true
			}
			r.unexpected.Add(1)
		case <-timer.C:
			return time.Time{}, false
		case <-ctx.Done():
			return time.Time{}, false
		}
	}
}

// startLoops routes every later wake to the channel of its stream, which
// it returns, and drops what is still queued.
func (r *router) startLoops(streams []string) map[string]chan time.Time {
	loops := make(map[string]chan time.Time, len(streams))
	for _, s := range streams {
		loops[s] = make(chan time.Time, 64)
	}
	r.mu.Lock()
	r.loops = loops
	r.mu.Unlock()
	for {
		select {
		case <-r.queue:
			r.unexpected.Add(1)
		default:
			return loops
		}
	}
}
