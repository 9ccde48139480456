// Package testhttp serves webhooks in process for the engines' tests: a
// transport that hands requests to an http.Handler, a sender over it with
// the real URL policy of webhook.Sender, and a receiver that records what
// it is sent and answers as the test says.
package testhttp

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"sync"
	"time"

	"github.com/heraldstreams/herald/webhook"
)

// HookURL is a URL the senders of NewSender accept (a loopback address);
// any URL reaches the handler.
const HookURL = "http://127.0.0.1:9/hook"

// Transport is an http.RoundTripper that serves requests with Handler in
// process. When the request's context ends first, the round trip returns
// its error once the handler has returned (handlers return when the
// request's context ends).
type Transport struct{ Handler http.Handler }

// RoundTrip serves r with the handler.
func (t Transport) RoundTrip(r *http.Request) (*http.Response, error) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return nil, err
	}
	r2 := r.Clone(r.Context())
	r2.Body = io.NopCloser(bytes.NewReader(body))
	rec := httptest.NewRecorder()
	done := make(chan struct{})
	go func() {
		defer close(done)
		t.Handler.ServeHTTP(rec, r2)
	}()
	select {
	case <-done:
		return rec.Result(), nil
	case <-r.Context().Done():
		<-done
		return nil, r.Context().Err()
	}
}

// Sender is a webhook sender (the engines' Sender interfaces) over an
// in-process transport, with the real URL policy for ValidateURL and the
// request timeout and response cap of webhook.Sender.
type Sender struct {
	Client *http.Client
	Policy webhook.Policy
}

// NewSender returns a Sender that delivers to h, its policy allowing
// loopback addresses (HookURL).
func NewSender(h http.Handler) *Sender {
	return &Sender{Client: &http.Client{Transport: Transport{Handler: h}},
		Policy: webhook.Policy{AllowCIDRs: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}}}
}

// ValidateURL checks raw with the policy, without DNS.
func (s *Sender) ValidateURL(_ context.Context, raw string) error {
	_, err := s.Policy.CheckURL(raw)
	return err
}

// Send POSTs req over the client, within req.Timeout when set.
func (s *Sender) Send(ctx context.Context, req *webhook.Request) (*webhook.Response, error) {
	if req.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, req.Timeout)
		defer cancel()
	}
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, req.URL, bytes.NewReader(req.Body))
	if err != nil {
		return nil, err
	}
	hreq.Header = req.Header.Clone()
	start := time.Now()
	resp, err := s.Client.Do(hreq)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, webhook.DefaultMaxResponseBody))
	return &webhook.Response{StatusCode: resp.StatusCode, Header: resp.Header, Body: body, BodyErr: err, Latency: time.Since(start)}, nil
}

// DefaultBody is a Receiver's answer when its reply sets none.
const DefaultBody = `{"received":true}`

// Received is one request a Receiver got, its body decoded as T.
type Received[T any] struct {
	At     time.Time
	Header http.Header
	Body   []byte
	Value  T
}

// Reply is how a Receiver answers its n-th request (from 0): a status,
// headers and a body.
type Reply[T any] func(n int, v T, r *http.Request) (status int, header map[string]string, body string)

// Receiver is a webhook endpoint that records the requests whose JSON
// body decodes as T (others get 400) and answers as its reply says (200
// and DefaultBody when none). The zero value is ready.
type Receiver[T any] struct {
	mu    sync.Mutex
	got   []Received[T]
	reply Reply[T]
}

// ServeHTTP records the request and answers it.
func (rc *Receiver[T]) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	var v T
	if err != nil || json.Unmarshal(body, &v) != nil {
		http.Error(w, "not a webhook body", http.StatusBadRequest)
		return
	}
	rc.mu.Lock()
	n := len(rc.got)
	rc.got = append(rc.got, Received[T]{At: time.Now(), Header: r.Header.Clone(), Body: body, Value: v})
	reply := rc.reply
	rc.mu.Unlock()
	status, out := http.StatusOK, DefaultBody
	var hdr map[string]string
	if reply != nil {
		status, hdr, out = reply(n, v, r)
	}
	w.Header().Set("Content-Type", "application/json")
	for k, v := range hdr {
		w.Header().Set(k, v)
	}
	w.WriteHeader(status)
	_, _ = io.WriteString(w, out)
}

// SetReply sets how the next requests are answered.
func (rc *Receiver[T]) SetReply(f Reply[T]) {
	rc.mu.Lock()
	rc.reply = f
	rc.mu.Unlock()
}

// Requests returns the requests recorded so far.
func (rc *Receiver[T]) Requests() []Received[T] {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]Received[T](nil), rc.got...)
}
