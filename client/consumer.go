package client

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Batch is the data of one catch-up read of a stream: what a consumer
// processes at a time.
type Batch struct {
	// Stream is the stream's path.
	Stream string
	// Data is the bytes read (for a JSON stream, a JSON array of the
	// messages).
	Data []byte
	// ContentType is the stream's content type.
	ContentType string
	// Offset is where Data starts; NextOffset is where the next read
	// starts, the offset the consumer acks once it processed Data.
	Offset, NextOffset string
}

// ConsumerConfig configures a Consumer.
type ConsumerConfig struct {
	// Secret is the subscription's webhook secret: ServeHTTP refuses
	// wakes whose Webhook-Signature it does not verify.
	Secret string
	// Process handles one batch. A batch is the unit of retry: on success
	// it is acked, on error it is not, and neither is anything after it in
	// the same stream; the consumer's other streams are still read. The
	// wake then ends as RetryBackoff describes, and the next wake reads
	// the stream again from the failed batch. Process must be idempotent:
	// delivery is at least once.
	Process func(ctx context.Context, b Batch) error
	// RetryBackoff is how long a wake that failed (Process returned an
	// error, or a read or an ack failed) waits before it says done. The
	// consumer stays LIVE meanwhile, so Herald does not wake it, and the
	// done makes Herald wake it again at once with a new epoch, from the
	// last ack: a failing batch is retried about every RetryBackoff plus
	// the time a wake takes, never faster. Waits of more than
	// keepAliveEvery send empty callbacks to keep the wake within
	// Herald's 45 s liveness timeout. 0 means DefaultRetryBackoff.
	RetryBackoff time.Duration
	// StreamsURL is the base URL of the streams, such as
	// "https://herald.example.com". "" takes the scheme and host of the
	// wake's callback URL.
	StreamsURL string
	// Key is the Herald API key the consumer reads streams with, sent
	// as "Authorization: Bearer <Key>" on every read: with access control
	// on, a key with streams:read for the subscription's paths is enough
	// (callbacks carry the wake's own token instead). "" sends none, as
	// a Herald in development mode expects.
	Key string
	// HTTPClient reads streams and sends callbacks; http.DefaultClient
	// when nil.
	HTTPClient *http.Client
	// Logger receives ServeHTTP's errors; slog.Default() when nil.
	Logger *slog.Logger
	// Now is the clock for signature checks; time.Now when nil.
	Now func() time.Time
}

// DefaultRetryBackoff is the RetryBackoff of a ConsumerConfig that sets
// none.
const DefaultRetryBackoff = time.Second

// keepAliveEvery is how often a consumer waiting out its RetryBackoff
// sends an empty callback: a third of Herald's 45 s liveness timeout, so
// one lost or slow callback does not let the wake lapse.
const keepAliveEvery = 15 * time.Second

// Consumer turns a wake into work: it claims the wake, reads each of the
// consumer's streams from its acked offset with catch-up reads of the
// Durable Streams protocol, hands every batch to Process, acks it, and
// says done when all streams are read to their tail. Events that arrive
// meanwhile make Herald wake it again. A failure ends the wake the same
// way, after RetryBackoff, so that Herald retries what was not acked.
type Consumer struct {
	cfg ConsumerConfig
	// keepAlive is keepAliveEvery; tests shorten it.
	keepAlive time.Duration
}

// NewConsumer returns a Consumer for cfg.
func NewConsumer(cfg ConsumerConfig) *Consumer {
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = http.DefaultClient
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.RetryBackoff <= 0 {
		cfg.RetryBackoff = DefaultRetryBackoff
	}
	return &Consumer{cfg: cfg, keepAlive: keepAliveEvery}
}

// maxWakeBody bounds a wake notification body.
const maxWakeBody = 1 << 20

// ServeHTTP is a webhook endpoint: it verifies the wake's signature
// (401 when it does not verify), parses it (400), and handles it while
// the request is open, as a serverless function does; it answers 200
// once the wake is done or over (fenced). A failure answers 500 once
// HandleWake has ended the wake: Herald ignores the answer to a wake
// that was already claimed, and retries the delivery of one that was not
// (the claim itself failed). The RetryBackoff wait happens while Herald's
// request is open, and Herald gives up on a request after 30 s: keep the
// processing of a wake plus RetryBackoff under that, or use HandleWake.
// A wake whose request ends first (Herald gave up, or the replica that
// sent it died) is still handled to its end: its callbacks decide.
func (c *Consumer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, maxWakeBody))
	if err != nil {
		http.Error(w, "unreadable body", http.StatusBadRequest)
		return
	}
	if err := VerifyWakeSignature(c.cfg.Secret, r.Header.Get(WakeSignatureHeader), body, c.cfg.Now(), 0); err != nil {
		http.Error(w, err.Error(), http.StatusUnauthorized)
		return
	}
	wake, err := ParseWake(body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	wake.Traceparent = TraceparentOf(r.Header)
	// The wake goes on when Herald's request does not: the replica that
	// sent it may have died (its callbacks reach another one), and a wake
	// left claimed would wait for the 45 s liveness timeout.
	if err := c.HandleWake(context.WithoutCancel(r.Context()), wake); err != nil && !errors.Is(err, ErrFenced) {
		c.cfg.Logger.Error("handling a wake", "consumer", wake.ConsumerID, "epoch", wake.Epoch, "err", err)
		http.Error(w, "processing failed", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	io.WriteString(w, "{}")
}

// HandleWake processes one wake: claim, read and ack every stream to its
// tail, done. It returns an error wrapping ErrFenced when Herald ended the
// wake (a newer wake, or the consumer was removed): stop then, another
// invocation owns the work.
//
// After any other failure once the wake is claimed (Process, a read or an
// ack failed), what succeeded is already acked; HandleWake waits
// RetryBackoff, sending keep-alive callbacks on long waits, then says done
// and returns the failure. The done leaves unacked events pending, so
// Herald starts a new wake at once and the failed batch is read again. If
// ctx ends during the wait, or the done fails, the wake is left LIVE and
// Herald's 45 s liveness timeout retries it instead. A failure of the
// claim itself is returned at once: the wake is still unclaimed, and
// Herald retries its delivery when the webhook does not answer 2xx.
func (c *Consumer) HandleWake(ctx context.Context, w *Wake) error {
	cb := NewCallbackClient(w, c.cfg.HTTPClient)
	// The first callback claims the wake and returns the current offsets.
	res, err := cb.Send(ctx, Callback{})
	if err != nil {
		return err
	}
	base, err := c.streamsURL(w)
	if err != nil {
		return c.endAfterFailure(ctx, cb, err)
	}
	var failed error
	for _, s := range res.Streams {
		err := c.drain(ctx, cb, base, s)
		if errors.Is(err, ErrFenced) {
			return err
		}
		// A failing stream does not hold back the others.
		failed = errors.Join(failed, err)
	}
	if failed != nil {
		return c.endAfterFailure(ctx, cb, failed)
	}
	_, err = cb.Send(ctx, Callback{Done: true})
	return err
}

// endAfterFailure ends a claimed wake that failed: it waits RetryBackoff
// while the consumer stays LIVE, so Herald does not wake it, then says
// done, which wakes it again at once because the failed events are still
// unacked. Waiting before the done rather than after is what bounds the
// retry rate of a batch that always fails. It returns cause, joined with
// whatever kept it from ending the wake.
func (c *Consumer) endAfterFailure(ctx context.Context, cb *CallbackClient, cause error) error {
	c.cfg.Logger.Warn("wake failed; ending it for a retry", "after", c.cfg.RetryBackoff, "err", cause)
	deadline := time.NewTimer(c.cfg.RetryBackoff)
	defer deadline.Stop()
	tick := time.NewTicker(c.keepAlive)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return errors.Join(cause, fmt.Errorf("client: the wake was not ended: %w", ctx.Err()))
		case <-tick.C:
			if _, err := cb.Send(ctx, Callback{}); err != nil {
				return errors.Join(cause, err)
			}
		case <-deadline.C:
			if _, err := cb.Send(ctx, Callback{Done: true}); err != nil {
				return errors.Join(cause, err)
			}
			return cause
		}
	}
}

// drain reads one stream from its acked offset to its tail, processing
// and acking each batch.
func (c *Consumer) drain(ctx context.Context, cb *CallbackClient, base string, s StreamOffset) error {
	offset := s.Offset
	for {
		b, upToDate, err := c.read(ctx, base, s.Path, offset)
		if errors.Is(err, errStreamMissing) {
			return nil // subscribed before the stream exists
		}
		if err != nil {
			return err
		}
		if len(b.Data) > 0 {
			if err := c.cfg.Process(ctx, b); err != nil {
				return fmt.Errorf("client: processing %s at %s: %w", s.Path, b.Offset, err)
			}
		}
		if b.NextOffset != offset {
			if _, err := cb.Send(ctx, Callback{Acks: []StreamOffset{{Path: s.Path, Offset: b.NextOffset}}}); err != nil {
				return err
			}
			offset = b.NextOffset
		}
		if upToDate {
			return nil
		}
	}
}

var errStreamMissing = errors.New("client: stream not found")

// maxBatch bounds the data of one catch-up read.
const maxBatch = 64 << 20

// read is one catch-up read (docs/protocol.md, Catch-up reads): GET
// {base}{path}?offset=...
func (c *Consumer) read(ctx context.Context, base, path, offset string) (Batch, bool, error) {
	u := base + escapePath(path) + "?offset=" + url.QueryEscape(offset)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return Batch{}, false, err
	}
	if c.cfg.Key != "" {
		req.Header.Set("Authorization", "Bearer "+c.cfg.Key)
	}
	resp, err := c.cfg.HTTPClient.Do(req)
	if err != nil {
		return Batch{}, false, fmt.Errorf("client: reading %s: %w", path, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusNotFound {
		return Batch{}, false, errStreamMissing
	}
	switch resp.StatusCode {
	case http.StatusOK:
	case http.StatusUnauthorized, http.StatusForbidden:
		// Access control is on: name the setting that fixes it.
		return Batch{}, false, fmt.Errorf("client: reading %s at %s: status %d: the read needs an API key with streams:read for this path (ConsumerConfig.Key)", path, offset, resp.StatusCode)
	default:
		return Batch{}, false, fmt.Errorf("client: reading %s at %s: status %d", path, offset, resp.StatusCode)
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxBatch))
	if err != nil {
		return Batch{}, false, fmt.Errorf("client: reading %s: %w", path, err)
	}
	next := resp.Header.Get("Stream-Next-Offset")
	if next == "" {
		return Batch{}, false, fmt.Errorf("client: reading %s: no Stream-Next-Offset", path)
	}
	upToDate := resp.Header.Get("Stream-Up-To-Date") == "true" || resp.Header.Get("Stream-Closed") == "true"
	return Batch{Stream: path, Data: data, ContentType: resp.Header.Get("Content-Type"), Offset: offset, NextOffset: next}, upToDate, nil
}

// streamsURL is where the streams are read: the configured base, or the
// scheme and host of the callback URL.
func (c *Consumer) streamsURL(w *Wake) (string, error) {
	if c.cfg.StreamsURL != "" {
		return strings.TrimSuffix(c.cfg.StreamsURL, "/"), nil
	}
	u, err := url.Parse(w.Callback)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return "", fmt.Errorf("%w: callback %q is not an absolute URL", ErrWakeInvalid, w.Callback)
	}
	return u.Scheme + "://" + u.Host, nil
}

// escapePath escapes each segment of a stream path for a URL.
func escapePath(p string) string {
	segs := strings.Split(p, "/")
	for i, s := range segs {
		segs[i] = url.PathEscape(s)
	}
	return strings.Join(segs, "/")
}
