package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// Callback error codes (docs/subscriptions.md, Errors).
const (
	CodeInvalidRequest = "INVALID_REQUEST"
	CodeTokenExpired   = "TOKEN_EXPIRED"
	CodeTokenInvalid   = "TOKEN_INVALID"
	CodeAlreadyClaimed = "ALREADY_CLAIMED"
	CodeInvalidOffset  = "INVALID_OFFSET"
	CodeStaleEpoch     = "STALE_EPOCH"
	CodeConsumerGone   = "CONSUMER_GONE"
)

// ErrFenced is matched (errors.Is) by the callback errors after which a
// consumer must stop working on its wake: STALE_EPOCH (a newer wake
// exists), ALREADY_CLAIMED (another wake is current) and CONSUMER_GONE
// (the consumer was removed).
var ErrFenced = errors.New("client: this wake is over; stop processing")

// CallbackError is an error response of the callback API.
type CallbackError struct {
	Status  int
	Code    string
	Message string
}

// Error describes the response.
func (e *CallbackError) Error() string {
	return fmt.Sprintf("client: callback failed: %d %s: %s", e.Status, e.Code, e.Message)
}

// Is makes errors.Is(err, ErrFenced) true for the codes that end a wake.
func (e *CallbackError) Is(target error) bool {
	return target == ErrFenced && (e.Code == CodeStaleEpoch || e.Code == CodeAlreadyClaimed || e.Code == CodeConsumerGone)
}

// StreamOffset is a stream and an offset: an ack, or an entry of the
// streams a callback response lists.
//
// Offsets are Durable Streams offsets, which point between data: ack the
// Stream-Next-Offset of the last response you processed, and the next
// wake says to read from there.
type StreamOffset struct {
	Path   string `json:"path"`
	Offset string `json:"offset"`
}

// Callback is what one callback says besides its epoch and wake id, which
// the CallbackClient adds.
type Callback struct {
	Acks        []StreamOffset `json:"acks,omitempty"`
	Subscribe   []string       `json:"subscribe,omitempty"`
	Unsubscribe []string       `json:"unsubscribe,omitempty"`
	Done        bool           `json:"done,omitempty"`
}

// CallbackResult is a successful callback response: the consumer's
// streams with their acked offsets.
type CallbackResult struct {
	Streams []StreamOffset
}

// CallbackClient sends the callbacks of one wake. It claims the wake with
// the first callback, sends the wake's epoch with every one, and keeps
// the freshest token: each response's, or the new one a TOKEN_EXPIRED
// error carries, with which it retries once; a callback Herald cannot
// take now is sent again (Send). It is safe for concurrent
// use; callbacks are sent one at a time, as Herald processes them.
type CallbackClient struct {
	url         string
	epoch       int64
	wakeID      string
	traceparent string
	hc          *http.Client
	// retryFor is CallbackRetryFor; tests shorten it.
	retryFor time.Duration

	mu      sync.Mutex
	token   string // guarded by mu
	claimed bool   // guarded by mu
}

// NewCallbackClient returns the callback client of a wake. hc is
// http.DefaultClient when nil.
func NewCallbackClient(w *Wake, hc *http.Client) *CallbackClient {
	if hc == nil {
		hc = http.DefaultClient
	}
	return &CallbackClient{url: w.Callback, epoch: w.Epoch, wakeID: w.WakeID, traceparent: w.Traceparent, hc: hc, token: w.Token,
		retryFor: CallbackRetryFor}
}

// Token returns the freshest token.
func (c *CallbackClient) Token() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.token
}

// callbackBody is the JSON of a callback request.
type callbackBody struct {
	Epoch  int64  `json:"epoch"`
	WakeID string `json:"wake_id,omitempty"`
	Callback
}

type callbackResponse struct {
	OK      bool           `json:"ok"`
	Token   string         `json:"token"`
	Streams []StreamOffset `json:"streams"`
	Error   *struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// maxCallbackResponse bounds a callback response body.
const maxCallbackResponse = 1 << 20

// Send sends one callback and returns the consumer's streams. Errors: a
// *CallbackError (errors.Is(err, ErrFenced) when the wake is over), or a
// transport error, after which the same callback may be sent again
// (callbacks are idempotent).
//
// An answer that says "not now" is sent again for up to
// CallbackRetryFor, at once: a 503 (Herald's database is away,
// STORE_UNAVAILABLE, after its Retry-After), a 502 or 504 of a proxy in
// front of Herald, or a connection that failed (the replica that had it
// died; another takes the next one). A wake thus survives a restart of
// Herald's database or the death of a replica, instead of waiting for
// Herald's liveness timeout.
func (c *CallbackClient) Send(ctx context.Context, cb Callback) (*CallbackResult, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	body := callbackBody{Epoch: c.epoch, Callback: cb}
	if !c.claimed {
		body.WakeID = c.wakeID
	}
	giveUp := time.Now().Add(c.retryFor)
	backoff := callbackRetryMin
	renewed := false
	for {
		resp, err := c.post(ctx, body)
		if err == nil && resp.body.Token != "" {
			c.token = resp.body.Token
		}
		if err == nil && resp.body.OK && resp.status == http.StatusOK {
			c.claimed = true
			return &CallbackResult{Streams: resp.body.Streams}, nil
		}
		var ce *CallbackError
		if err == nil {
			ce = &CallbackError{Status: resp.status}
			if resp.body.Error != nil {
				ce.Code, ce.Message = resp.body.Error.Code, resp.body.Error.Message
			}
			if ce.Code == CodeTokenExpired && resp.body.Token != "" && !renewed {
				renewed = true
				continue // retry once with the renewed token
			}
		}
		wait, again := retryWait(resp, backoff)
		if !again || ctx.Err() != nil || time.Now().Add(wait).After(giveUp) {
			if err != nil {
				return nil, err
			}
			return nil, ce
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
		case <-t.C:
		}
		backoff = min(2*backoff, callbackRetryMax)
	}
}

// CallbackRetryFor is how long a CallbackClient sends a callback again
// while the answer says "not now" (see Send): well within Herald's 45 s
// liveness timeout, so the wake stays alive meanwhile.
const CallbackRetryFor = 20 * time.Second

// The waits between sends of a callback that met a failed connection or
// a proxy's 502 or 504; a 503 waits its Retry-After (at most
// callbackRetryMax).
const (
	callbackRetryMin = 100 * time.Millisecond
	callbackRetryMax = 2 * time.Second
)

// retryWait says whether a callback answered resp (nil: the connection
// failed) is sent again, and after how long.
func retryWait(resp *postResult, backoff time.Duration) (time.Duration, bool) {
	if resp == nil {
		return backoff, true
	}
	switch resp.status {
	case http.StatusServiceUnavailable:
		if secs, err := strconv.Atoi(resp.header.Get("Retry-After")); err == nil && secs >= 0 {
			return min(time.Duration(secs)*time.Second, callbackRetryMax), true
		}
		return backoff, true
	case http.StatusBadGateway, http.StatusGatewayTimeout:
		return backoff, true
	}
	return 0, false
}

// postResult is an answer to a callback: its status, headers and body
// (the zero body when it was not JSON, as a proxy's error page).
type postResult struct {
	status int
	header http.Header
	body   callbackResponse
}

// post sends one request with the current token; caller holds mu. A
// body that is not JSON is an error, with the answer (a proxy's error
// page: its status says whether to send again).
func (c *CallbackClient) post(ctx context.Context, body callbackBody) (*postResult, error) {
	b, err := json.Marshal(body)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+c.token)
	if c.traceparent != "" {
		req.Header.Set(TraceparentHeader, c.traceparent)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("client: callback: %w", err)
	}
	defer resp.Body.Close()
	out := &postResult{status: resp.StatusCode, header: resp.Header}
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxCallbackResponse))
	if err != nil {
		return nil, fmt.Errorf("client: reading the callback response: %w", err)
	}
	if err := json.Unmarshal(raw, &out.body); err != nil {
		return out, fmt.Errorf("client: callback answered %d with a body that is not JSON: %w", resp.StatusCode, err)
	}
	return out, nil
}
