package wake

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/heraldstreams/herald/glob"
	"github.com/heraldstreams/herald/protocol"
	"github.com/heraldstreams/herald/store"
	"github.com/heraldstreams/herald/subscription"
)

// ReservedCreateParams are the inputs of Reserved.Create.
type ReservedCreateParams struct {
	Caller Caller
	ID     string
	Config subscription.DSConfig
}

// Create creates the subscription, or re-confirms it when the same owner
// asks for the same configuration (Created false). Errors:
// ErrSubscriptionExists, ErrPatternForbidden, ErrInvalidSubscriptionID,
// ErrWebhookURLRejected.
func (r *Reserved) Create(ctx context.Context, p *ReservedCreateParams) (view *subscription.DSSubscriptionView, created bool, err error) {
	if err := subscription.ValidateSubscriptionID(p.ID); err != nil {
		return nil, false, err
	}
	cfg := p.Config
	if err := r.checkReach(&p.Caller, &cfg); err != nil {
		return nil, false, err
	}
	if cfg.Type == subscription.DSTypeWebhook {
		if err := subscription.CheckDSWebhookURL(cfg.WebhookURL); err != nil {
			return nil, false, err
		}
		if err := r.sender.ValidateURL(ctx, cfg.WebhookURL); err != nil {
			return nil, false, fmt.Errorf("%w: %s", subscription.ErrWebhookURLRejected, err.Error())
		}
	}
	inc, err := subscription.NewIncarnation(r.rand)
	if err != nil {
		return nil, false, err
	}
	now := r.now()
	raw, err := json.Marshal(cfg)
	if err != nil {
		return nil, false, err
	}
	row := store.Consumer{ID: dsConsumerID(p.ID), Kind: store.ConsumerReserved, SubscriptionID: dsConsumerID(p.ID),
		Tenant: p.Caller.Tenant, Incarnation: inc, Config: string(raw), ConfigHash: cfg.Hash(), State: string(subscription.StateIdle)}
	for _, rel := range cfg.Streams {
		abs := r.root.Abs(rel)
		acked, err := r.linkOffset(ctx, abs, now, "", now)
		if err != nil {
			return nil, false, err
		}
		row.Streams = append(row.Streams, store.ConsumerStream{Path: abs, Explicit: true, Acked: acked})
	}
	params := &store.DSSubscriptionCreateParams{Consumer: row, Now: now}
	var pattern *glob.Pattern
	var dp dsPattern
	if cfg.Pattern != "" {
		if pattern, err = glob.Compile(r.root.Abs(cfg.Pattern)); err != nil {
			return nil, false, err
		}
		row.Pattern = pattern.String()
		params.Consumer.Pattern = row.Pattern
		// The eager backfill: every stream the pattern matches now is
		// linked at its tail, so creation replays nothing.
		params.Prefix = pattern.Prefix()
		dp = dsPattern{p: pattern, wake: r.wakePath(&cfg)}
		params.Match = func(s *store.Stream) (store.ConsumerStream, bool) {
			if !dp.links(r.root, s.Path) {
				return store.ConsumerStream{}, false
			}
			return store.ConsumerStream{Path: s.Path, Glob: true, Acked: protocol.FormatOffset(s.Tail)}, true
		}
	}
	res, err := r.st.DSSubscriptionCreate(ctx, params)
	switch {
	case errors.Is(err, store.ErrSubscriptionExists):
		return nil, false, fmt.Errorf("%w: %s", ErrSubscriptionExists, p.ID)
	case err != nil:
		return nil, false, err
	}
	if res.Created {
		r.members.observe(nil, &res.Consumer)
		r.patternsMu.Lock()
		if pattern != nil {
			dp.created = res.Consumer.CreatedAt
			r.patterns[p.ID] = dp
		}
		r.known[p.ID] = res.Consumer.CreatedAt
		r.count.Store(int64(len(r.known)))
		r.patternsMu.Unlock()
	}
	if res.Created {
		// An explicit stream linked at its start may have work already.
		if err := r.settle(ctx, p.ID); err != nil {
			return nil, false, err
		}
	}
	v, err := r.Get(ctx, p.Caller, p.ID)
	return v, res.Created, err
}

// checkReach refuses a configuration that names streams outside the
// caller's reach: its pattern, its explicit streams, its wake stream.
func (r *Reserved) checkReach(c *Caller, cfg *subscription.DSConfig) error {
	if cfg.Pattern != "" {
		p, err := glob.Compile(r.root.Abs(cfg.Pattern))
		if err != nil {
			return err
		}
		if !c.allowsPattern(p.String()) {
			return fmt.Errorf("%w: %s", ErrPatternForbidden, cfg.Pattern)
		}
	}
	paths := cfg.Streams
	if cfg.WakeStream != "" {
		paths = append(paths[:len(paths):len(paths)], cfg.WakeStream)
	}
	return r.checkPaths(c, paths)
}

// checkPaths refuses root-relative stream paths outside the caller's
// reach.
func (r *Reserved) checkPaths(c *Caller, rels []string) error {
	for _, rel := range rels {
		if c.AllowsPath != nil && !c.AllowsPath(r.root.Abs(rel)) {
			return fmt.Errorf("%w: %s", ErrPatternForbidden, rel)
		}
	}
	return nil
}

// visible returns the stored subscription id when the caller may see it
// (its owner's, within its stream paths), ErrSubscriptionNotFound when
// it may not or there is none.
func (r *Reserved) visible(ctx context.Context, c *Caller, id string) (*store.Consumer, error) {
	row, err := r.get(ctx, id)
	if errors.Is(err, store.ErrSubscriptionNotFound) {
		return nil, fmt.Errorf("%w: %s", ErrSubscriptionNotFound, id)
	}
	if err != nil {
		return nil, err
	}
	if c.Tenant != "" && row.Tenant != c.Tenant || row.Pattern != "" && !c.allowsPattern(row.Pattern) {
		return nil, fmt.Errorf("%w: %s", ErrSubscriptionNotFound, id)
	}
	if c.AllowsPath != nil {
		for _, l := range row.Streams {
			if l.Explicit && !c.AllowsPath(l.Path) {
				return nil, fmt.Errorf("%w: %s", ErrSubscriptionNotFound, id)
			}
		}
	}
	return row, nil
}

// Get returns the subscription as the protocol shows it.
func (r *Reserved) Get(ctx context.Context, c Caller, id string) (*subscription.DSSubscriptionView, error) {
	row, err := r.visible(ctx, &c, id)
	if err != nil {
		return nil, err
	}
	return r.view(row)
}

func (r *Reserved) view(row *store.Consumer) (*subscription.DSSubscriptionView, error) {
	cfg, err := configOf(row.Config)
	if err != nil {
		return nil, err
	}
	id := dsSubscriptionID(row.ID)
	v := &subscription.DSSubscriptionView{ID: id, SubscriptionID: id, Type: cfg.Type, LeaseTTLMs: cfg.LeaseTTLMs,
		CreatedAt: subscription.FormatDSTime(row.CreatedAt), Status: "active", Description: cfg.Description,
		Generation: row.Epoch, Streams: make([]subscription.DSLinkView, 0, len(row.Streams))}
	if !row.FailingSince.IsZero() {
		v.Status = "failed"
	}
	if cfg.Pattern != "" {
		v.Pattern = &cfg.Pattern
	}
	for _, m := range row.Streams {
		l := subscription.StreamCursor{Glob: m.Glob, Explicit: m.Explicit}
		rel, _ := r.root.Rel(m.Path)
		v.Streams = append(v.Streams, subscription.DSLinkView{Path: rel, LinkType: l.LinkType(), AckedOffset: m.Acked})
	}
	switch cfg.Type {
	case subscription.DSTypeWebhook:
		v.Webhook = &subscription.DSWebhookView{URL: cfg.WebhookURL, Signing: &subscription.DSSigningView{
			Alg: "ed25519", Kid: r.activeKey().Kid, JWKSURL: r.base + r.root.Reserved() + "jwks.json"}}
	case subscription.DSTypePullWake:
		v.WakeStream = &cfg.WakeStream
	}
	return v, nil
}

// Delete removes the subscription: callbacks, acks and releases of its
// wakes fail from then on (their tokens name its incarnation).
func (r *Reserved) Delete(ctx context.Context, c Caller, id string) error {
	row, err := r.visible(ctx, &c, id)
	if err != nil {
		return err
	}
	err = r.st.ConsumerDelete(ctx, &store.ConsumerDeleteParams{ID: dsConsumerID(id), Tenant: c.Tenant})
	if errors.Is(err, store.ErrConsumerNotFound) {
		return fmt.Errorf("%w: %s", ErrSubscriptionNotFound, id)
	}
	if err == nil {
		r.members.observe(row, nil)
		r.patternsMu.Lock()
		delete(r.patterns, id)
		r.patternsMu.Unlock()
	}
	return err
}

// AddStreams links root-relative streams explicitly, each at its tail;
// a stream already linked explicitly is left as it is.
func (r *Reserved) AddStreams(ctx context.Context, c Caller, id string, rels []string) error {
	if _, err := r.visible(ctx, &c, id); err != nil {
		return err
	}
	if err := r.checkPaths(&c, rels); err != nil {
		return err
	}
	paths := make([]string, 0, len(rels))
	for _, rel := range rels {
		paths = append(paths, r.root.Abs(rel))
	}
	return r.notFound(id, r.linkStreams(ctx, id, paths, true, ""))
}

// RemoveStream removes a root-relative stream's explicit link; a stream
// the pattern still matches stays linked by it, with its cursor.
func (r *Reserved) RemoveStream(ctx context.Context, c Caller, id, rel string) error {
	row, err := r.visible(ctx, &c, id)
	if err != nil {
		return err
	}
	var pattern *glob.Pattern
	if row.Pattern != "" {
		if pattern, err = glob.Compile(row.Pattern); err != nil {
			return err
		}
	}
	path := r.root.Abs(rel)
	_, err = r.apply(ctx, id, func(sub *subscription.Consumer, _ *store.Consumer, _ subscription.Tails) (subscription.Event, error) {
		for i := range sub.Streams {
			l := &sub.Streams[i]
			if l.Path != path || !l.Explicit {
				continue
			}
			if l.Glob || pattern != nil && pattern.Match(path) {
				l.Explicit, l.Glob = false, true
			} else {
				sub.Streams = append(sub.Streams[:i], sub.Streams[i+1:]...)
			}
			break
		}
		return nil, nil
	})
	return r.notFound(id, err)
}

func (r *Reserved) notFound(id string, err error) error {
	if errors.Is(err, store.ErrSubscriptionNotFound) {
		return fmt.Errorf("%w: %s", ErrSubscriptionNotFound, id)
	}
	return err
}

// Claim gives a pull-wake subscription's lease to worker and returns
// the wake with its token. Errors: *subscription.ClaimedError (409
// ALREADY_CLAIMED), subscription.ErrNothingToClaim.
func (r *Reserved) Claim(ctx context.Context, c Caller, id, worker string) (*subscription.DSClaimResponse, error) {
	if _, err := r.visible(ctx, &c, id); err != nil {
		return nil, err
	}
	a, err := r.apply(ctx, id, func(_ *subscription.Consumer, _ *store.Consumer, tails subscription.Tails) (subscription.Event, error) {
		return subscription.ReservedClaim{Worker: worker, Tails: tails}, nil
	})
	if err != nil {
		return nil, r.notFound(id, err)
	}
	st := a.Consumer
	token, err := r.keys.Issue(r.tokenSubject(id, st.Incarnation, st.Epoch), r.now())
	if err != nil {
		return nil, err
	}
	return &subscription.DSClaimResponse{WakeID: st.WakeID, Generation: st.Epoch, Token: token,
		Streams: r.wakeStreams(st.Streams, a.Tails), LeaseTTLMs: a.Config.LeaseTTLMs}, nil
}

// Ack applies a webhook callback or a pull-wake ack, with the wake's
// token. Errors: subscription.ErrTokenInvalid (a token of another
// subscription, incarnation or generation), subscription.ErrFenced,
// subscription.ErrInvalidOffset, ErrSubscriptionNotFound.
func (r *Reserved) Ack(ctx context.Context, id, token string, req *subscription.DSAckRequest) (*subscription.DSAckResponse, error) {
	acks := make([]subscription.DSAck, 0, len(req.Acks))
	for _, a := range req.Acks {
		rel, err := subscription.CleanDSPath(a.Stream)
		if err != nil {
			return nil, err
		}
		acks = append(acks, subscription.DSAck{Path: r.root.Abs(rel), Offset: a.Offset})
	}
	a, err := r.apply(ctx, id, func(sub *subscription.Consumer, row *store.Consumer, tails subscription.Tails) (subscription.Event, error) {
		if err := r.checkToken(token, row, sub, req.Generation); err != nil {
			return nil, err
		}
		return subscription.ReservedAck{Epoch: req.Generation, WakeID: req.WakeID, Acks: acks, Done: req.Done, Tails: tails}, nil
	})
	if err != nil {
		return nil, r.notFound(id, err)
	}
	// A done that leaves a wake in flight issued it for the work still
	// pending: next_wake.
	return &subscription.DSAckResponse{OK: true, NextWake: req.Done && a.Consumer.State != subscription.StateIdle}, nil
}

// Release ends a wake without acking, with the wake's token.
func (r *Reserved) Release(ctx context.Context, id, token string, req *subscription.DSAckRequest) error {
	_, err := r.apply(ctx, id, func(sub *subscription.Consumer, row *store.Consumer, tails subscription.Tails) (subscription.Event, error) {
		if err := r.checkToken(token, row, sub, req.Generation); err != nil {
			return nil, err
		}
		return subscription.ReservedRelease{Epoch: req.Generation, WakeID: req.WakeID, Tails: tails}, nil
	})
	return r.notFound(id, err)
}

// checkToken verifies a callback or claim token: signed by a callback
// token key, for this subscription's incarnation; a token of another
// generation than the request's or the current one is fenced.
func (r *Reserved) checkToken(token string, row *store.Consumer, sub *subscription.Consumer, gen int64) error {
	claims, err := r.keys.Verify(token, row.ID, r.now())
	if err != nil {
		return err
	}
	if claims.Incarnation != row.Incarnation {
		return fmt.Errorf("%w: the token was issued for a deleted subscription", subscription.ErrTokenInvalid)
	}
	if claims.Epoch != gen || claims.Epoch != sub.Epoch {
		return fmt.Errorf("%w: the token is for generation %d", subscription.ErrFenced, claims.Epoch)
	}
	return nil
}
