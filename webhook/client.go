package webhook

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
)

// ErrBodyTooLarge is the read error of a Client response body longer
// than its cap.
var ErrBodyTooLarge = errors.New("webhook: response body is over the size limit")

// Client returns an *http.Client for the few outbound requests that are
// not webhook POSTs and need a library's own HTTP calls, such as fetching
// an identity provider's JWKS. Every request goes through the sender's
// guards: the URL is checked against the address policy, the dialers
// check every address dialed (so https:// to public addresses, http://
// and private ranges only inside Config.AllowCIDRs), no proxy from the
// environment, no redirect followed, the sender's timeout and concurrency
// bounds. A response body longer than maxBody bytes fails its read with
// ErrBodyTooLarge, so a hostile server cannot make Herald buffer without
// end.
func (s *Sender) Client(maxBody int64) *http.Client {
	return &http.Client{
		Transport:     &guardedTransport{s: s, maxBody: maxBody},
		Timeout:       s.timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// guardedTransport routes a request to the transport whose dialer serves
// its scheme, after the checks Send makes.
type guardedTransport struct {
	s       *Sender
	maxBody int64
}

func (t *guardedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	u, err := t.s.policy.CheckURL(req.URL.String())
	if err != nil {
		return nil, closeBody(req, err)
	}
	release, err := t.s.limit.acquire(req.Context(), hostKey(u.Hostname()))
	if err != nil {
		return nil, closeBody(req, fmt.Errorf("webhook: waiting for a send slot: %w", err))
	}
	next := t.s.https.Transport
	if u.Scheme == "http" {
		next = t.s.plain.Transport
	}
	resp, err := next.RoundTrip(req)
	if err != nil {
		release()
		return nil, err
	}
	resp.Body = &cappedBody{rc: resp.Body, left: t.maxBody, release: release}
	return resp, nil
}

// closeBody closes a request's body, as a RoundTripper must even when it
// fails, and returns err.
func closeBody(req *http.Request, err error) error {
	if req.Body != nil {
		return errors.Join(err, req.Body.Close())
	}
	return err
}

// cappedBody is a response body that fails past its cap and frees the
// concurrency slot when closed.
type cappedBody struct {
	rc      io.ReadCloser
	left    int64
	release func()
	once    sync.Once
}

func (b *cappedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		// One byte more tells a body that ends exactly at the cap from a
		// longer one.
		var one [1]byte
		n, err := b.rc.Read(one[:])
		if n > 0 {
			return 0, ErrBodyTooLarge
		}
		return 0, err
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.rc.Read(p)
	b.left -= int64(n)
	return n, err
}

func (b *cappedBody) Close() error {
	err := b.rc.Close()
	b.once.Do(b.release)
	return err
}
