package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/heraldstreams/herald/internal/testcert"
)

func TestTLSFlagsGoTogether(t *testing.T) {
	t.Parallel()
	pair := testcert.Write(t, t.TempDir(), "herald")
	for _, args := range [][]string{
		{"--tls-cert-file", pair.CertFile},
		{"--tls-key-file", pair.KeyFile},
	} {
		_, err := parseServeFlags(args, io.Discard, io.Discard, noEnv)
		if !errors.Is(err, errUsage) || !strings.Contains(err.Error(), "set both or neither") {
			t.Errorf("%v: err = %v", args, err)
		}
	}
	cfg, err := parseServeFlags([]string{"--tls-cert-file", pair.CertFile, "--tls-key-file", pair.KeyFile}, io.Discard, io.Discard, noEnv)
	if err != nil || !cfg.TLS.on() || cfg.TLS.scheme() != "https" {
		t.Fatalf("cfg %+v, err %v", cfg, err)
	}
}

// A pair that does not load stops Herald at start, saying which file.
func TestTLSBadPairRefusedAtStart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	a, b := testcert.Write(t, dir, "a"), testcert.Write(t, t.TempDir(), "b")
	for name, args := range map[string][]string{
		"missing certificate": {"--tls-cert-file", dir + "/nothing.pem", "--tls-key-file", a.KeyFile},
		"key of another pair": {"--tls-cert-file", a.CertFile, "--tls-key-file", b.KeyFile},
	} {
		var logs bytes.Buffer
		err := run(context.Background(), append([]string{"serve", "--addr", "127.0.0.1:0", "--data-dir", t.TempDir()}, args...), nil, io.Discard, &logs, noEnv)
		if !errors.Is(err, errUsage) || !strings.Contains(logs.String(), "tls") {
			t.Errorf("%s: err %v, logs %s", name, err, logs.String())
		}
	}
}

// The reloader serves a rewritten pair after a tick (the files changed)
// or a SIGHUP, and keeps the pair it has when the files do not make one.
func TestCertReloader(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	first := testcert.Write(t, dir, "first")
	var logs syncBuffer
	r, err := newCertReloader(first.CertFile, first.KeyFile, slog.New(slog.NewTextHandler(&logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	served := func() string {
		c, err := r.getCertificate(nil)
		if err != nil {
			t.Fatal(err)
		}
		return c.Leaf.Subject.CommonName
	}
	tick, hup := make(chan time.Time), make(chan os.Signal)
	// trigger runs the reloader for one send and stops it: run takes the
	// send, finishes its reload, then sees the cancelled context, so the
	// reload is over when trigger returns and no reload of an earlier
	// trigger can see the files the test writes next.
	trigger := func(send func()) {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			defer close(done)
			r.run(ctx, tick, hup)
		}()
		send()
		cancel()
		<-done
	}
	onTick := func() { tick <- time.Now() }
	onHUP := func() { hup <- syscall.SIGHUP }

	if got := served(); got != "first" {
		t.Fatalf("serving %q", got)
	}
	testcert.Write(t, dir, "second")
	trigger(onTick)
	if got := served(); got != "second" {
		t.Fatalf("after the files changed: serving %q", got)
	}
	// Half a renewal: a new certificate whose key is not written yet.
	other := testcert.Write(t, t.TempDir(), "third")
	cert, err := os.ReadFile(other.CertFile)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(first.CertFile, cert, 0o600); err != nil {
		t.Fatal(err)
	}
	trigger(onTick)
	if got := served(); got != "second" {
		t.Fatalf("after a certificate without its key: serving %q", got)
	}
	if !strings.Contains(logs.String(), "TLS certificate not reloaded") {
		t.Errorf("no warning: %s", logs.String())
	}
	testcert.Write(t, dir, "fourth")
	trigger(onHUP)
	if got := served(); got != "fourth" {
		t.Fatalf("after SIGHUP: serving %q", got)
	}
	if !regexp.MustCompile(`TLS certificate reloaded" trigger=SIGHUP`).MatchString(logs.String()) {
		t.Errorf("no reload logged for SIGHUP: %s", logs.String())
	}
}

// herald serve with TLS: HTTP/2 is negotiated, the API works over it, a
// renewed certificate is served to new connections once the files
// change, and beyond loopback access control is required as without TLS.
func TestServeTLS(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	first := testcert.Write(t, dir, "first")
	tlsArgs := []string{"--tls-cert-file", first.CertFile, "--tls-key-file", first.KeyFile}

	err := run(context.Background(), append([]string{"serve", "--addr", "0.0.0.0:0", "--data-dir", t.TempDir()}, tlsArgs...), nil, io.Discard, io.Discard, noEnv)
	if !errors.Is(err, errUsage) || !strings.Contains(err.Error(), "refusing to listen") {
		t.Fatalf("TLS beyond loopback without access control: %v", err)
	}

	env := map[string]string{adminKeyEnv: testAdminKey}
	b := startCLI(t, env, append([]string{"serve", "--addr", "0.0.0.0:0", "--data-dir", t.TempDir()}, tlsArgs...)...)
	b.waitFor(t, &b.errOut, "herald listening")
	m := regexp.MustCompile(`addr=\S+:(\d+) tls=true`).FindStringSubmatch(b.errOut.String())
	if m == nil {
		t.Fatalf("no TLS listener logged: %s", b.errOut.String())
	}
	base := "https://localhost:" + m[1]

	// A new client for each check, so each makes its own handshake.
	client := func(pair testcert.Pair) *http.Client {
		return &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pair.Pool()}, ForceAttemptHTTP2: true}}
	}
	req := func(c *http.Client, method, path, body string) *http.Response {
		t.Helper()
		r, err := http.NewRequest(method, base+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		r.Header.Set("Authorization", "Bearer "+testAdminKey)
		r.Header.Set("Content-Type", "text/plain")
		resp, err := c.Do(r)
		if err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		t.Cleanup(func() { resp.Body.Close() })
		return resp
	}
	c := client(first)
	if resp := req(c, "PUT", "/tls/s", ""); resp.StatusCode != http.StatusCreated || resp.Proto != "HTTP/2.0" {
		t.Fatalf("PUT over TLS: %d %s", resp.StatusCode, resp.Proto)
	}
	if resp := req(c, "POST", "/tls/s", "over h2"); resp.StatusCode != http.StatusNoContent && resp.StatusCode != http.StatusOK {
		t.Fatalf("append over h2: %d", resp.StatusCode)
	}
	resp := req(c, "GET", "/tls/s?offset=-1", "")
	if body, err := io.ReadAll(resp.Body); err != nil || string(body) != "over h2" || resp.TLS == nil || resp.TLS.NegotiatedProtocol != "h2" {
		t.Fatalf("read over h2: %q %v %+v", body, err, resp.TLS)
	}

	second := testcert.Write(t, dir, "second")
	b.waitFor(t, &b.errOut, "TLS certificate reloaded")
	resp = req(client(second), "GET", "/_herald/healthz", "")
	if cn := resp.TLS.PeerCertificates[0].Subject.CommonName; resp.StatusCode != http.StatusOK || cn != "second" {
		t.Fatalf("after the files changed: %d, certificate %q", resp.StatusCode, cn)
	}
	// The old certificate is not trusted for the new one: the handshake
	// with a client that knows only the first fails.
	conn, err := tls.Dial("tcp", net.JoinHostPort("localhost", m[1]), &tls.Config{RootCAs: first.Pool()})
	if err == nil {
		conn.Close()
		t.Fatal("a client trusting only the first certificate still connects")
	}
	if err := b.stop(); err != nil {
		t.Fatal(err)
	}
}
