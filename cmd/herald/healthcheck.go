package main

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/heraldstreams/herald/httpapi"
)

const healthcheckUsage = `Check that a Herald answers: GET /_herald/healthz must be 200.

Usage:
  herald healthcheck [--url URL] [--timeout 5s]

Without --url it asks the Herald configured by the same environment as
herald serve, on loopback: HERALD_ADDR (its port), HTTPS when
HERALD_TLS_CERT_FILE is set (the certificate is not verified: the check
sends no credential and its certificate names a public host, not
loopback), and the first of HERALD_ALLOWED_HOSTS as Host. It exits 0 when
healthy, 1 otherwise: a container HEALTHCHECK needs no curl.
`

// runHealthcheck is `herald healthcheck`.
func runHealthcheck(ctx context.Context, args []string, stdout, stderr io.Writer, env func(string) (string, bool)) error {
	fs := flag.NewFlagSet("herald healthcheck", flag.ContinueOnError)
	fs.Usage = func() { fmt.Fprint(fs.Output(), healthcheckUsage) }
	target := fs.String("url", "", "base URL of the Herald to check (default: from HERALD_ADDR and HERALD_TLS_CERT_FILE, on loopback)")
	timeout := fs.Duration("timeout", 5*time.Second, "how long the check may take")
	if err := parseFlags(fs, args, stdout, stderr); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: unexpected arguments %q", errUsage, fs.Args())
	}
	client := &http.Client{Timeout: *timeout}
	host := ""
	base := *target
	if base == "" {
		var err error
		if base, err = localBaseURL(env); err != nil {
			return err
		}
		if hosts, ok := env(envName("allowed-hosts")); ok && len(splitList(hosts)) > 0 {
			host = splitList(hosts)[0]
		}
		// Loopback, and no credential is sent: what is checked is that
		// this Herald answers, not who it is.
		client.Transport = &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}} //nolint:gosec // see above
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+httpapi.HeraldPrefix+"healthz", nil)
	if err != nil {
		return fmt.Errorf("%w: --url: %v", errUsage, err)
	}
	if host != "" {
		req.Host = host
	}
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("unhealthy: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("unhealthy: %s answered %s", req.URL, resp.Status)
	}
	fmt.Fprintln(stdout, "healthy")
	return nil
}

// localBaseURL is the loopback URL of the Herald that herald serve would
// run with this environment.
func localBaseURL(env func(string) (string, bool)) (string, error) {
	addr, ok := env(envName("addr"))
	if !ok || addr == "" {
		addr = serveFlags(&serveConfig{}).Lookup("addr").DefValue
	}
	h, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", fmt.Errorf("%w: HERALD_ADDR=%q: %v", errUsage, addr, err)
	}
	if ip := net.ParseIP(h); h == "" || (ip != nil && ip.IsUnspecified()) {
		h = "127.0.0.1"
	}
	scheme := "http"
	if f, ok := env(envName("tls-cert-file")); ok && f != "" {
		scheme = "https"
	}
	return scheme + "://" + net.JoinHostPort(h, port), nil
}
