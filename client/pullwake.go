package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
)

// Errors of a pull-wake worker's claim (docs/reserved-subscriptions.md).
var (
	// ErrAlreadyClaimed: another worker holds the lease; ClaimedError
	// names it.
	ErrAlreadyClaimed = errors.New("client: another worker holds the lease")
	// ErrNothingToClaim: the subscription has no pending work.
	ErrNothingToClaim = errors.New("client: nothing to claim")
)

// ClaimedError is a claim refused while another worker holds the lease.
type ClaimedError struct {
	Holder     string
	Generation int64
}

func (e *ClaimedError) Error() string {
	return fmt.Sprintf("client: worker %q holds the lease of generation %d", e.Holder, e.Generation)
}

// Is makes errors.Is(err, ErrAlreadyClaimed) true.
func (e *ClaimedError) Is(target error) bool { return target == ErrAlreadyClaimed }

// DSStream is a linked stream in a claim: its path relative to the stream
// root, its acked offset and its tail.
type DSStream struct {
	Path        string `json:"path"`
	LinkType    string `json:"link_type"`
	AckedOffset string `json:"acked_offset"`
	TailOffset  string `json:"tail_offset"`
	HasPending  bool   `json:"has_pending"`
}

// Claim is a pull-wake worker's lease on one wake.
type Claim struct {
	WakeID     string     `json:"wake_id"`
	Generation int64      `json:"generation"`
	Token      string     `json:"token"`
	Streams    []DSStream `json:"streams"`
	LeaseTTLMs int64      `json:"lease_ttl_ms"`
}

// Ack is one stream's processed position: the offset of the last data
// processed, inclusive (the Stream-Next-Offset of the read that ended
// there).
type Ack struct {
	Stream string `json:"stream"`
	Offset string `json:"offset"`
}

// PullWorker claims, renews, acks and releases the wakes of one
// pull-wake subscription, and reads its streams.
type PullWorker struct {
	// RootURL is the stream root's URL, e.g. https://herald.example/v1/stream.
	RootURL string
	// Subscription is the subscription's id; Worker names this worker in
	// claims (current_holder).
	Subscription, Worker string
	// Key is the credential of the claims and the reads (an API key, or
	// "" without access control); acks and releases carry the claim's
	// token.
	Key string
	// HTTPClient is used for every request; http.DefaultClient when nil.
	HTTPClient *http.Client
}

func (w *PullWorker) subURL(op string) string {
	return strings.TrimSuffix(w.RootURL, "/") + "/__ds/subscriptions/" + url.PathEscape(w.Subscription) + op
}

// do POSTs a JSON body with a bearer credential and decodes a 2xx answer
// into out (when not nil).
func (w *PullWorker) do(ctx context.Context, target, bearer string, in, out any) error {
	body, err := json.Marshal(in)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, target, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	if bearer != "" {
		req.Header.Set("Authorization", "Bearer "+bearer)
	}
	hc := w.HTTPClient
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode/100 == 2 {
		if out == nil || resp.StatusCode == http.StatusNoContent {
			return nil
		}
		return json.Unmarshal(raw, out)
	}
	var e struct {
		Error struct {
			Code          string `json:"code"`
			Message       string `json:"message"`
			CurrentHolder string `json:"current_holder"`
			Generation    int64  `json:"generation"`
		} `json:"error"`
	}
	_ = json.Unmarshal(raw, &e) // a body that is not Herald's error leaves the code empty
	switch e.Error.Code {
	case "ALREADY_CLAIMED":
		return &ClaimedError{Holder: e.Error.CurrentHolder, Generation: e.Error.Generation}
	case "NOTHING_TO_CLAIM":
		return ErrNothingToClaim
	case "FENCED":
		return fmt.Errorf("%w: %s", ErrFenced, e.Error.Message)
	}
	return fmt.Errorf("client: %s %s: %d %s %s", http.MethodPost, target, resp.StatusCode, e.Error.Code, e.Error.Message)
}

// Claim takes the subscription's lease. Errors: *ClaimedError
// (ErrAlreadyClaimed), ErrNothingToClaim.
func (w *PullWorker) Claim(ctx context.Context) (*Claim, error) {
	var c Claim
	if err := w.do(ctx, w.subURL("/claim"), w.Key, map[string]string{"worker": w.Worker}, &c); err != nil {
		return nil, err
	}
	return &c, nil
}

type dsAckBody struct {
	WakeID     string `json:"wake_id"`
	Generation int64  `json:"generation"`
	Acks       []Ack  `json:"acks,omitempty"`
	Done       bool   `json:"done,omitempty"`
}

// Renew extends the lease (a heartbeat), acking acks if any. ErrFenced
// (the callback API's: the wake is over, stop) when the lease expired or
// another wake took its place; its acks were not applied.
func (w *PullWorker) Renew(ctx context.Context, c *Claim, acks ...Ack) error {
	return w.do(ctx, w.subURL("/ack"), c.Token, dsAckBody{WakeID: c.WakeID, Generation: c.Generation, Acks: acks}, nil)
}

// Done acks and ends the wake, and reports whether a new wake followed
// (work arrived meanwhile: claim again).
func (w *PullWorker) Done(ctx context.Context, c *Claim, acks ...Ack) (nextWake bool, err error) {
	var r struct {
		NextWake bool `json:"next_wake"`
	}
	err = w.do(ctx, w.subURL("/ack"), c.Token, dsAckBody{WakeID: c.WakeID, Generation: c.Generation, Acks: acks, Done: true}, &r)
	return r.NextWake, err
}

// Release ends the wake without acking: pending work is woken again.
func (w *PullWorker) Release(ctx context.Context, c *Claim) error {
	return w.do(ctx, w.subURL("/release"), c.Token, dsAckBody{WakeID: c.WakeID, Generation: c.Generation}, nil)
}

// Read reads one stream of a claim from offset (its acked offset first):
// the data, the offset to ack once it is processed, and whether that is
// the stream's tail.
func (w *PullWorker) Read(ctx context.Context, path, offset string) (data []byte, next string, upToDate bool, err error) {
	target := strings.TrimSuffix(w.RootURL, "/") + "/" + escapePath(path) + "?offset=" + url.QueryEscape(offset)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
	if err != nil {
		return nil, "", false, err
	}
	if w.Key != "" {
		req.Header.Set("Authorization", "Bearer "+w.Key)
	}
	hc := w.HTTPClient
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, "", false, err
	}
	defer resp.Body.Close()
	data, err = io.ReadAll(resp.Body)
	if err != nil {
		return nil, "", false, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, "", false, fmt.Errorf("client: reading %s: %s", path, resp.Status)
	}
	return data, resp.Header.Get("Stream-Next-Offset"), resp.Header.Get("Stream-Up-To-Date") == "true", nil
}

// Work runs one wake: it claims, reads every pending stream from its
// acked offset to its tail, hands each read to handle, renews the lease
// after each read (acking it), and ends the wake with Done. A handler
// error releases the wake (the work is woken again) and is returned.
// It reports whether another wake followed; ErrNothingToClaim and
// ErrAlreadyClaimed say there was none for this worker.
func (w *PullWorker) Work(ctx context.Context, handle func(ctx context.Context, stream string, data []byte) error) (nextWake bool, err error) {
	c, err := w.Claim(ctx)
	if err != nil {
		return false, err
	}
	var acks []Ack
	for _, s := range c.Streams {
		offset := s.AckedOffset
		for s.HasPending {
			data, next, upToDate, err := w.Read(ctx, s.Path, offset)
			if err == nil {
				err = handle(ctx, s.Path, data)
			}
			if err != nil {
				return false, errors.Join(err, w.Release(context.WithoutCancel(ctx), c))
			}
			if err := w.Renew(ctx, c, Ack{Stream: s.Path, Offset: next}); err != nil {
				return false, err
			}
			acks = append(acks, Ack{Stream: s.Path, Offset: next})
			offset = next
			if upToDate || next == s.TailOffset {
				break
			}
		}
	}
	return w.Done(ctx, c, acks...)
}
