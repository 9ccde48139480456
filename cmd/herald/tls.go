package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// tlsPollInterval is how often Herald reads the certificate and key files
// again to see whether they changed. Reading two small files costs nothing,
// and comparing their contents (not their modification times) also sees a
// change made by swapping a symbolic link, as Kubernetes does for mounted
// secrets.
const tlsPollInterval = 5 * time.Second

// tlsConfig is how `herald serve` serves HTTPS.
type tlsConfig struct {
	CertFile string
	KeyFile  string
}

func (c *tlsConfig) addFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.CertFile, "tls-cert-file", "", "serve HTTPS (HTTP/2 and HTTP/1.1) with the PEM certificate chain in this file (with --tls-key-file); read again when it changes or on SIGHUP, without dropping connections")
	fs.StringVar(&c.KeyFile, "tls-key-file", "", "the PEM private key of --tls-cert-file")
}

func (c *tlsConfig) problems() []string {
	if (c.CertFile == "") != (c.KeyFile == "") {
		return []string{"--tls-cert-file and --tls-key-file go together: set both or neither"}
	}
	return nil
}

// on reports whether Herald serves HTTPS.
func (c *tlsConfig) on() bool { return c.CertFile != "" }

// scheme is the URL scheme Herald is reached at when no public URL says
// otherwise.
func (c *tlsConfig) scheme() string {
	if c.on() {
		return "https"
	}
	return "http"
}

// certReloader hands the TLS stack the certificate of a certificate and
// key file pair, and loads the pair again when asked (reload): a renewed
// certificate is served to new handshakes while the listener and the
// connections already open stay as they are.
type certReloader struct {
	certFile, keyFile string
	log               *slog.Logger
	cert              atomic.Pointer[tls.Certificate]
	// mu serialises reloads and guards the contents last loaded.
	mu              sync.Mutex
	certPEM, keyPEM []byte
}

// newCertReloader loads the pair once: a pair that does not load stops
// Herald at start, rather than at the first handshake.
func newCertReloader(certFile, keyFile string, log *slog.Logger) (*certReloader, error) {
	r := &certReloader{certFile: certFile, keyFile: keyFile, log: log}
	if _, err := r.reload(); err != nil {
		return nil, fmt.Errorf("%w: %v", errUsage, err)
	}
	return r, nil
}

// tlsConfig is the server's TLS configuration: certificates from r, TLS
// 1.2 at least. net/http adds HTTP/2 to the protocols it offers.
func (r *certReloader) tlsConfig() *tls.Config {
	return &tls.Config{GetCertificate: r.getCertificate, MinVersion: tls.VersionTLS12}
}

func (r *certReloader) getCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	return r.cert.Load(), nil
}

// reload reads both files and, when either changed, serves the new pair.
// A pair that does not load (say the certificate is written but not yet
// its key) is an error, and the pair served so far stays.
func (r *certReloader) reload() (changed bool, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	certPEM, err := os.ReadFile(r.certFile)
	if err != nil {
		return false, fmt.Errorf("--tls-cert-file: %w", err)
	}
	keyPEM, err := os.ReadFile(r.keyFile)
	if err != nil {
		return false, fmt.Errorf("--tls-key-file: %w", err)
	}
	if r.cert.Load() != nil && bytes.Equal(certPEM, r.certPEM) && bytes.Equal(keyPEM, r.keyPEM) {
		return false, nil
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return false, fmt.Errorf("TLS certificate %s and key %s: %w", r.certFile, r.keyFile, err)
	}
	r.cert.Store(&cert)
	r.certPEM, r.keyPEM = certPEM, keyPEM
	return true, nil
}

// run reloads the pair at every tick (when the files changed) and at
// every hangup signal, until ctx ends.
func (r *certReloader) run(ctx context.Context, tick <-chan time.Time, hup <-chan os.Signal) {
	for {
		trigger := "file change"
		select {
		case <-ctx.Done():
			return
		case <-tick:
		case <-hup:
			trigger = "SIGHUP"
		}
		changed, err := r.reload()
		switch {
		case err != nil:
			r.log.Warn("TLS certificate not reloaded; still serving the previous one", "trigger", trigger, "err", err)
		case changed:
			r.log.Info("TLS certificate reloaded", "trigger", trigger, "expires", r.cert.Load().Leaf.NotAfter.UTC().Format(time.RFC3339))
		case trigger == "SIGHUP":
			r.log.Info("TLS certificate unchanged", "trigger", trigger)
		}
	}
}
