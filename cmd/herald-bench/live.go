package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"time"
)

// arrival is one live reader receiving the message numbered seq.
type arrival struct {
	seq int
	at  time.Time
}

// liveRun is the state the readers of runLive share.
type liveRun struct {
	t         *target
	streamURL string
	// readURL is where the readers read the stream: streamURL, or the
	// same path on another replica (-read-base).
	readURL  string
	sse      bool
	armed    atomic.Int64 // readers with a request open at the server
	errs     atomic.Int64
	arrivals chan arrival
}

// runLive measures how long an append takes to reach -readers live
// readers (long-poll or SSE): -n appends, one at a time, each after every
// reader got the previous one and waits again.
func runLive(ctx context.Context, args []string, out *output) error {
	fs := flag.NewFlagSet("live", flag.ContinueOnError)
	var tf targetFlags
	tf.add(fs)
	mode := fs.String("mode", "long-poll", "long-poll or sse")
	readers := fs.Int("readers", 1, "live readers")
	posts := fs.Int("n", 200, "appends")
	gap := fs.Duration("gap", 20*time.Millisecond, "pause after every reader got an append and waits again")
	readBase := fs.String("read-base", "", "base URL the readers read through (another replica sharing the database); -base when empty")
	if err := parse(fs, args); err != nil {
		return err
	}
	if *mode != "long-poll" && *mode != "sse" {
		return fmt.Errorf("live: -mode is long-poll or sse, not %q", *mode)
	}
	if *readers < 1 || *posts < 1 {
		return errors.New("live: -readers and -n must be at least 1")
	}
	t := newTarget(tf, *readers+16, 0)
	path := "/bench/live-" + runID()
	lr := &liveRun{t: t, streamURL: t.base + path, readURL: t.base + path, sse: *mode == "sse",
		arrivals: make(chan arrival, 4**readers)}
	if *readBase != "" {
		lr.readURL = strings.TrimSuffix(*readBase, "/") + path
	}
	if err := t.createStream(ctx, lr.streamURL, "application/json", nil); err != nil {
		return err
	}
	_, _, tail, err := t.catchUp(ctx, lr.streamURL, "-1")
	if err != nil {
		return err
	}
	readCtx, stopReaders := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		workers(*readers, func(int) { lr.read(readCtx, tail) })
		close(done)
	}()
	defer func() { stopReaders(); <-done }()
	if !lr.waitArmed(ctx, *readers, 30*time.Second) {
		return fmt.Errorf("live: %d of %d readers waiting after 30 s", lr.armed.Load(), *readers)
	}
	time.Sleep(200 * time.Millisecond)

	var fromSend, fromResp, postLat latencies
	missing := 0
	pad := strings.Repeat("y", 80)
	start := time.Now()
	for i := 0; i < *posts && ctx.Err() == nil; i++ {
		body := fmt.Appendf(nil, `{"seq":%d,"pad":"%s"}`, i, pad)
		t0 := time.Now()
		_, err := t.appendTo(ctx, lr.streamURL, "application/json", body)
		t1 := time.Now()
		if err != nil {
			t.errs.note(err)
			continue
		}
		postLat.add(t1.Sub(t0))
		got := 0
		timeout := time.NewTimer(10 * time.Second)
	wait:
		for got < *readers {
			select {
			case a := <-lr.arrivals:
				if a.seq == i {
					got++
					fromSend.add(a.at.Sub(t0))
					fromResp.add(a.at.Sub(t1))
				}
			case <-timeout.C:
				missing += *readers - got
				break wait
			}
		}
		timeout.Stop()
		lr.waitArmed(ctx, *readers, 5*time.Second)
		time.Sleep(*gap)
	}
	secs := time.Since(start).Seconds()
	s1, s2, s3 := fromSend.summary(), fromResp.summary(), postLat.summary()
	return out.emit(t.errs.addTo(result{"test": "live", "mode": *mode, "readers": *readers, "posts": *posts, "cross_replica": *readBase != "",
		"deliveries": s1.n, "missing": missing, "reader_errors": lr.errs.Load(),
		"send2recv_p50": s1.p50, "send2recv_p99": s1.p99, "send2recv_max": s1.max,
		"resp2recv_p50": s2.p50, "resp2recv_p99": s2.p99, "post_p50": s3.p50, "post_p99": s3.p99, "secs": secs}),
		fmt.Sprintf("live %s: %d readers, %d appends: send→receive p50 %.2f ms, p99 %.2f ms; %d deliveries, %d missing, %d reader errors",
			*mode, *readers, *posts, s1.p50, s1.p99, s1.n, missing, lr.errs.Load()))
}

// waitArmed waits until n readers have a request open, or for at most
// limit.
func (lr *liveRun) waitArmed(ctx context.Context, n int, limit time.Duration) bool {
	deadline := time.Now().Add(limit)
	for lr.armed.Load() < int64(n) {
		if time.Now().After(deadline) || ctx.Err() != nil {
			return false
		}
		time.Sleep(time.Millisecond)
	}
	return true
}

// read is one live reader, from offset until ctx ends.
func (lr *liveRun) read(ctx context.Context, offset string) {
	for ctx.Err() == nil {
		next, err := lr.readOnce(ctx, offset)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			lr.errs.Add(1)
			lr.t.errs.note(err)
			select {
			case <-ctx.Done():
			case <-time.After(50 * time.Millisecond):
			}
			continue
		}
		offset = next
	}
}

// readOnce is one long-poll, or one SSE connection until the server ends
// it; it reports every message that arrives and returns the offset to go
// on from.
func (lr *liveRun) readOnce(ctx context.Context, offset string) (string, error) {
	live := "long-poll"
	if lr.sse {
		live = "sse"
	}
	req, err := lr.t.newRequest(ctx, http.MethodGet, lr.readURL+"?offset="+url.QueryEscape(offset)+"&live="+live, nil)
	if err != nil {
		return offset, err
	}
	lr.armed.Add(1)
	armed := true
	disarm := func() {
		if armed {
			lr.armed.Add(-1)
			armed = false
		}
	}
	defer disarm()
	resp, err := lr.t.hc.Do(req)
	if err != nil {
		return offset, err
	}
	defer resp.Body.Close()
	if !lr.sse {
		b, err := io.ReadAll(resp.Body)
		now := time.Now()
		disarm()
		if err != nil {
			return offset, err
		}
		switch resp.StatusCode {
		case http.StatusOK:
			lr.report(ctx, b, now)
		case http.StatusNoContent:
		default:
			return offset, fmt.Errorf("long-poll: status %d", resp.StatusCode)
		}
		if next := resp.Header.Get("Stream-Next-Offset"); next != "" {
			offset = next
		}
		return offset, nil
	}
	if resp.StatusCode != http.StatusOK {
		return offset, fmt.Errorf("sse: status %d", resp.StatusCode)
	}
	return lr.readEvents(ctx, resp.Body, offset)
}

// readEvents reads Server-Sent Events: data events carry messages,
// control events the offset to resume from.
func (lr *liveRun) readEvents(ctx context.Context, body io.Reader, offset string) (string, error) {
	br := bufio.NewReaderSize(body, 64<<10)
	var event string
	var data bytes.Buffer
	for {
		line, err := br.ReadBytes('\n')
		if err != nil {
			if errors.Is(err, io.EOF) {
				return offset, nil // the server ended the response: reconnect
			}
			return offset, err
		}
		line = bytes.TrimRight(line, "\r\n")
		if len(line) > 0 {
			field, value, _ := bytes.Cut(line, []byte(":"))
			value = bytes.TrimPrefix(value, []byte(" "))
			switch string(field) {
			case "event":
				event = string(value)
			case "data":
				data.Write(value)
				data.WriteByte('\n')
			}
			continue
		}
		switch event {
		case "data":
			lr.report(ctx, data.Bytes(), time.Now())
		case "control":
			var c struct {
				StreamNextOffset string `json:"streamNextOffset"`
			}
			if json.Unmarshal(data.Bytes(), &c) == nil && c.StreamNextOffset != "" {
				offset = c.StreamNextOffset
			}
		}
		event = ""
		data.Reset()
	}
}

// report passes on the highest seq of a JSON array of messages.
func (lr *liveRun) report(ctx context.Context, body []byte, at time.Time) {
	var msgs []struct {
		Seq *int `json:"seq"`
	}
	if err := json.Unmarshal(body, &msgs); err != nil {
		lr.t.errs.note(fmt.Errorf("live: a read that is not a JSON array: %w", err))
		return
	}
	best := -1
	for _, m := range msgs {
		if m.Seq != nil && *m.Seq > best {
			best = *m.Seq
		}
	}
	if best < 0 {
		return
	}
	select {
	case lr.arrivals <- arrival{seq: best, at: at}:
	case <-ctx.Done():
	}
}
