package webhook

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// resolverFunc is a Resolver made of a function.
type resolverFunc func(ctx context.Context, network, host string) ([]netip.Addr, error)

func (f resolverFunc) LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error) {
	return f(ctx, network, host)
}

// staticResolver answers from a map and fails like DNS for other names.
func staticResolver(answers map[string][]string) Resolver {
	return resolverFunc(func(_ context.Context, _, host string) ([]netip.Addr, error) {
		as, ok := answers[host]
		if !ok {
			return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
		}
		out := make([]netip.Addr, len(as))
		for i, a := range as {
			out[i] = netip.MustParseAddr(a)
		}
		return out, nil
	})
}

// rebinding answers a public address first (what validation sees), then
// loopback (what an attacker rebinds to).
func rebinding() Resolver {
	var calls atomic.Int64
	return resolverFunc(func(_ context.Context, _, host string) ([]netip.Addr, error) {
		if calls.Add(1) == 1 {
			return []netip.Addr{netip.MustParseAddr("93.184.216.34")}, nil
		}
		return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
	})
}

var loopbackAllow = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128")}

// countingServer is an httptest server that counts the requests it gets.
func countingServer(t *testing.T, h http.HandlerFunc) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		h(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv, &hits
}

// readBody reads the request body, which also lets the server notice when
// the client goes away (r.Context() is cancelled only after the body is
// consumed).
func readBody(t *testing.T, r *http.Request) {
	if _, err := io.Copy(io.Discard, r.Body); err != nil {
		t.Errorf("reading request body: %v", err)
	}
}

func serverPort(t *testing.T, srv *httptest.Server) string {
	t.Helper()
	u, err := url.Parse(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	return u.Port()
}

func TestSendPostsToAllowedLoopback(t *testing.T) {
	t.Parallel()
	type seen struct {
		method, path, ctype, agent, custom string
		body                               []byte
	}
	got := make(chan seen, 1)
	srv, _ := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
		b, err := io.ReadAll(r.Body)
		if err != nil {
			t.Errorf("reading request body: %v", err)
		}
		got <- seen{r.Method, r.URL.Path, r.Header.Get("Content-Type"), r.Header.Get("User-Agent"), r.Header.Get("X-Tenant"), b}
		w.Header().Set("Retry-After", "120")
		w.WriteHeader(http.StatusAccepted)
		io.WriteString(w, "queued")
	})
	s := New(Config{AllowCIDRs: loopbackAllow})
	defer s.Close()

	resp, err := s.Send(t.Context(), &Request{
		URL:    srv.URL + "/hooks/in",
		Header: http.Header{"X-Tenant": {"t1"}},
		Body:   []byte(`{"type":"a.b"}`),
	})
	if err != nil {
		t.Fatalf("Send: %v", err)
	}
	if resp.StatusCode != http.StatusAccepted || !resp.OK() {
		t.Fatalf("status = %d, OK = %v", resp.StatusCode, resp.OK())
	}
	if string(resp.Body) != "queued" || resp.Truncated {
		t.Fatalf("body = %q truncated=%v", resp.Body, resp.Truncated)
	}
	if resp.Header.Get("Retry-After") != "120" {
		t.Fatalf("Retry-After header not returned: %v", resp.Header)
	}
	if resp.Latency <= 0 {
		t.Fatalf("latency = %v", resp.Latency)
	}
	r := <-got
	if r.method != http.MethodPost || r.path != "/hooks/in" || string(r.body) != `{"type":"a.b"}` {
		t.Fatalf("server saw %s %s %q", r.method, r.path, r.body)
	}
	if r.ctype != "application/json" || r.agent != DefaultUserAgent || r.custom != "t1" {
		t.Fatalf("server saw Content-Type %q, User-Agent %q, X-Tenant %q", r.ctype, r.agent, r.custom)
	}
}

func TestSendKeepsCallerContentType(t *testing.T) {
	t.Parallel()
	got := make(chan []string, 1)
	srv, _ := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
		readBody(t, r)
		got <- r.Header.Values("Content-Type")
	})
	s := New(Config{AllowCIDRs: loopbackAllow})
	defer s.Close()
	// A lower-case name is the same header: no second Content-Type.
	_, err := s.Send(t.Context(), &Request{URL: srv.URL, Header: http.Header{"content-type": {"application/cloudevents+json"}}, Body: []byte(`{}`)})
	if err != nil {
		t.Fatal(err)
	}
	if v := <-got; len(v) != 1 || v[0] != "application/cloudevents+json" {
		t.Fatalf("server saw Content-Type %q", v)
	}
}

func TestSendRefusesLoopbackWithoutAllowList(t *testing.T) {
	t.Parallel()
	srv, hits := countingServer(t, func(w http.ResponseWriter, r *http.Request) {})
	port := serverPort(t, srv)
	s := New(Config{Resolver: staticResolver(map[string][]string{"hooks.example.com": {"127.0.0.1"}})})
	defer s.Close()

	for _, raw := range []string{
		srv.URL,                           // http to a loopback literal
		"https://127.0.0.1:" + port + "/", // https to a loopback literal
		"https://hooks.example.com:" + port + "/",   // a public-looking name resolving to loopback
		"https://localhost:" + port + "/",           // localhost
		"https://[::ffff:127.0.0.1]:" + port + "/",  // IPv4-mapped loopback
		"https://[64:ff9b::7f00:1]:" + port + "/",   // NAT64 form of loopback
		"https://user:pw@hooks.example.com:" + port, // credentials
	} {
		_, err := s.Send(t.Context(), &Request{URL: raw, Body: []byte(`{}`)})
		if !errors.Is(err, ErrURLRefused) {
			t.Errorf("Send(%s) = %v, want ErrURLRefused", raw, err)
		}
	}
	if n := hits.Load(); n != 0 {
		t.Fatalf("server got %d requests, want none", n)
	}
}

func TestSendRefusesAtDialTimeAfterRebinding(t *testing.T) {
	t.Parallel()
	srv, hits := countingServer(t, func(w http.ResponseWriter, r *http.Request) {})
	port := serverPort(t, srv)
	s := New(Config{Resolver: rebinding()})
	defer s.Close()

	raw := "https://rebind.example.com:" + port + "/in"
	if err := s.ValidateURL(t.Context(), raw); err != nil {
		t.Fatalf("ValidateURL saw a public address and refused: %v", err)
	}
	_, err := s.Send(t.Context(), &Request{URL: raw, Body: []byte(`{}`)})
	var re *RefusedError
	if !errors.As(err, &re) || re.Reason != ReasonLoopback {
		t.Fatalf("Send after rebinding = %v, want loopback refusal", err)
	}
	if re.Addr != netip.MustParseAddr("127.0.0.1") || re.Host != "rebind.example.com" {
		t.Fatalf("refusal names %s / %q", re.Addr, re.Host)
	}
	if n := hits.Load(); n != 0 {
		t.Fatalf("server got %d requests, want none", n)
	}
}

func TestSendPlainHTTPOnlyToAllowList(t *testing.T) {
	t.Parallel()
	srv, hits := countingServer(t, func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) })
	port := serverPort(t, srv)
	s := New(Config{
		AllowCIDRs: loopbackAllow,
		Resolver: staticResolver(map[string][]string{
			"dev.example.com":    {"127.0.0.1"},
			"public.example.com": {"93.184.216.34"},
		}),
	})
	defer s.Close()

	// A name that resolves into the allow list may use http://.
	resp, err := s.Send(t.Context(), &Request{URL: "http://dev.example.com:" + port + "/", Body: []byte(`{}`)})
	if err != nil || resp.StatusCode != http.StatusNoContent {
		t.Fatalf("http to an allowed name: %v, %+v", err, resp)
	}
	// http:// to a public address is refused at dial time, before any
	// connection is made.
	_, err = s.Send(t.Context(), &Request{URL: "http://public.example.com:" + port + "/", Body: []byte(`{}`)})
	var re *RefusedError
	if !errors.As(err, &re) || re.Reason != ReasonScheme {
		t.Fatalf("http to a public address = %v, want scheme refusal", err)
	}
	if n := hits.Load(); n != 1 {
		t.Fatalf("server got %d requests, want 1", n)
	}
}

func TestSendHTTPS(t *testing.T) {
	t.Parallel()
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "ok")
	}))
	defer srv.Close()
	roots := x509.NewCertPool()
	roots.AddCert(srv.Certificate())
	s := New(Config{
		AllowCIDRs: loopbackAllow,
		Resolver:   staticResolver(map[string][]string{"hooks.example.com": {"127.0.0.1"}}),
		TLSConfig:  &tls.Config{RootCAs: roots},
	})
	defer s.Close()

	raw := "https://hooks.example.com:" + serverPort(t, srv) + "/in"
	if err := s.ValidateURL(t.Context(), raw); err != nil {
		t.Fatalf("ValidateURL: %v", err)
	}
	resp, err := s.Send(t.Context(), &Request{URL: raw, Body: []byte(`{}`)})
	if err != nil {
		t.Fatalf("Send: %v", err)
	}
	if resp.StatusCode != http.StatusOK || string(resp.Body) != "ok" {
		t.Fatalf("got %d %q", resp.StatusCode, resp.Body)
	}
}

func TestSendDoesNotFollowRedirects(t *testing.T) {
	t.Parallel()
	target, targetHits := countingServer(t, func(w http.ResponseWriter, r *http.Request) {})
	srv, _ := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, target.URL+"/elsewhere", http.StatusTemporaryRedirect)
	})
	s := New(Config{AllowCIDRs: loopbackAllow})
	defer s.Close()

	resp, err := s.Send(t.Context(), &Request{URL: srv.URL, Body: []byte(`{}`)})
	if err != nil {
		t.Fatalf("Send: %v", err)
	}
	if resp.StatusCode != http.StatusTemporaryRedirect || resp.OK() {
		t.Fatalf("status = %d OK=%v, want the 307 itself, not OK", resp.StatusCode, resp.OK())
	}
	if !strings.HasSuffix(resp.Header.Get("Location"), "/elsewhere") {
		t.Fatalf("Location = %q", resp.Header.Get("Location"))
	}
	if n := targetHits.Load(); n != 0 {
		t.Fatalf("redirect target got %d requests, want none", n)
	}
}

func TestSendTimesOut(t *testing.T) {
	t.Parallel()
	srv, _ := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
		readBody(t, r)
		<-r.Context().Done() // never answers; returns when the client gives up
	})
	for _, tc := range []struct {
		name string
		cfg  time.Duration
		req  time.Duration
	}{
		{"config timeout", 100 * time.Millisecond, 0},
		{"request timeout", time.Minute, 100 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := New(Config{AllowCIDRs: loopbackAllow, Timeout: tc.cfg})
			defer s.Close()
			start := time.Now()
			_, err := s.Send(t.Context(), &Request{URL: srv.URL, Body: []byte(`{}`), Timeout: tc.req})
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("Send = %v, want a deadline error", err)
			}
			if d := time.Since(start); d > 20*time.Second {
				t.Fatalf("timeout took %v", d)
			}
		})
	}
}

func TestSendCapsBodyPreview(t *testing.T) {
	t.Parallel()
	big := strings.Repeat("x", 10_000)
	exact := strings.Repeat("y", DefaultMaxResponseBody)
	srv, _ := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/big":
			io.WriteString(w, big)
		case "/exact":
			io.WriteString(w, exact)
		}
	})
	cases := []struct {
		path      string
		max       int
		want      string
		truncated bool
	}{
		{"/big", 0, big[:DefaultMaxResponseBody], true},
		{"/exact", 0, exact, false},
		{"/big", 10, big[:10], true},
	}
	for _, tc := range cases {
		s := New(Config{AllowCIDRs: loopbackAllow, MaxResponseBody: tc.max})
		resp, err := s.Send(t.Context(), &Request{URL: srv.URL + tc.path, Body: []byte(`{}`)})
		s.Close()
		if err != nil {
			t.Fatalf("%s: %v", tc.path, err)
		}
		if string(resp.Body) != tc.want || resp.Truncated != tc.truncated || resp.BodyErr != nil {
			t.Fatalf("%s max %d: %d bytes, truncated=%v, err=%v; want %d bytes, truncated=%v",
				tc.path, tc.max, len(resp.Body), resp.Truncated, resp.BodyErr, len(tc.want), tc.truncated)
		}
	}
}

func TestSendBoundsConcurrencyPerHost(t *testing.T) {
	t.Parallel()
	const perHost, sends = 2, 6
	var mu sync.Mutex
	inFlight, maxInFlight := 0, 0
	arrived := make(chan struct{}, sends)
	release := make(chan struct{})
	srv, _ := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
		readBody(t, r)
		mu.Lock()
		inFlight++
		maxInFlight = max(maxInFlight, inFlight)
		mu.Unlock()
		arrived <- struct{}{}
		select {
		case <-release:
		case <-r.Context().Done():
		}
		mu.Lock()
		inFlight--
		mu.Unlock()
	})
	s := New(Config{AllowCIDRs: loopbackAllow, MaxPerHost: perHost})
	defer s.Close()

	var wg sync.WaitGroup
	errs := make(chan error, sends)
	for range sends {
		wg.Go(func() {
			resp, err := s.Send(t.Context(), &Request{URL: srv.URL, Body: []byte(`{}`)})
			if err == nil && !resp.OK() {
				err = fmt.Errorf("status %d", resp.StatusCode)
			}
			errs <- err
		})
	}
	for range perHost {
		<-arrived
	}
	// Wait until every send is inside the limiter: perHost of them hold a
	// slot of the host and are at the server, the others wait.
	key := hostKey("127.0.0.1")
	waitFor(t, func() bool {
		s.limit.mu.Lock()
		defer s.limit.mu.Unlock()
		hs := s.limit.hosts[key]
		return hs != nil && hs.refs == sends
	})
	s.limit.mu.Lock()
	held := len(s.limit.hosts[key].sem)
	s.limit.mu.Unlock()
	if held != perHost {
		t.Fatalf("%d sends hold a slot of the host, bound is %d", held, perHost)
	}
	// Let the rest through one at a time: each release frees one slot.
	for range sends - perHost {
		release <- struct{}{}
		<-arrived
	}
	for range perHost {
		release <- struct{}{}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("Send: %v", err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if maxInFlight > perHost {
		t.Fatalf("%d requests were in flight to one host, bound is %d", maxInFlight, perHost)
	}
}

// waitFor spins until cond holds; a condition that never holds fails the
// test instead of hanging it.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached in 10 s")
		}
		runtime.Gosched()
	}
}

func TestSendWaitForSlotEndsWithContext(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	arrived := make(chan struct{}, 1)
	srv, hits := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
		readBody(t, r)
		arrived <- struct{}{}
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	s := New(Config{AllowCIDRs: loopbackAllow, MaxConcurrent: 1})
	defer s.Close()

	first := make(chan error, 1)
	go func() {
		_, err := s.Send(t.Context(), &Request{URL: srv.URL, Body: []byte(`{}`)})
		first <- err
	}()
	<-arrived
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := s.Send(ctx, &Request{URL: srv.URL, Body: []byte(`{}`)}); !errors.Is(err, context.Canceled) {
		t.Fatalf("Send with a cancelled context while the slot is taken = %v", err)
	}
	close(release)
	if err := <-first; err != nil {
		t.Fatalf("first Send: %v", err)
	}
	if n := hits.Load(); n != 1 {
		t.Fatalf("server got %d requests, want 1", n)
	}
}

func TestValidateURLResolves(t *testing.T) {
	t.Parallel()
	res := staticResolver(map[string][]string{
		"public.example.com":  {"93.184.216.34", "2606:2800:220:1:248:1893:25c8:1946"},
		"private.example.com": {"10.0.0.7"},
		"mixed.example.com":   {"10.0.0.7", "93.184.216.34"},
		"meta.example.com":    {"169.254.169.254"},
		"dev.example.com":     {"127.0.0.1"},
	})
	open := New(Config{Resolver: res})
	dev := New(Config{Resolver: res, AllowCIDRs: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}})
	cases := []struct {
		s      *Sender
		url    string
		reason Reason
	}{
		{open, "https://public.example.com/in", ""},
		{open, "https://mixed.example.com/in", ""}, // the private address is never dialed
		{open, "https://private.example.com/in", ReasonPrivate},
		{open, "https://meta.example.com/in", ReasonMetadata},
		{open, "https://missing.example.com/in", ReasonUnresolvable},
		{open, "http://public.example.com/in", ReasonScheme},
		{open, "https://dev.example.com/in", ReasonLoopback},
		{dev, "http://dev.example.com:8080/in", ""},
		{dev, "http://localhost:8080/in", ""}, // ::1 is not allowed, 127.0.0.1 is
		{dev, "http://public.example.com/in", ReasonScheme},
		{dev, "https://private.example.com/in", ReasonPrivate},
	}
	for _, tc := range cases {
		err := tc.s.ValidateURL(t.Context(), tc.url)
		if tc.reason == "" {
			if err != nil {
				t.Errorf("ValidateURL(%s) = %v, want nil", tc.url, err)
			}
			continue
		}
		var re *RefusedError
		if !errors.As(err, &re) || re.Reason != tc.reason {
			t.Errorf("ValidateURL(%s) = %v, want reason %s", tc.url, err, tc.reason)
		}
	}
	// An unresolvable host keeps the resolver's error.
	err := open.ValidateURL(t.Context(), "https://missing.example.com/")
	var dnsErr *net.DNSError
	if !errors.As(err, &dnsErr) || !dnsErr.IsNotFound {
		t.Fatalf("unresolvable error %v does not carry the *net.DNSError", err)
	}
}

func TestDialerControlChecksTheSocketAddress(t *testing.T) {
	t.Parallel()
	var p Policy
	tlsDial := newGuardedDialer(p, nil, false, time.Second)
	if err := tlsDial.control("tcp4", "127.0.0.1:443", nil); !errors.Is(err, ErrURLRefused) {
		t.Fatalf("control(127.0.0.1) = %v, want refusal", err)
	}
	if err := tlsDial.control("tcp6", "[fd00:ec2::254]:80", nil); !errors.Is(err, ErrURLRefused) {
		t.Fatalf("control(fd00:ec2::254) = %v, want refusal", err)
	}
	if err := tlsDial.control("tcp4", "93.184.216.34:443", nil); err != nil {
		t.Fatalf("control(public) = %v, want nil", err)
	}
	plainDial := newGuardedDialer(p, nil, true, time.Second)
	if err := plainDial.control("tcp4", "93.184.216.34:80", nil); !errors.Is(err, ErrURLRefused) {
		t.Fatalf("plain http control(public) = %v, want refusal", err)
	}
}
