package wake

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/heraldstreams/herald/glob"
	"github.com/heraldstreams/herald/protocol"
	"github.com/heraldstreams/herald/store"
	"github.com/heraldstreams/herald/subscription"
)

// AllPattern is the pattern whose list request lists every subscription
// (GET /**?subscriptions) and whose get and delete requests
// name a subscription by id alone.
const AllPattern = "/**"

// CreateSubscriptionParams are the inputs of Engine.CreateSubscription.
type CreateSubscriptionParams struct {
	// Caller creates it and owns it: its tenant is the subscription's
	// owner, and the pattern must lie within its stream paths.
	Caller Caller
	ID     string
	// Pattern is the glob as it appears in the request path.
	Pattern     string
	Webhook     string
	Description string
}

// CreateSubscriptionResult is the output of Engine.CreateSubscription.
type CreateSubscriptionResult struct {
	// Subscription carries WebhookSecret only when Created.
	Subscription subscription.Subscription
	// Created is false when an identical subscription existed.
	Created bool
}

// CreateSubscription creates a subscription, or confirms an identical
// one. The streams that already match get IDLE consumers that wake only on
// new events (docs/subscriptions.md, Consumers). Errors, in this order:
// ErrInvalidSubscriptionID, glob.ErrInvalidPattern, ErrPatternForbidden,
// ErrInvalidRequest (no webhook), ErrSubscriptionExists (whatever the
// webhook URL, and whenever another owner holds the id: the caller learns
// nothing more of that subscription), webhook.ErrURLRefused (the SSRF
// policy refused the webhook).
func (e *Engine) CreateSubscription(ctx context.Context, p *CreateSubscriptionParams) (*CreateSubscriptionResult, error) {
	if err := subscription.ValidateSubscriptionID(p.ID); err != nil {
		return nil, err
	}
	pat, err := glob.Compile(p.Pattern)
	if err != nil {
		return nil, err
	}
	if !p.Caller.allowsPattern(pat.String()) {
		return nil, fmt.Errorf("%w: %s", ErrPatternForbidden, pat.String())
	}
	if p.Webhook == "" {
		return nil, fmt.Errorf("%w: webhook is required", subscription.ErrInvalidRequest)
	}
	// A taken id is decided before the webhook URL is checked: a
	// conflicting re-create is 409 whatever its URL. The same id of
	// another owner is 409 whatever the request, so that its answer says
	// nothing of that subscription. The store decides again below, for a
	// create that races this one.
	want := store.Subscription{ID: p.ID, Tenant: p.Caller.Tenant, Pattern: pat.String(), Webhook: p.Webhook, Description: p.Description}
	switch old, err := e.st.SubscriptionGet(ctx, p.ID); {
	case err == nil && store.SameSubscription(old, &want):
		return &CreateSubscriptionResult{Subscription: wireSubscription(old)}, nil
	case err == nil:
		return nil, fmt.Errorf("%w: %q", ErrSubscriptionExists, p.ID)
	case !errors.Is(err, store.ErrSubscriptionNotFound):
		return nil, err
	}
	if err := e.sender.ValidateURL(ctx, p.Webhook); err != nil {
		return nil, err
	}
	secret, err := subscription.NewWebhookSecret(e.random())
	if err != nil {
		return nil, err
	}
	now := e.now()
	// Streams that change while the subscription is being stored are
	// matched by workers that do not know it yet: they are recorded and
	// matched again once it is cached. Every other stream is in the
	// store's transaction, which spawns its consumer.
	c := e.beginCreation()
	res, err := e.st.SubscriptionCreate(ctx, &store.SubscriptionCreateParams{
		Subscription: store.Subscription{
			ID:          p.ID,
			Tenant:      p.Caller.Tenant,
			Pattern:     pat.String(),
			Webhook:     p.Webhook,
			Secret:      secret,
			Description: p.Description,
			CreatedAt:   now,
		},
		Prefix: pat.Prefix(),
		Spawn:  existingConsumer(p.ID, pat, e.random()),
		Now:    now,
	})
	created := err == nil && res.Created
	if created {
		e.members.clear() // the store added consumers for the existing streams
	}
	e.endCreation(c, created, res, pat)
	if errors.Is(err, store.ErrSubscriptionExists) {
		return nil, fmt.Errorf("%w: %q", ErrSubscriptionExists, p.ID)
	}
	if err != nil {
		return nil, err
	}
	out := &CreateSubscriptionResult{Subscription: wireSubscription(&res.Subscription), Created: res.Created}
	if created {
		out.Subscription.WebhookSecret = res.Subscription.Secret
	}
	return out, nil
}

// existingConsumer returns the store's Spawn for a new subscription: a
// stream that already exists and matches gets an IDLE consumer acked to
// its tail, which wakes only for new events (docs/subscriptions.md,
// Consumers). r supplies the consumers' incarnation ids.
func existingConsumer(id string, pat *glob.Pattern, r io.Reader) func(*store.Stream) (store.Consumer, bool) {
	return func(s *store.Stream) (store.Consumer, bool) {
		if !pat.Match(s.Path) {
			return store.Consumer{}, false
		}
		inc, err := subscription.NewIncarnation(r)
		if err != nil {
			// Spawn cannot fail; a consumer without an incarnation
			// would accept the tokens of a deleted one, so the
			// stream gets none now and a consumer when it changes.
			return store.Consumer{}, false
		}
		c, err := subscription.NewConsumer(subscription.NewConsumerParams{SubscriptionID: id, PrimaryStream: s.Path, Incarnation: inc, StartOffset: protocol.FormatOffset(s.Tail)})
		if err != nil {
			return store.Consumer{}, false // a path no consumer can have
		}
		return toStored(&c), true
	}
}

// GetSubscription returns a subscription without its secret.
// ErrSubscriptionNotFound when absent or not the caller's to see.
func (e *Engine) GetSubscription(ctx context.Context, c Caller, id string) (*subscription.Subscription, error) {
	s, err := e.visibleSubscription(ctx, &c, id)
	if err != nil {
		return nil, err
	}
	w := wireSubscription(s)
	return &w, nil
}

// visibleSubscription reads subscription id when the caller may see it;
// ErrSubscriptionNotFound, with the same message, when it is absent and
// when it is not the caller's to see.
func (e *Engine) visibleSubscription(ctx context.Context, c *Caller, id string) (*store.Subscription, error) {
	s, err := e.st.SubscriptionGet(ctx, id)
	if errors.Is(err, store.ErrSubscriptionNotFound) || (err == nil && !c.sees(s)) {
		return nil, fmt.Errorf("%w: %q", ErrSubscriptionNotFound, id)
	}
	if err != nil {
		return nil, err
	}
	return s, nil
}

// ListSubscriptions returns the subscriptions of a pattern that the
// caller may see, ordered by id, without secrets; AllPattern lists them
// all. Errors: glob.ErrInvalidPattern.
func (e *Engine) ListSubscriptions(ctx context.Context, c Caller, pattern string) ([]subscription.Subscription, error) {
	pat, err := glob.Compile(pattern)
	if err != nil {
		return nil, err
	}
	params := &store.SubscriptionListParams{Pattern: pat.String(), Tenant: c.Tenant}
	if pat.String() == AllPattern {
		params.Pattern = ""
	}
	list, err := e.st.SubscriptionList(ctx, params)
	if err != nil {
		return nil, err
	}
	out := make([]subscription.Subscription, 0, len(list))
	for i := range list {
		if c.sees(&list[i]) {
			out = append(out, wireSubscription(&list[i]))
		}
	}
	return out, nil
}

// DeleteSubscription deletes a subscription and, at once, all its
// consumers: their later callbacks get ErrConsumerGone (S7). The pattern
// must be the subscription's, or AllPattern. ErrSubscriptionNotFound when
// absent or not the caller's to see.
func (e *Engine) DeleteSubscription(ctx context.Context, c Caller, pattern, id string) error {
	pat, err := glob.Compile(pattern)
	if err != nil {
		return err
	}
	s, err := e.st.SubscriptionGet(ctx, id)
	if errors.Is(err, store.ErrSubscriptionNotFound) || (err == nil && (!c.sees(s) || (pat.String() != AllPattern && pat.String() != s.Pattern))) {
		return fmt.Errorf("%w: %q under %s", ErrSubscriptionNotFound, id, pat.String())
	}
	if err != nil {
		return err
	}
	// Limited to the caller's tenant in the store's transaction too: the
	// id may have changed hands since it was read.
	removed, err := e.st.SubscriptionDelete(ctx, &store.SubscriptionDeleteParams{ID: id, Tenant: c.Tenant})
	if errors.Is(err, store.ErrSubscriptionNotFound) {
		return fmt.Errorf("%w: %q", ErrSubscriptionNotFound, id)
	}
	if err != nil {
		return err
	}
	e.metrics.removed.WithLabelValues(string(subscription.RemovedSubscriptionDeleted)).Add(float64(removed))
	e.log.Info("subscription deleted", "subscription", id, "consumers_removed", removed)
	e.uncacheSubscription(id)
	e.members.clear() // the store removed the subscription's consumers
	return nil
}

func wireSubscription(s *store.Subscription) subscription.Subscription {
	return subscription.Subscription{SubscriptionID: s.ID, Pattern: s.Pattern, Webhook: s.Webhook, Description: s.Description}
}

// CallbackParams are the inputs of Engine.Callback.
type CallbackParams struct {
	// ConsumerID is the raw, still percent-encoded segment of the callback
	// URL.
	ConsumerID string
	// Token is the bearer token, "" when the request had none.
	Token string
	// Body is the raw request body.
	Body []byte
}

// CallbackError is a failed callback: Err is one of the callback errors
// (CallbackErrorCode tells it), Token the token the error response
// carries ("" for none): a renewed one for ErrTokenExpired, the next
// callback's otherwise.
type CallbackError struct {
	Err   error
	Token string
}

// Error returns Err's message.
func (e *CallbackError) Error() string { return e.Err.Error() }

// Unwrap returns Err.
func (e *CallbackError) Unwrap() error { return e.Err }

// Callback processes one callback request (docs/subscriptions.md, The
// callback API): token, body, then the state machine, atomically and
// serially per consumer. A failed request changes nothing. Callback errors
// come as a *CallbackError; any other error is a server fault.
func (e *Engine) Callback(ctx context.Context, p *CallbackParams) (*subscription.CallbackResponse, error) {
	resp, err := e.callback(ctx, p)
	code := "OK"
	if err != nil {
		code = "INTERNAL"
		if c, ok := subscription.CallbackErrorCode(err); ok {
			code = c
		}
	}
	e.metrics.callbacks.WithLabelValues(code).Inc()
	return resp, err
}

func (e *Engine) callback(ctx context.Context, p *CallbackParams) (*subscription.CallbackResponse, error) {
	id := p.ConsumerID
	sub, path, idErr := subscription.ParseConsumerID(p.ConsumerID)
	if idErr == nil {
		id = subscription.ConsumerID(sub, path) // the canonical encoding tokens name
	}
	now := e.now()
	var claims subscription.TokenClaims
	tokErr := fmt.Errorf("%w: an Authorization: Bearer token is required", subscription.ErrTokenInvalid)
	if p.Token != "" {
		claims, tokErr = e.keys.Verify(p.Token, id, now)
	}
	// CheckCallback's first two rules need nothing else: a bad token, then
	// an id no consumer can have (a safeguard: no token names one).
	if tokErr != nil && !errors.Is(tokErr, subscription.ErrTokenExpired) {
		return nil, &CallbackError{Err: subscription.CheckCallback(&subscription.CallbackCheck{TokenErr: tokErr})}
	}
	if idErr != nil {
		return nil, &CallbackError{Err: fmt.Errorf("%w: %v", subscription.ErrConsumerGone, idErr)}
	}
	req, reqErr := subscription.ParseCallbackRequest(p.Body)
	var reach func(string) bool
	if len(req.Subscribe) > 0 {
		var err error
		if reach, err = e.reach(ctx, sub); err != nil {
			return nil, err
		}
	}
	extra := append([]string(nil), req.Subscribe...)
	for _, a := range req.Acks {
		extra = append(extra, a.Path)
	}
	a, err := e.apply(ctx, id, input{Event: subscription.Callback{Request: req, RequestErr: reqErr, Token: claims, TokenErr: tokErr, Reach: reach}, Extra: extra})
	if err == nil {
		if rm, _ := removal(a.Effects); rm.Reason == subscription.RemovedPrimaryDeleted {
			err = fmt.Errorf("%w: its primary stream %s was deleted", subscription.ErrConsumerGone, a.Consumer.PrimaryStream)
		}
	}
	if err != nil {
		if _, ok := subscription.CallbackErrorCode(err); !ok {
			return nil, err
		}
		ce := &CallbackError{Err: err}
		if !errors.Is(err, subscription.ErrConsumerGone) && !errors.Is(err, subscription.ErrTokenInvalid) {
			// The token for the next callback: a renewed one for
			// TOKEN_EXPIRED, always for the token's own epoch (never a
			// newer one: that would un-fence a zombie).
			if ce.Token, err = e.keys.Renew(p.Token, claims, now); err != nil {
				return nil, err
			}
		}
		return nil, ce
	}
	e.runEffects(ctx, a)
	next, err := e.keys.Renew(p.Token, claims, now)
	if err != nil {
		return nil, err
	}
	resp := subscription.NewCallbackResponse(&a.Consumer, next)
	return &resp, nil
}

// MaxConsumerPage is the most consumers one ListConsumers call returns.
const MaxConsumerPage = 1000

// GetConsumer returns one consumer by its id (as in wakes and callback
// URLs: "{subscription_id}:{url-encoded stream path}").
// ErrConsumerNotFound when absent, or not the caller's to see: its
// subscription is not, or it names a stream outside the caller's paths.
func (e *Engine) GetConsumer(ctx context.Context, c Caller, id string) (*subscription.ConsumerInfo, error) {
	notFound := fmt.Errorf("%w: %q", ErrConsumerNotFound, id)
	// The subscription is checked before the consumer is read: a
	// subscription's consumers are removed with it, so whatever is read
	// after is of the subscription the check saw, never of an earlier
	// owner's subscription of the same id.
	sub, _, err := subscription.ParseConsumerID(id)
	if err != nil {
		return nil, notFound
	}
	if _, err := e.visibleSubscription(ctx, &c, sub); errors.Is(err, ErrSubscriptionNotFound) {
		return nil, notFound
	} else if err != nil {
		return nil, err
	}
	sc, err := e.st.ConsumerGet(ctx, id)
	if errors.Is(err, store.ErrConsumerNotFound) || (err == nil && (sc.SubscriptionID != sub || !c.seesStreams(sc))) {
		return nil, notFound
	}
	if err != nil {
		return nil, err
	}
	info := consumerInfo(sc, e.now())
	return &info, nil
}

// ListConsumers returns a page of a subscription's consumers, ordered by
// id: those after the cursor ("" for the first page), at most limit
// (MaxConsumerPage when limit is 0 or above it). The list's NextCursor
// continues it. ErrSubscriptionNotFound when the subscription is absent
// or not the caller's to see; a consumer that names a stream outside the
// caller's paths is left out.
func (e *Engine) ListConsumers(ctx context.Context, c Caller, subscriptionID, cursor string, limit int) (*subscription.ConsumerList, error) {
	if _, err := e.visibleSubscription(ctx, &c, subscriptionID); err != nil {
		return nil, err
	}
	if limit <= 0 || limit > MaxConsumerPage {
		limit = MaxConsumerPage
	}
	// One more than the page tells whether another page follows.
	list, err := e.st.ConsumerListBySubscription(ctx, &store.ConsumerListBySubscriptionParams{
		SubscriptionID: subscriptionID, After: cursor, Limit: limit + 1, Tenant: c.Tenant,
	})
	if err != nil {
		return nil, err
	}
	out := &subscription.ConsumerList{Data: make([]subscription.ConsumerInfo, 0, min(len(list), limit))}
	now := e.now()
	for i := range list {
		if i == limit {
			next := list[i-1].ID
			out.NextCursor = &next
			break
		}
		if c.seesStreams(&list[i]) {
			out.Data = append(out.Data, consumerInfo(&list[i], now))
		}
	}
	return out, nil
}

// consumerInfo is what the consumer API shows of a stored consumer at
// now.
func consumerInfo(sc *store.Consumer, now time.Time) subscription.ConsumerInfo {
	c := fromStored(sc)
	info := subscription.ConsumerInfo{
		ConsumerID:     c.ID,
		SubscriptionID: c.SubscriptionID,
		PrimaryStream:  c.PrimaryStream,
		State:          c.State,
		Epoch:          c.Epoch,
		WakeID:         c.WakeID,
		Attempts:       c.Attempts,
		Streams:        make([]subscription.ConsumerStreamInfo, 0, len(c.Streams)),
		NextDeadline:   timeOrNil(c.NextDeadline()),
		FailingSince:   timeOrNil(c.FailingSince),
	}
	if reason, stuck := c.Stuck(now); stuck {
		info.Stuck, info.StuckReason = true, &reason
	}
	for _, s := range c.Streams {
		info.Streams = append(info.Streams, subscription.ConsumerStreamInfo{Path: s.Path, Acked: s.Acked, Notified: s.Notified})
	}
	return info
}

// timeOrNil returns nil for the zero time ("not armed"), else t in UTC.
func timeOrNil(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	u := t.UTC()
	return &u
}

// SweepNow makes the engine claim the due timers at once: timer claims
// were ended elsewhere (a dead replica's, package replica), so timers
// may be due that this engine does not know of.
func (e *Engine) SweepNow() { e.timers.wake() }
