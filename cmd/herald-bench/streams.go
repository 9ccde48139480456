package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"time"
)

const octetStream = "application/octet-stream"

// parse parses a workload's flags; fs has ContinueOnError.
func parse(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%s: unexpected argument %q", fs.Name(), fs.Arg(0))
	}
	return nil
}

// runAppend: -c workers append -size bytes to one of -streams streams,
// chosen at random, as fast as the server answers, for -d.
func runAppend(ctx context.Context, args []string, out *output) error {
	fs := flag.NewFlagSet("append", flag.ContinueOnError)
	var tf targetFlags
	tf.add(fs)
	prefix := fs.String("prefix", "/bench/app", "stream path prefix")
	nstreams := fs.Int("streams", 1, "number of streams")
	conc := fs.Int("c", 1, "concurrent appenders")
	dur := fs.Duration("d", 10*time.Second, "duration")
	size := fs.Int("size", 100, "bytes per append")
	ct := fs.String("ct", octetStream, "the streams' content type")
	existing := fs.Bool("existing", false, "append to the streams -prefix/s0 to s(streams-1) already there (as fill makes them) instead of creating new ones")
	if err := parse(fs, args); err != nil {
		return err
	}
	if *nstreams < 1 || *conc < 1 || *size < 1 {
		return errors.New("append: -streams, -c and -size must be at least 1")
	}
	t := newTarget(tf, *conc+16, 30*time.Second)
	run := *prefix
	if !*existing {
		run += "-" + runID()
	}
	urls := make([]string, *nstreams)
	for i := range urls {
		urls[i] = fmt.Sprintf("%s%s/s%d", t.base, run, i)
	}
	if !*existing {
		if err := t.createStreams(ctx, urls, *ct); err != nil {
			return err
		}
	}
	body := bytes.Repeat([]byte("x"), *size)
	lats := make([]latencies, *conc)
	var errs, non2xx atomic.Int64
	start := time.Now()
	stopAt := start.Add(*dur)
	workers(*conc, func(w int) {
		r := rand.New(rand.NewPCG(uint64(w), 1))
		for time.Now().Before(stopAt) && ctx.Err() == nil {
			t0 := time.Now()
			resp, err := t.appendTo(ctx, urls[r.IntN(len(urls))], *ct, body)
			switch {
			case resp == nil && err != nil:
				errs.Add(1)
				t.errs.note(err)
			case err != nil:
				non2xx.Add(1)
				t.errs.note(err)
			default:
				lats[w].add(time.Since(t0))
			}
		}
	})
	secs := time.Since(start).Seconds()
	s := merge(lats).summary()
	rps := float64(s.n) / secs
	return out.emit(t.errs.addTo(result{"test": "append", "streams": *nstreams, "c": *conc, "size": *size,
		"rps": rps, "n": s.n, "p50": s.p50, "p90": s.p90, "p99": s.p99, "max": s.max,
		"errors": errs.Load(), "non2xx": non2xx.Load()}),
		fmt.Sprintf("append: %d stream(s), c=%d, %d B: %.0f req/s, p50 %.2f ms, p99 %.2f ms, %d errors, %d non-2xx",
			*nstreams, *conc, *size, rps, s.p50, s.p99, errs.Load(), non2xx.Load()))
}

// runCreate: -c workers create JSON streams with a small first message,
// -n in all, or as many as they can in -d.
func runCreate(ctx context.Context, args []string, out *output) error {
	fs := flag.NewFlagSet("create", flag.ContinueOnError)
	var tf targetFlags
	tf.add(fs)
	conc := fs.Int("c", 1, "concurrent creators")
	dur := fs.Duration("d", 5*time.Second, "duration, when -n is 0")
	n := fs.Int("n", 0, "create exactly this many streams (then -d is ignored)")
	prefix := fs.String("prefix", "/bench/create", "stream path prefix")
	if err := parse(fs, args); err != nil {
		return err
	}
	if *conc < 1 || *n < 0 {
		return errors.New("create: -c must be at least 1 and -n not negative")
	}
	t := newTarget(tf, *conc+16, 30*time.Second)
	run := t.base + *prefix + "-" + runID()
	body := []byte(`{"kind":"created","at":{"x":1.5,"y":-2.25},"tags":["bench","herald"],"note":null}`)
	var next, errs atomic.Int64
	lats := make([]latencies, *conc)
	start := time.Now()
	stopAt := start.Add(*dur)
	workers(*conc, func(w int) {
		for ctx.Err() == nil {
			i := next.Add(1)
			if (*n > 0 && i > int64(*n)) || (*n == 0 && time.Now().After(stopAt)) {
				return
			}
			t0 := time.Now()
			if err := t.createStream(ctx, fmt.Sprintf("%s/%d", run, i), "application/json", body); err != nil {
				errs.Add(1)
				t.errs.note(errors.New(strings.Replace(err.Error(), run, "", 1)))
				continue
			}
			lats[w].add(time.Since(t0))
		}
	})
	secs := time.Since(start).Seconds()
	s := merge(lats).summary()
	rps := float64(s.n) / secs
	return out.emit(t.errs.addTo(result{"test": "create", "c": *conc, "rps": rps, "n": s.n,
		"p50": s.p50, "p99": s.p99, "errors": errs.Load(), "secs": secs}),
		fmt.Sprintf("create: %d streams in %.1f s, c=%d: %.0f/s, p50 %.2f ms, p99 %.2f ms, %d errors",
			s.n, secs, *conc, rps, s.p50, s.p99, errs.Load()))
}

// runSeed creates a JSON stream and appends about -bytes of messages of
// about -msg bytes, -batch messages to a POST (a JSON array).
func runSeed(ctx context.Context, args []string, out *output) error {
	fs := flag.NewFlagSet("seed", flag.ContinueOnError)
	var tf targetFlags
	tf.add(fs)
	streamURL := fs.String("url", "", "URL of the stream to create and fill")
	total := fs.Int("bytes", 10<<20, "about this many bytes of messages")
	msg := fs.Int("msg", 100, "about this many bytes a message")
	batch := fs.Int("batch", 1000, "messages a POST")
	if err := parse(fs, args); err != nil {
		return err
	}
	if *streamURL == "" || *msg < 1 || *batch < 1 {
		return errors.New("seed: -url is required; -msg and -batch must be at least 1")
	}
	t := newTarget(tf, 4, 60*time.Second)
	if err := t.createStream(ctx, *streamURL, "application/json", nil); err != nil {
		return err
	}
	// A message is {"n":"00000042","pad":"xxx"}, padded to -msg bytes.
	pad := strings.Repeat("x", max(0, *msg-len(`{"n":"00000000","pad":""}`)))
	count := *total / *msg
	start := time.Now()
	var b bytes.Buffer
	for i := 0; i < count; {
		b.Reset()
		b.WriteByte('[')
		for j := 0; j < *batch && i < count; j, i = j+1, i+1 {
			if j > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `{"n":"%08d","pad":"%s"}`, i, pad)
		}
		b.WriteByte(']')
		if _, err := t.appendTo(ctx, *streamURL, "application/json", b.Bytes()); err != nil {
			return fmt.Errorf("seed: POST %s: %w", *streamURL, err)
		}
	}
	secs := time.Since(start).Seconds()
	return out.emit(result{"test": "seed", "msgs": count, "secs": secs},
		fmt.Sprintf("seed: %d messages of about %d B in %.1f s", count, *msg, secs))
}

// catchUp reads the stream at streamURL from offset, following
// Stream-Next-Offset until the server says it is up to date. It returns
// the bytes read, the requests made and the offset reached.
func (t *target) catchUp(ctx context.Context, streamURL, offset string) (int64, int, string, error) {
	var total int64
	for reqs := 1; ; reqs++ {
		req, err := t.newRequest(ctx, http.MethodGet, streamURL+"?offset="+url.QueryEscape(offset), nil)
		if err != nil {
			return total, reqs, offset, err
		}
		resp, err := t.hc.Do(req)
		if err != nil {
			return total, reqs, offset, err
		}
		n, err := io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		total += n
		if err != nil {
			return total, reqs, offset, err
		}
		if resp.StatusCode != http.StatusOK {
			return total, reqs, offset, fmt.Errorf("GET: status %d", resp.StatusCode)
		}
		next := resp.Header.Get("Stream-Next-Offset")
		if next == "" {
			return total, reqs, offset, errors.New("GET: no Stream-Next-Offset")
		}
		if resp.Header.Get("Stream-Up-To-Date") == "true" || next == offset {
			return total, reqs, next, nil
		}
		offset = next
	}
}

// runRead: -c workers read the stream at -url from -offset, each read a
// full catch-up to the tail (or, without -full, one request), for -d.
func runRead(ctx context.Context, args []string, out *output) error {
	fs := flag.NewFlagSet("read", flag.ContinueOnError)
	var tf targetFlags
	tf.add(fs)
	streamURL := fs.String("url", "", "URL of the stream to read")
	offset := fs.String("offset", "-1", "offset each read starts at")
	conc := fs.Int("c", 1, "concurrent readers")
	dur := fs.Duration("d", 10*time.Second, "duration")
	full := fs.Bool("full", true, "follow Stream-Next-Offset to the tail: one operation is a full catch-up")
	if err := parse(fs, args); err != nil {
		return err
	}
	if *streamURL == "" || *conc < 1 {
		return errors.New("read: -url is required and -c must be at least 1")
	}
	t := newTarget(tf, *conc+4, 60*time.Second)
	var bytesRead, reqs, errs atomic.Int64
	lats := make([]latencies, *conc)
	start := time.Now()
	stopAt := start.Add(*dur)
	workers(*conc, func(w int) {
		for time.Now().Before(stopAt) && ctx.Err() == nil {
			t0 := time.Now()
			n, r, err := t.readOnce(ctx, *streamURL, *offset, *full)
			bytesRead.Add(n)
			reqs.Add(int64(r))
			if err != nil {
				errs.Add(1)
				t.errs.note(err)
				continue
			}
			lats[w].add(time.Since(t0))
		}
	})
	secs := time.Since(start).Seconds()
	s := merge(lats).summary()
	mbps := float64(bytesRead.Load()) / secs / 1e6
	return out.emit(t.errs.addTo(result{"test": "read", "c": *conc, "full": *full, "ops": s.n,
		"ops_per_s": float64(s.n) / secs, "http_reqs": reqs.Load(), "req_per_s": float64(reqs.Load()) / secs,
		"MBps": mbps, "bytes_per_op": float64(bytesRead.Load()) / float64(max(1, s.n)),
		"p50": s.p50, "p99": s.p99, "errors": errs.Load()}),
		fmt.Sprintf("read: c=%d, full=%t: %.0f MB/s, %d reads (p50 %.2f ms, p99 %.2f ms), %d requests, %d errors",
			*conc, *full, mbps, s.n, s.p50, s.p99, reqs.Load(), errs.Load()))
}

// readOnce is one read operation of runRead.
func (t *target) readOnce(ctx context.Context, streamURL, offset string, full bool) (int64, int, error) {
	if full {
		n, r, _, err := t.catchUp(ctx, streamURL, offset)
		return n, r, err
	}
	resp, b, err := t.do(ctx, http.MethodGet, streamURL+"?offset="+url.QueryEscape(offset), "", nil)
	if err != nil {
		return 0, 1, err
	}
	if resp.StatusCode != http.StatusOK {
		return int64(len(b)), 1, fmt.Errorf("GET: status %d", resp.StatusCode)
	}
	return int64(len(b)), 1, nil
}

// runHold opens -n long-polls at the tail of a new stream and holds them
// for -hold, so the server's memory with many waiting readers can be read
// meanwhile; it reports how many ended early.
func runHold(ctx context.Context, args []string, out *output) error {
	fs := flag.NewFlagSet("hold", flag.ContinueOnError)
	var tf targetFlags
	tf.add(fs)
	n := fs.Int("n", 1000, "long-polls to hold open")
	hold := fs.Duration("hold", 15*time.Second, "how long to hold them")
	if err := parse(fs, args); err != nil {
		return err
	}
	t := newTarget(tf, *n+16, 0)
	streamURL := fmt.Sprintf("%s/bench/hold-%s", t.base, runID())
	if err := t.createStream(ctx, streamURL, "application/json", nil); err != nil {
		return err
	}
	_, _, tail, err := t.catchUp(ctx, streamURL, "-1")
	if err != nil {
		return err
	}
	holdCtx, cancel := context.WithTimeout(ctx, *hold)
	defer cancel()
	var ended, errs atomic.Int64
	workers(*n, func(int) {
		req, err := t.newRequest(holdCtx, http.MethodGet, streamURL+"?offset="+url.QueryEscape(tail)+"&live=long-poll", nil)
		if err != nil {
			errs.Add(1)
			return
		}
		resp, err := t.hc.Do(req)
		if err != nil {
			if holdCtx.Err() == nil {
				errs.Add(1)
				t.errs.note(err)
			}
			return
		}
		_, err = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if holdCtx.Err() == nil {
			ended.Add(1) // answered (204 at the server's timeout) before the hold was over
			if err != nil {
				t.errs.note(err)
			}
		}
	})
	return out.emit(t.errs.addTo(result{"test": "hold", "n": *n, "completed_early": ended.Load(), "errors": errs.Load()}),
		fmt.Sprintf("hold: %d long-polls for %s: %d ended early, %d errors", *n, *hold, ended.Load(), errs.Load()))
}
