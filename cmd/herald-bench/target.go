package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"sort"
	"strings"
	"sync"
	"time"
)

// target is the server under load: its base URL and the HTTP client that
// reaches it.
type target struct {
	base string
	// hc sends the requests newRequest makes. Its transport is a plain
	// *http.Transport: with a wrapping RoundTripper and a Timeout, the
	// http.Client would start a timer goroutine for every request, which
	// the workload would measure.
	hc *http.Client
	// keyed is hc for code that makes requests of its own (the SDK's
	// consumer): its transport adds the key to requests without one.
	keyed *http.Client
	errs  *errorTally
	// auth is the Authorization header value ("" without a key).
	auth string
}

// targetFlags are the flags every workload has.
type targetFlags struct {
	base string
	key  string
}

func (f *targetFlags) add(fs *flag.FlagSet) {
	fs.StringVar(&f.base, "base", "http://127.0.0.1:4437", "the server's base URL")
	fs.StringVar(&f.key, "key", os.Getenv("HERALD_BENCH_KEY"), "API key sent as a bearer token when Herald has access control on (default $HERALD_BENCH_KEY)")
}

// newTarget returns a target whose client keeps up to conns connections
// open and gives up on a request after timeout.
func newTarget(f targetFlags, conns int, timeout time.Duration) *target {
	tr := &http.Transport{
		Proxy:               nil,
		MaxIdleConns:        2 * conns,
		MaxIdleConnsPerHost: 2 * conns,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true, // count the bytes the server sends
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
	}
	hc := &http.Client{Transport: tr, Timeout: timeout}
	t := &target{base: strings.TrimSuffix(f.base, "/"), hc: hc, keyed: hc, errs: &errorTally{}}
	if f.key != "" {
		t.auth = "Bearer " + f.key
		t.keyed = &http.Client{Transport: bearer{key: f.key, next: tr}, Timeout: timeout}
	}
	return t
}

// bearer adds an API key to requests that carry no Authorization of their
// own (callbacks carry their token).
type bearer struct {
	key  string
	next http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Header.Get("Authorization") != "" {
		return b.next.RoundTrip(r)
	}
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.key)
	return b.next.RoundTrip(r)
}

// newRequest makes a request to the server, with the key when there is
// one.
func (t *target) newRequest(ctx context.Context, method, url string, body io.Reader) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, method, url, body)
	if err != nil {
		return nil, err
	}
	if t.auth != "" {
		req.Header.Set("Authorization", t.auth)
	}
	return req, nil
}

// do sends one request and reads the whole response body.
func (t *target) do(ctx context.Context, method, url, contentType string, body []byte) (*http.Response, []byte, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := t.newRequest(ctx, method, url, rd)
	if err != nil {
		return nil, nil, err
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := t.hc.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp, b, err
}

// createStream creates the stream at url (201, or 200 when it exists with
// the same configuration).
func (t *target) createStream(ctx context.Context, url, contentType string, body []byte) error {
	resp, b, err := t.do(ctx, http.MethodPut, url, contentType, body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusCreated && resp.StatusCode != http.StatusOK {
		return fmt.Errorf("PUT %s: %d %s", url, resp.StatusCode, bytes.TrimSpace(b))
	}
	return nil
}

// createStreams creates every url, 16 at a time.
func (t *target) createStreams(ctx context.Context, urls []string, contentType string) error {
	return forEach(len(urls), 16, func(i int) error { return t.createStream(ctx, urls[i], contentType, nil) })
}

// appendTo appends body to the stream at url and returns the response.
func (t *target) appendTo(ctx context.Context, url, contentType string, body []byte) (*http.Response, error) {
	resp, b, err := t.do(ctx, http.MethodPost, url, contentType, body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode/100 != 2 {
		return resp, fmt.Errorf("%d %s", resp.StatusCode, bytes.TrimSpace(b))
	}
	return resp, nil
}

// forEach runs f(0..n-1) on up to par goroutines and returns the first
// error.
func forEach(n, par int, f func(i int) error) error {
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
		next  int
	)
	for range min(par, n) {
		wg.Go(func() {
			for {
				mu.Lock()
				i := next
				next++
				stop := first != nil
				mu.Unlock()
				if i >= n || stop {
					return
				}
				if err := f(i); err != nil {
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	return first
}

// workers runs f(w) for w in 0..n-1, each on its own goroutine, and waits
// for all of them.
func workers(n int, f func(w int)) {
	var wg sync.WaitGroup
	for w := range n {
		wg.Go(func() { f(w) })
	}
	wg.Wait()
}

// errorTally counts failures by their message, so a run reports what went
// wrong without printing every failure.
type errorTally struct {
	mu     sync.Mutex
	counts map[string]int // guarded by mu
}

// maxErrorClasses bounds the distinct messages kept; the rest are counted
// under "other".
const maxErrorClasses = 20

func (e *errorTally) note(err error) {
	msg := err.Error()
	if len(msg) > 120 {
		msg = msg[:120]
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.counts == nil {
		e.counts = map[string]int{}
	}
	if _, ok := e.counts[msg]; !ok && len(e.counts) >= maxErrorClasses {
		msg = "other"
	}
	e.counts[msg]++
}

// addTo puts the counts in r as error_classes, when there are any.
func (e *errorTally) addTo(r result) result {
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(e.counts) > 0 {
		r["error_classes"] = e.counts
	}
	return r
}

// latencies are durations in milliseconds.
type latencies []float64

func (l *latencies) add(d time.Duration) { *l = append(*l, ms(d)) }

func ms(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e6 }

// merge joins the latencies of several workers.
func merge(parts []latencies) latencies {
	var all latencies
	for _, p := range parts {
		all = append(all, p...)
	}
	return all
}

// summary is the distribution of a set of latencies, in milliseconds.
type summary struct {
	n                        int
	p50, p90, p99, max, mean float64
}

func (l latencies) summary() summary {
	s := summary{n: len(l)}
	if len(l) == 0 {
		return s
	}
	sorted := append(latencies(nil), l...)
	sort.Float64s(sorted)
	var sum float64
	for _, v := range sorted {
		sum += v
	}
	// The nearest-rank percentile: the value at index floor(p/100 * n).
	at := func(p float64) float64 { return sorted[min(int(p/100*float64(len(sorted))), len(sorted)-1)] }
	s.p50, s.p90, s.p99 = at(50), at(90), at(99)
	s.max = sorted[len(sorted)-1]
	s.mean = sum / float64(len(sorted))
	return s
}

// runID names the streams of one run, so runs against the same server do
// not meet.
func runID() string { return fmt.Sprintf("%d", time.Now().UnixNano()) }
