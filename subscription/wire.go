package subscription

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/heraldstreams/herald/internal/jsontext"
)

// StreamOffset is a stream path and an offset: the entries of "streams" in
// a wake payload and a callback response, and of "acks" in a callback
// request.
type StreamOffset struct {
	Path   string `json:"path"`
	Offset string `json:"offset"`
}

// WakePayload is the body of a wake notification (docs/subscriptions.md,
// The wake request).
type WakePayload struct {
	ConsumerID    string         `json:"consumer_id"`
	Epoch         int64          `json:"epoch"`
	WakeID        string         `json:"wake_id"`
	PrimaryStream string         `json:"primary_stream"`
	Streams       []StreamOffset `json:"streams"`
	TriggeredBy   []string       `json:"triggered_by"`
	Callback      string         `json:"callback"`
	Token         string         `json:"token"`
}

// AppendJSON appends the payload as JSON, byte for byte what
// encoding/json writes for it, without reflection (every wake encodes
// one).
func (w *WakePayload) AppendJSON(dst []byte) []byte {
	dst = append(dst, `{"consumer_id":`...)
	dst = jsontext.AppendString(dst, w.ConsumerID)
	dst = append(dst, `,"epoch":`...)
	dst = strconv.AppendInt(dst, w.Epoch, 10)
	dst = append(dst, `,"wake_id":`...)
	dst = jsontext.AppendString(dst, w.WakeID)
	dst = append(dst, `,"primary_stream":`...)
	dst = jsontext.AppendString(dst, w.PrimaryStream)
	dst = append(dst, `,"streams":`...)
	if w.Streams == nil {
		dst = append(dst, "null"...)
	} else {
		dst = jsontext.AppendArray(dst, len(w.Streams), func(dst []byte, i int) []byte {
			dst = append(dst, `{"path":`...)
			dst = jsontext.AppendString(dst, w.Streams[i].Path)
			dst = append(dst, `,"offset":`...)
			dst = jsontext.AppendString(dst, w.Streams[i].Offset)
			return append(dst, '}')
		})
	}
	dst = append(dst, `,"triggered_by":`...)
	if w.TriggeredBy == nil {
		dst = append(dst, "null"...)
	} else {
		dst = jsontext.AppendArray(dst, len(w.TriggeredBy), func(dst []byte, i int) []byte {
			return jsontext.AppendString(dst, w.TriggeredBy[i])
		})
	}
	dst = append(dst, `,"callback":`...)
	dst = jsontext.AppendString(dst, w.Callback)
	dst = append(dst, `,"token":`...)
	dst = jsontext.AppendString(dst, w.Token)
	return append(dst, '}')
}

// CallbackRequest is the body of a callback (docs/subscriptions.md, The
// callback API). Use ParseCallbackRequest to read one.
type CallbackRequest struct {
	Epoch       int64          `json:"epoch"`
	WakeID      string         `json:"wake_id,omitempty"`
	Acks        []StreamOffset `json:"acks,omitempty"`
	Subscribe   []string       `json:"subscribe,omitempty"`
	Unsubscribe []string       `json:"unsubscribe,omitempty"`
	Done        bool           `json:"done,omitempty"`
}

// CallbackResponse is the body of a successful callback response. Token is
// always set (S5) and Streams always present, [] when empty.
type CallbackResponse struct {
	OK      bool           `json:"ok"`
	Token   string         `json:"token"`
	Streams []StreamOffset `json:"streams"`
}

// NewCallbackResponse returns the success response for a consumer after a
// callback: its streams and the token for the next callback.
func NewCallbackResponse(c *Consumer, token string) CallbackResponse {
	return CallbackResponse{OK: true, Token: token, Streams: c.StreamOffsets()}
}

// ErrorResponse is the body of a callback error response. Token is set
// when the request carried a token with a valid signature: a renewed one
// for TOKEN_EXPIRED, one for the token's own epoch otherwise (never for a
// newer epoch: that would un-fence a zombie).
type ErrorResponse struct {
	OK    bool        `json:"ok"`
	Error ErrorDetail `json:"error"`
	Token string      `json:"token,omitempty"`
}

// ErrorDetail is the "error" object of an ErrorResponse.
type ErrorDetail struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// Subscription is the subscription resource of the HTTP API
// (docs/subscriptions.md, Subscriptions). WebhookSecret is set only in the
// response to the request that created the subscription.
type Subscription struct {
	SubscriptionID string `json:"subscription_id"`
	Pattern        string `json:"pattern"`
	Webhook        string `json:"webhook"`
	WebhookSecret  string `json:"webhook_secret,omitempty"`
	Description    string `json:"description,omitempty"`
}

// SubscriptionList is the body of the list responses.
type SubscriptionList struct {
	Subscriptions []Subscription `json:"subscriptions"`
}

// CreateRequest is the body of a subscription create request.
type CreateRequest struct {
	Webhook     string `json:"webhook"`
	Description string `json:"description,omitempty"`
}

// WebhookResponse is the part of a webhook's 2xx response body that Herald
// reads: {"done": true} is a synchronous done.
type WebhookResponse struct {
	Done bool `json:"done"`
}

// callbackBody mirrors CallbackRequest with pointers, to tell a missing
// field from a zero one.
type callbackBody struct {
	Epoch       *int64         `json:"epoch"`
	WakeID      *string        `json:"wake_id"`
	Acks        []StreamOffset `json:"acks"`
	Subscribe   []string       `json:"subscribe"`
	Unsubscribe []string       `json:"unsubscribe"`
	Done        *bool          `json:"done"`
}

// decodeStrict decodes exactly one JSON value into v, refusing unknown
// fields and trailing data.
func decodeStrict(body []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return errors.New("data after the JSON object")
	}
	return nil
}

// ParseCallbackRequest reads a callback body strictly. Every error wraps
// ErrInvalidRequest: malformed JSON, anything but one object, a missing or
// null epoch, a negative epoch, a field of the wrong type, an ack without
// path or offset, a subscribe or unsubscribe entry that is not a stream
// path, and an unknown field.
//
// Unknown fields are refused rather than ignored because the cost of
// ignoring one is silent: a consumer that misspells "acks" or "done" would
// get 200 while its progress is lost or it stays LIVE, and the error tells
// it at once. A field added to docs/subscriptions.md is a deliberate
// change of this function.
func ParseCallbackRequest(body []byte) (CallbackRequest, error) {
	var b callbackBody
	if err := decodeStrict(body, &b); err != nil {
		return CallbackRequest{}, fmt.Errorf("%w: %v", ErrInvalidRequest, err)
	}
	if b.Epoch == nil {
		return CallbackRequest{}, fmt.Errorf("%w: epoch is required", ErrInvalidRequest)
	}
	if *b.Epoch < 0 {
		return CallbackRequest{}, fmt.Errorf("%w: epoch must not be negative", ErrInvalidRequest)
	}
	req := CallbackRequest{
		Epoch:       *b.Epoch,
		Acks:        b.Acks,
		Subscribe:   b.Subscribe,
		Unsubscribe: b.Unsubscribe,
	}
	if b.WakeID != nil {
		req.WakeID = *b.WakeID
	}
	if b.Done != nil {
		req.Done = *b.Done
	}
	for _, a := range req.Acks {
		if a.Path == "" || a.Offset == "" {
			return CallbackRequest{}, fmt.Errorf("%w: every ack needs a path and an offset", ErrInvalidRequest)
		}
	}
	for _, list := range [][]string{req.Subscribe, req.Unsubscribe} {
		for _, p := range list {
			if err := ValidateStreamPath(p); err != nil {
				return CallbackRequest{}, fmt.Errorf("%w: %v", ErrInvalidRequest, err)
			}
		}
	}
	return req, nil
}

// ParseCreateRequest reads a subscription create body strictly (unknown
// fields refused, for the reason given at ParseCallbackRequest). The
// webhook must be present; whether Herald may call it is the outbound
// sender's policy to decide. Errors wrap ErrInvalidRequest.
func ParseCreateRequest(body []byte) (CreateRequest, error) {
	var req CreateRequest
	if err := decodeStrict(body, &req); err != nil {
		return CreateRequest{}, fmt.Errorf("%w: %v", ErrInvalidRequest, err)
	}
	if req.Webhook == "" {
		return CreateRequest{}, fmt.Errorf("%w: webhook is required", ErrInvalidRequest)
	}
	return req, nil
}

// ParseWebhookResponse reads a webhook's 2xx response body. Only a JSON
// object whose "done" is true is a synchronous done; an empty body, other
// JSON, or text is a plain 2xx (the body is optional, so it
// is read leniently).
func ParseWebhookResponse(body []byte) WebhookResponse {
	var r struct {
		Done any `json:"done"`
	}
	if json.Unmarshal(body, &r) != nil {
		return WebhookResponse{}
	}
	done, _ := r.Done.(bool)
	return WebhookResponse{Done: done}
}

// ConsumerInfo is a consumer instance as the consumer API shows it: its
// state, epoch, the offsets of its streams and its next deadline. It
// carries no token.
type ConsumerInfo struct {
	ConsumerID     string `json:"consumer_id"`
	SubscriptionID string `json:"subscription_id"`
	PrimaryStream  string `json:"primary_stream"`
	State          State  `json:"state"`
	Epoch          int64  `json:"epoch"`
	// WakeID is the current (or last) wake's id, "" before the first.
	WakeID string `json:"wake_id"`
	// Attempts counts the deliveries sent for the current wake.
	Attempts int                  `json:"attempts"`
	Streams  []ConsumerStreamInfo `json:"streams"`
	// NextDeadline is when a timer of the consumer fires next (a retry,
	// the end of a delivery attempt, the liveness timeout); nil when none
	// is armed.
	NextDeadline *time.Time `json:"next_deadline"`
	// FailingSince is the first of the current run of failed deliveries,
	// nil when the last one succeeded.
	FailingSince *time.Time `json:"failing_since"`
	// Stuck is true when the consumer was woken StuckWakes times or more
	// without its acks advancing; StuckReason says so in words ("woken
	// 12 times in 14 s without an ack"), nil when it is not stuck.
	Stuck       bool    `json:"stuck"`
	StuckReason *string `json:"stuck_reason"`
}

// ConsumerStreamInfo is one stream of a consumer: its acked offset, and
// the tail it was told about in the current wake ("" when none).
type ConsumerStreamInfo struct {
	Path     string `json:"path"`
	Acked    string `json:"acked"`
	Notified string `json:"notified,omitempty"`
}

// ConsumerList is a page of a subscription's consumers.
type ConsumerList struct {
	Data []ConsumerInfo `json:"data"`
	// NextCursor continues the list; nil on the last page.
	NextCursor *string `json:"next_cursor"`
}
