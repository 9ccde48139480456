package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
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
// error carries, with which it retries once. It is safe for concurrent
// use; callbacks are sent one at a time, as Herald processes them.
type CallbackClient struct {
	url         string
	epoch       int64
	wakeID      string
	traceparent string
	hc          *http.Client

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
	return &CallbackClient{url: w.Callback, epoch: w.Epoch, wakeID: w.WakeID, traceparent: w.Traceparent, hc: hc, token: w.Token}
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
func (c *CallbackClient) Send(ctx context.Context, cb Callback) (*CallbackResult, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	body := callbackBody{Epoch: c.epoch, Callback: cb}
	if !c.claimed {
		body.WakeID = c.wakeID
	}
	for attempt := 0; ; attempt++ {
		resp, status, err := c.post(ctx, body)
		if err != nil {
			return nil, err
		}
		if resp.Token != "" {
			c.token = resp.Token
		}
		if resp.OK && status == http.StatusOK {
			c.claimed = true
			return &CallbackResult{Streams: resp.Streams}, nil
		}
		ce := &CallbackError{Status: status}
		if resp.Error != nil {
			ce.Code, ce.Message = resp.Error.Code, resp.Error.Message
		}
		if ce.Code == CodeTokenExpired && resp.Token != "" && attempt == 0 {
			continue // retry once with the renewed token
		}
		return nil, ce
	}
}

// post sends one request with the current token; caller holds mu.
func (c *CallbackClient) post(ctx context.Context, body callbackBody) (*callbackResponse, int, error) {
	b, err := json.Marshal(body)
	if err != nil {
		return nil, 0, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, bytes.NewReader(b))
	if err != nil {
		return nil, 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+c.token)
	if c.traceparent != "" {
		req.Header.Set(TraceparentHeader, c.traceparent)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, 0, fmt.Errorf("client: callback: %w", err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxCallbackResponse))
	if err != nil {
		return nil, 0, fmt.Errorf("client: reading the callback response: %w", err)
	}
	var out callbackResponse
	if err := json.Unmarshal(raw, &out); err != nil {
		return nil, 0, fmt.Errorf("client: callback answered %d with a body that is not JSON: %w", resp.StatusCode, err)
	}
	return &out, resp.StatusCode, nil
}
