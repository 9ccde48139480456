package wake

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/heraldstreams/herald/internal/telemetry"
	"github.com/heraldstreams/herald/protocol"
	"github.com/heraldstreams/herald/store"
	"github.com/heraldstreams/herald/subscription"
	"github.com/heraldstreams/herald/webhook"
)

// dsInput is one input of a subscription: the event the machine decides
// (nil for none), after any change of its links (membership, which the
// front door edits on sub), or an error that leaves it unchanged.
type dsInput = edit

// get reads subscription id's consumer row; ErrSubscriptionNotFound
// when there is none.
func (r *Reserved) get(ctx context.Context, id string) (*store.Consumer, error) {
	row, err := r.st.ConsumerGet(ctx, dsConsumerID(id))
	if errors.Is(err, store.ErrConsumerNotFound) || err == nil && row.Kind != store.ConsumerReserved {
		return nil, store.ErrSubscriptionNotFound
	}
	return row, err
}

// apply applies one input to subscription id's consumer row through the
// engine's one loop (Engine.apply) and runs the decision's effects
// (Engine.runEffects); ErrSubscriptionNotFound when there is no such
// subscription.
func (r *Reserved) apply(ctx context.Context, id string, fn dsInput) (applied, error) {
	a, err := r.e.apply(ctx, dsConsumerID(id), input{Edit: fn})
	if errors.Is(err, subscription.ErrConsumerGone) {
		return applied{}, store.ErrSubscriptionNotFound
	}
	if err != nil {
		return applied{}, err
	}
	r.e.runEffects(ctx, a)
	return a, nil
}

// tails reads the tail of every linked stream; a stream that does not
// exist (yet, or any more) is left out: it has no pending work.
func (r *Reserved) tails(ctx context.Context, links []subscription.StreamCursor) (subscription.Tails, error) {
	paths := make([]string, 0, len(links))
	for _, l := range links {
		paths = append(paths, l.Path)
	}
	return r.e.tails(ctx, paths, nil)
}

// deliver POSTs the current wake, signed with the active key, and
// applies the answer. The wake is a span, as the other front door's: a
// child of parent (what caused it) when that was traced, its POST
// carrying the span's traceparent.
func (r *Reserved) deliver(parent trace.SpanContext, a applied) {
	st := a.Consumer
	id := dsSubscriptionID(st.ID)
	ctx, span := r.e.tracer.Start(telemetry.Follow(r.life.WorkContext(), parent), "subscription.wake", trace.WithAttributes(
		attribute.String("herald.subscription_id", id), attribute.Int64("herald.epoch", st.Epoch),
		attribute.String("herald.wake_id", st.WakeID), attribute.Int("herald.attempt", st.Attempts)))
	defer span.End()
	now := r.now()
	token, err := r.keys.Issue(r.tokenSubject(id, st.Incarnation, st.Epoch), now)
	if err != nil {
		span.SetStatus(codes.Error, err.Error())
		r.log.Warn("issuing a wake token", "subscription", id, "err", err)
		return
	}
	body, err := json.Marshal(subscription.DSWebhookBody{
		SubscriptionID: id, WakeID: st.WakeID, Generation: st.Epoch,
		Streams:     r.wakeStreams(st.Streams, a.Tails),
		CallbackURL: r.base + r.root.Reserved() + "subscriptions/" + id + "/callback", CallbackToken: token,
	})
	if err != nil {
		r.log.Warn("encoding a wake", "subscription", id, "err", err)
		return
	}
	h := make(map[string][]string, 2)
	h["Content-Type"] = []string{"application/json"}
	h["Webhook-Signature"] = []string{subscription.DSSignatureHeader(r.activeKey(), body, now)}
	res, err := r.sender.Send(ctx, &webhook.Request{URL: a.Config.WebhookURL, Header: h, Body: body})
	delivered, done := err == nil && res.OK(), false
	switch {
	case err != nil:
		span.SetStatus(codes.Error, err.Error())
	case !delivered:
		span.SetStatus(codes.Error, "HTTP "+strconv.Itoa(res.StatusCode))
	}
	if delivered {
		var answer struct {
			Done bool `json:"done"`
		}
		done = json.Unmarshal(res.Body, &answer) == nil && answer.Done
	}
	if ctx.Err() != nil {
		return // stopping: the attempt's deadline retries it
	}
	_, err = r.apply(ctx, id, func(_ *subscription.Consumer, row *store.Consumer, tails subscription.Tails) (subscription.Event, error) {
		if row.Incarnation != st.Incarnation {
			return nil, nil
		}
		return subscription.WebhookResult{Epoch: st.Epoch, WakeID: st.WakeID, Attempt: st.Attempts, Delivered: delivered, Done: done, Tails: tails}, nil
	})
	if err != nil && !errors.Is(err, store.ErrSubscriptionNotFound) {
		r.log.Warn("recording a webhook's answer", "subscription", id, "err", err)
	}
}

// appendWake writes the current wake's event to the wake stream and
// records it written. A wake stream that does not exist is logged: the
// application creates it; the event is tried again later.
func (r *Reserved) appendWake(a applied) {
	ctx := r.life.WorkContext()
	st := a.Consumer
	id := dsSubscriptionID(st.ID)
	trigger := ""
	for _, l := range st.Streams {
		if subscription.CompareDSOffsets(a.Tails[l.Path], l.Acked) > 0 {
			trigger, _ = r.root.Rel(l.Path)
			break
		}
	}
	ev, err := json.Marshal(subscription.DSWakeEvent{Type: "wake", SubscriptionID: id, Stream: trigger, Generation: st.Epoch, WakeID: st.WakeID, TS: r.now().UnixMilli()})
	if err != nil {
		return
	}
	if err := r.appendJSON(ctx, r.root.Abs(a.Config.WakeStream), ev); err != nil {
		if ctx.Err() == nil {
			r.log.Warn("writing a wake event", "subscription", id, "wake_stream", a.Config.WakeStream, "err", err)
		}
		return
	}
	_, err = r.apply(ctx, id, func(_ *subscription.Consumer, row *store.Consumer, _ subscription.Tails) (subscription.Event, error) {
		if row.Incarnation != st.Incarnation {
			return nil, nil
		}
		return subscription.WakeEventWritten{Epoch: st.Epoch, WakeID: st.WakeID}, nil
	})
	if err != nil && !errors.Is(err, store.ErrSubscriptionNotFound) {
		r.log.Warn("recording a wake event", "subscription", id, "err", err)
	}
}

// appendJSON appends one message to a stream in its content type.
func (r *Reserved) appendJSON(ctx context.Context, path string, msg []byte) error {
	s, err := r.st.StreamGet(ctx, &store.StreamGetParams{Path: path, Now: r.now()})
	if err != nil {
		return err
	}
	p := &store.StreamAppendParams{Path: path, ContentType: s.ContentType, Data: msg, Now: r.now()}
	if protocol.IsJSON(s.ContentType) {
		if p.Data, p.Messages, err = protocol.FrameJSON(msg, false); err != nil {
			return err
		}
	} else {
		p.Data = append(msg, '\n')
	}
	_, err = r.st.StreamAppend(ctx, p)
	return err
}

// wakeStreams are the links as a wake or a claim shows them.
func (r *Reserved) wakeStreams(links []subscription.StreamCursor, tails subscription.Tails) []subscription.DSWakeStreamView {
	out := make([]subscription.DSWakeStreamView, 0, len(links))
	for _, l := range links {
		rel, _ := r.root.Rel(l.Path)
		tail, ok := tails[l.Path]
		if !ok {
			tail = subscription.OffsetStart
		}
		out = append(out, subscription.DSWakeStreamView{Path: rel, LinkType: l.LinkType(), AckedOffset: l.Acked, TailOffset: tail,
			HasPending: subscription.CompareDSOffsets(tail, l.Acked) > 0})
	}
	return out
}

// tokenSubject is what a wake's callback or claim token speaks for: the
// subscription's incarnation at one generation. The subject cannot be a
// consumer id of the other front door (those hold a ':').
func (r *Reserved) tokenSubject(id, incarnation string, gen int64) subscription.TokenSubject {
	return subscription.TokenSubject{ConsumerID: dsConsumerID(id), Incarnation: incarnation, Epoch: gen}
}

// streamChanged links a stream to the subscriptions whose pattern
// matches it (when spawn: a live change, not a reconciliation) and
// settles linked, the subscriptions linking it: the engine's workers
// call it with the reserved-API rows among the stream's consumers.
func (r *Reserved) streamChanged(ctx context.Context, path string, linked []string, spawn bool) error {
	if spawn {
		if err := r.fresh(ctx); err != nil {
			return err
		}
	}
	if spawn && r.count.Load() > 0 {
		if err := r.linkNew(ctx, path, linked); err != nil {
			return err
		}
	}
	for _, id := range linked {
		if err := r.settle(ctx, id); err != nil && !errors.Is(err, store.ErrSubscriptionNotFound) {
			return err
		}
	}
	return nil
}

// linkNew links a stream to the subscriptions, not among linked, whose
// pattern matches it: from its start, as it was first seen by a change
// after the subscription was made.
func (r *Reserved) linkNew(ctx context.Context, path string, linked []string) error {
	if _, under := r.root.Rel(path); !under || strings.HasPrefix(path, r.root.Reserved()) {
		return nil
	}
	r.patternsMu.RLock()
	var link []string
	for id, p := range r.patterns {
		if !slices.Contains(linked, id) && p.links(r.root, path) {
			link = append(link, id)
		}
	}
	r.patternsMu.RUnlock()
	for _, id := range link {
		if err := r.linkStreams(ctx, id, []string{path}, false, subscription.OffsetStart); err != nil && !errors.Is(err, store.ErrSubscriptionNotFound) {
			return err
		}
	}
	return nil
}

// settle issues a wake when the subscription is idle with pending work.
func (r *Reserved) settle(ctx context.Context, id string) error {
	_, err := r.apply(ctx, id, func(_ *subscription.Consumer, _ *store.Consumer, tails subscription.Tails) (subscription.Event, error) {
		return subscription.TailsChanged{Tails: tails}, nil
	})
	return err
}

// linkStreams links paths to subscription id, explicitly or by its
// pattern, each at its tail, or at start when given and the stream was
// created after the subscription; then settles it.
func (r *Reserved) linkStreams(ctx context.Context, id string, paths []string, explicit bool, start string) error {
	now := r.now()
	_, err := r.apply(ctx, id, func(sub *subscription.Consumer, row *store.Consumer, tails subscription.Tails) (subscription.Event, error) {
		for _, p := range paths {
			if l, ok := sub.Stream(p); ok {
				l.Explicit = l.Explicit || explicit
				l.Glob = l.Glob || !explicit
				continue
			}
			if len(sub.Streams) >= subscription.DSMaxStreams {
				return nil, store.ErrTooManyLinks
			}
			acked, err := r.linkOffset(ctx, p, row.CreatedAt, start, now)
			if err != nil {
				return nil, err
			}
			sub.Streams = append(sub.Streams, subscription.StreamCursor{Path: p, Glob: !explicit, Explicit: explicit, Acked: acked})
			if acked == subscription.OffsetStart {
				if _, ok := tails[p]; !ok {
					if t, err := r.tails(ctx, []subscription.StreamCursor{{Path: p}}); err == nil {
						for k, v := range t {
							tails[k] = v
						}
					}
				}
			}
		}
		return subscription.TailsChanged{Tails: tails}, nil
	})
	return err
}

// linkOffset is where a new link starts: the stream's tail, or start
// (when given) for a stream created after the subscription; OffsetStart
// for a stream that does not exist yet.
func (r *Reserved) linkOffset(ctx context.Context, path string, subCreated time.Time, start string, now time.Time) (string, error) {
	s, err := r.st.StreamGet(ctx, &store.StreamGetParams{Path: path, Now: now})
	switch {
	case errors.Is(err, store.ErrNotFound), errors.Is(err, store.ErrStreamGone):
		return subscription.OffsetStart, nil
	case err != nil:
		return "", err
	}
	if start != "" && !s.CreatedAt.Before(subCreated) {
		return start, nil
	}
	return protocol.FormatOffset(s.Tail), nil
}

// linkMatching links every live stream its pattern matches to a
// subscription the process did not know of: a stream created after the
// subscription starts at its beginning, an older one at its tail.
func (r *Reserved) linkMatching(ctx context.Context, id string) error {
	r.patternsMu.RLock()
	p, ok := r.patterns[id]
	r.patternsMu.RUnlock()
	if !ok {
		return nil
	}
	streams, err := r.st.StreamList(ctx, &store.StreamListParams{Prefix: p.p.Prefix(), Limit: subscription.DSMaxStreams, Now: r.now()})
	if err != nil {
		return err
	}
	var paths []string
	for _, s := range streams {
		if p.links(r.root, s.Path) {
			paths = append(paths, s.Path)
		}
	}
	if len(paths) == 0 {
		return nil
	}
	return r.linkStreams(ctx, id, paths, false, subscription.OffsetStart)
}

// tick fires subscription id's due deadlines: the engine's sweep
// claimed its timer.
func (r *Reserved) tick(ctx context.Context, id string) error {
	_, err := r.apply(ctx, id, func(_ *subscription.Consumer, _ *store.Consumer, tails subscription.Tails) (subscription.Event, error) {
		return subscription.Tick{Tails: tails}, nil
	})
	if errors.Is(err, store.ErrSubscriptionNotFound) {
		return nil
	}
	return err
}
