package dispatch

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/heraldstreams/herald/delivery"
	"github.com/heraldstreams/herald/internal/telemetry"
	"github.com/heraldstreams/herald/store"
	"github.com/heraldstreams/herald/webhook"
)

// runner sends one endpoint's deliveries: it claims as many as the
// endpoint's max in-flight (at most its share of the global bound) and
// the global bound allow, and the store grants what the endpoint's
// max_in_flight and rate limit allow across every replica,
// sends each in its own goroutine, and records the outcomes of finished
// sends in one transaction together with the breaker state. The matcher
// may also hand it fresh deliveries it inserted leased (reserve, then
// handoff), so a fresh event is sent without a claim. The runner alone
// decides the endpoint's breaker state in this process; a concurrent
// change (a PATCH that re-enables, another replica) is caught by the
// store's compare-and-set and recomputed from the fresh state.
type runner struct {
	e       *Engine
	id      string
	ctx     context.Context // cancelled when the endpoint is removed or the engine stops
	cancel  context.CancelFunc
	kick    chan struct{}
	results chan sendResult

	mu sync.Mutex
	// inflight counts sends running and slots reserved for a claim or a
	// handoff; each holds one global slot.
	inflight int // guarded by mu
	// backlog is set when the store may hold due deliveries that no claim
	// has taken yet (a wake sets it, a claim that found fewer than it
	// asked for clears it): the matcher leases no fresh ones ahead of
	// them, and recording outcomes claims in the same transaction only
	// while it is set.
	backlog bool // guarded by mu
	// nextDue is the earliest time a delivery of the endpoint in the
	// store falls due (as of the last claim, lowered by retries this
	// runner scheduled since); zero when none. Owned by the loop.
	nextDue time.Time
}

// sendResult is the outcome of one POST: of one delivery, or of a batch
// (batchID set).
type sendResult struct {
	ds      []store.Delivery
	batchID string
	resp    *webhook.Response
	// acked: a broker acknowledged every message (resp is nil).
	acked   bool
	err     error
	at      time.Time
	latency time.Duration
}

func newRunner(e *Engine, id string) *runner {
	ctx, cancel := context.WithCancel(e.life.Context())
	return &runner{e: e, id: id, ctx: ctx, cancel: cancel, kick: make(chan struct{}, 1), results: make(chan sendResult, delivery.MaxMaxInFlight),
		backlog: true}
}

// wake makes the runner claim again soon.
func (r *runner) wake() {
	r.mu.Lock()
	r.backlog = true
	r.mu.Unlock()
	select {
	case r.kick <- struct{}{}:
	default:
	}
}

// idle reports whether the runner may end: it is stopping and nothing is
// in flight or reserved.
func (r *runner) idle() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.ctx.Err() != nil && r.inflight == 0
}

func (r *runner) loop() {
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	var wait time.Duration
	var starved <-chan struct{}
	needRound := true
	for {
		stopping := r.ctx.Err() != nil
		if r.idle() {
			return
		}
		if stopping {
			wait, starved = 0, nil
		} else if needRound {
			wait, starved = r.round()
		}
		needRound = true
		var timerC <-chan time.Time
		if wait > 0 {
			timer.Reset(wait)
			timerC = timer.C
		}
		done := r.ctx.Done()
		if stopping {
			done = nil
		}
		select {
		case <-r.kick:
		case <-timerC:
		case <-starved:
		case <-done:
		case res := <-r.results:
			batch := []sendResult{res}
		drain:
			for {
				select {
				case res := <-r.results:
					batch = append(batch, res)
				default:
					break drain
				}
			}
			if w, st, claimed := r.complete(batch); claimed {
				wait, starved, needRound = w, st, false
			}
		}
		if !timer.Stop() {
			select {
			case <-timer.C:
			default:
			}
		}
	}
}

// claimPlan is what one claim may take, decided by the endpoint's state,
// its max in-flight and the global bound (the store applies the limits
// shared with other replicas).
type claimPlan struct {
	le    *liveEndpoint
	now   time.Time
	free  int // what the endpoint allows in this process
	limit int // slots reserved for the claim (<= free)
	freed <-chan struct{}
	// When limit is 0: how long to wait, or a channel to wait on.
	wait    time.Duration
	starved <-chan struct{}
}

// plan decides what a claim may take and reserves its slots (start gives
// back what the claim did not use).
func (r *runner) plan() claimPlan {
	e := r.e
	p := claimPlan{le: e.endpoint(r.id), now: e.now()}
	if p.le == nil || !p.le.sending() {
		return p // a PATCH or a sweep wakes it
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	p.free = e.maxInFlight(p.le) - r.inflight
	if p.free <= 0 {
		return p // a result wakes it
	}
	p.freed = e.slotFreed() // before acquiring, so no release is missed
	p.limit = e.acquireGlobal(p.free)
	r.inflight += p.limit
	if p.limit == 0 {
		p.starved = p.freed
	}
	return p
}

// limits are the endpoint's limits the store keeps across replicas.
func (e *Engine) limits(le *liveEndpoint) store.DeliveryLimits {
	return store.DeliveryLimits{MaxInFlight: e.maxInFlight(le), Rate: le.ep.RateLimit, Batch: batchSize(le)}
}

// unplan gives back what a plan reserved beyond the used deliveries.
func (r *runner) unplan(p claimPlan, used int) {
	r.unreserve(p.limit - used)
}

// unreserve gives back n reserved slots that no send used.
func (r *runner) unreserve(n int) {
	if n <= 0 {
		return
	}
	r.mu.Lock()
	r.inflight -= n
	r.mu.Unlock()
	r.e.releaseGlobal(n)
}

// reserve takes up to want slots (POSTs) for fresh deliveries the
// matcher is about to insert leased, and returns how many it took (0
// when the endpoint is not sending, orders per stream, or has a backlog
// that should go first). The store leases as many as the endpoint's
// shared limits allow; the sends of the others give their slots back.
func (r *runner) reserve(want int) int {
	le := r.e.endpoint(r.id) // as of now: a breaker may have just tripped
	if want <= 0 || le == nil || !le.sending() || delivery.Ordering(le.ep.Ordering) == delivery.OrderingStream {
		return 0
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ctx.Err() != nil || r.backlog {
		return 0
	}
	n := min(want, r.e.maxInFlight(le)-r.inflight)
	if n > 0 {
		n = r.e.acquireGlobal(n)
	}
	n = max(n, 0)
	r.inflight += n
	if n < want {
		r.backlog = true // the rest is inserted unleased: claims go first now
	}
	return n
}

// handoff sends claimed deliveries on slots taken by plan, a POST per
// group, each attempt in the trace of the match that made its first
// delivery.
func (r *runner) handoff(le *liveEndpoint, groups []sendGroup) {
	for _, g := range groups {
		r.goSend(func() { r.post(telemetry.ParseTraceparent(g.ds[0].TraceParent), le, g) })
	}
}

// goSend runs a send on a slot already taken, or gives the slot back
// when the engine stops.
func (r *runner) goSend(fn func()) {
	if !r.e.life.Go(fn) {
		r.unreserve(1)
		r.wake() // the stopping loop waits for inflight to reach 0
	}
}

// sendEarly sends fresh deliveries being inserted leased (one, or a
// batching endpoint's batch) on a slot already taken, as soon as their
// insert commits (see handover). parent is the span an attempt's span is
// a child of (the match of the fresh events).
func (r *runner) sendEarly(parent trace.SpanContext, le *liveEndpoint, ds []store.Delivery, t *ticket) {
	r.goSend(func() { r.send(parent, le, ds, t) })
}

// round claims and starts what it may, and returns how long until it
// should claim again (0: when kicked) and, when global slots ran out, a
// channel closed when one frees.
func (r *runner) round() (time.Duration, <-chan struct{}) {
	p := r.plan()
	if p.limit == 0 {
		return p.wait, p.starved
	}
	size := batchSize(p.le)
	write, now := r.e.leases.begin(r.e.now)
	p.now = now
	res, err := r.e.st.DeliveryClaim(r.ctx, &store.DeliveryClaimParams{EndpointID: r.id, Limit: p.limit * size, Lease: r.e.cfg.Lease,
		DeliveryLimits: r.e.limits(p.le), Hold: p.le.ep.BatchMaxWait, Now: p.now})
	var claimed []store.Delivery
	if err == nil {
		claimed = res.Deliveries
	}
	r.e.leases.end(write, claimed, err)
	if err != nil {
		r.unplan(p, 0)
		if r.ctx.Err() == nil {
			r.e.log.Warn("claiming deliveries failed", "endpoint", r.id, "err", err)
		}
		return time.Second, nil
	}
	return r.start(p, res)
}

// start sends what a claim returned and says when to claim again. A
// slot is a POST: with batching, a claim asks for as many deliveries as
// its slots' batches hold.
func (r *runner) start(p claimPlan, res *store.DeliveryClaimResult) (time.Duration, <-chan struct{}) {
	got, want := len(res.Deliveries), p.limit*batchSize(p.le)
	r.mu.Lock()
	r.backlog = got == want // a full claim may have left more behind
	r.mu.Unlock()
	r.nextDue = res.NextDueAt
	groups, err := r.e.batches(res.Deliveries, batchSize(p.le), p.limit)
	if err != nil {
		// Not sent: the leases end and the deliveries are claimed again.
		r.e.log.Error("grouping deliveries into batches failed", "endpoint", r.id, "err", err)
		r.e.leases.done(res.Deliveries)
		r.unplan(p, 0)
		return time.Second, nil
	}
	r.unplan(p, len(groups))
	r.handoff(p.le, groups)
	switch {
	case !res.RetryAt.IsZero():
		// The rate limit, shared with other replicas: claim again when
		// the endpoint's bucket holds a token.
		r.mu.Lock()
		r.backlog = true
		r.mu.Unlock()
		return max(res.RetryAt.Sub(p.now), time.Millisecond), nil
	case got < want && res.InFlight > r.running():
		// Other replicas hold some of the endpoint's slots: their
		// results do not wake this runner, so look again soon.
		r.mu.Lock()
		r.backlog = true
		r.mu.Unlock()
		return min(peerPoll, max(r.untilDue(p.now), time.Millisecond)), nil
	case got == want && p.limit < p.free:
		return 0, p.freed // the global bound: more may be due now
	}
	// Otherwise nothing more is due, or the endpoint's max in-flight is
	// this process's: a result wakes it.
	return r.untilDue(p.now), nil
}

// peerPoll is how often a runner whose endpoint's slots other replicas
// hold claims again.
const peerPoll = 100 * time.Millisecond

// running is how many sends of the endpoint run in this process.
func (r *runner) running() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.inflight
}

// untilDue is how long until nextDue (0: nothing due, wait for a wake).
func (r *runner) untilDue(now time.Time) time.Duration {
	if r.nextDue.IsZero() {
		return 0
	}
	return max(r.nextDue.Sub(now), time.Millisecond)
}

// send attempts fresh deliveries (one, or a batch) and hands the outcome
// to the loop. It first waits to learn which of them the store kept
// leased (within the endpoint's limits across replicas), and sends only
// those: the others wait for a claim. The attempt is a span, a child of
// parent when valid; its POST carries the span's traceparent.
func (r *runner) send(parent trace.SpanContext, le *liveEndpoint, ds []store.Delivery, t *ticket) {
	<-t.done
	kept := make([]store.Delivery, 0, len(ds))
	for _, d := range ds {
		if k, ok := t.kept[deliveryKey{d.EndpointID, d.EventID}]; ok {
			kept = append(kept, k)
		}
	}
	if len(kept) == 0 {
		r.unreserve(1)
		r.wake()
		return
	}
	groups, err := r.e.batches(kept, batchSize(le), 1)
	if err != nil {
		// Not sent: the leases end and the deliveries are claimed again.
		r.e.log.Error("grouping deliveries into batches failed", "endpoint", r.id, "err", err)
		r.e.leases.done(kept)
		r.unreserve(1)
		r.wake()
		return
	}
	r.post(parent, le, groups[0])
}

// post makes one POST: of a single delivery (its body, signed under its
// event id), or of a batch (the batch body, signed under the batch id),
// and hands the outcome to the loop.
func (r *runner) post(parent trace.SpanContext, le *liveEndpoint, g sendGroup) {
	e := r.e
	d := g.ds[0]
	ctx, span := e.tracer.Start(telemetry.Follow(e.life.WorkContext(), parent), "delivery.attempt", trace.WithAttributes(
		attribute.String("herald.endpoint_id", d.EndpointID), attribute.String("herald.event_id", d.EventID),
		attribute.String("herald.event_type", d.EventType), attribute.String("herald.stream", d.Stream),
		attribute.String("herald.delivery_id", d.ID), attribute.Int("herald.attempt", d.Attempts+1),
		attribute.String("herald.batch_id", g.batchID), attribute.Int("herald.batch_size", len(g.ds))))
	defer span.End()
	at := e.now()
	id, eventType, body, err := d.EventID, d.EventType, d.Body, error(nil)
	if g.batchID != "" && le.dest == nil {
		id, eventType = g.batchID, BatchEventType
		body, err = batchBody(g)
	}
	var resp *webhook.Response
	var acked bool
	switch {
	case le.dest != nil:
		// A broker: every event its own message, whether batched or not.
		err = e.publish(ctx, le, g.ds, at)
		acked = err == nil
	case err == nil:
		var req *webhook.Request
		if req, err = e.signedRequest(le, id, eventType, body, at); err == nil {
			resp, err = e.sender.Send(ctx, req)
		}
	}
	switch {
	case err != nil:
		span.SetStatus(codes.Error, err.Error())
	case resp != nil && !resp.OK():
		span.SetStatus(codes.Error, fmt.Sprintf("HTTP %d", resp.StatusCode))
	}
	latency := e.now().Sub(at)
	if resp != nil {
		latency = resp.Latency
	}
	r.results <- sendResult{ds: g.ds, batchID: g.batchID, resp: resp, acked: acked, err: err, at: at, latency: latency}
}

// signedRequest builds the POST of one event in the endpoint's profile:
// custom headers, then the profile's headers signed with every secret
// valid at now (or the one its rotation rule picks), with the endpoint's
// attempt timeout.
func (e *Engine) signedRequest(le *liveEndpoint, eventID, eventType string, body []byte, now time.Time) (*webhook.Request, error) {
	ep := &le.ep
	secrets := delivery.SecretSet{Current: ep.Secret, Previous: ep.PreviousSecret, PreviousUntil: ep.PreviousSecretUntil}.Signing(now)
	signed, err := le.profile.Sign(&delivery.ProfileSignParams{ID: eventID, EventType: eventType, Timestamp: now, Body: body, Secrets: secrets})
	if err != nil {
		return nil, err
	}
	h := make(http.Header, len(ep.Headers)+len(signed)+2)
	for k, v := range ep.Headers {
		h.Set(k, v)
	}
	for k, v := range signed {
		h[k] = v
	}
	if le.profile.UserAgent != "" && h.Get("User-Agent") == "" {
		h.Set("User-Agent", le.profile.UserAgent)
	}
	h.Set("Content-Type", "application/json")
	return &webhook.Request{URL: ep.URL, Header: h, Body: body, Timeout: le.timeout}, nil
}

// complete decides each outcome (retry schedule, Retry-After, breaker)
// and stores them with the breaker state. The sends' slots are given
// back only then, so no new send starts on a slot before a tripped
// breaker is seen. claimed is true when the loop need not claim: the
// store holds nothing due but what was in flight, and wait is how long
// until a retry just scheduled falls due.
func (r *runner) complete(batch []sendResult) (wait time.Duration, starved <-chan struct{}, claimed bool) {
	_, ok := r.record(batch)
	for _, res := range batch {
		r.e.leases.done(res.ds)
	}
	if !ok {
		// Not recorded: the leases are this replica's still, and need
		// not run out before the deliveries are sent again.
		r.e.leases.failed()
	}
	r.unreserve(len(batch))
	if !ok || r.ctx.Err() != nil {
		return 0, nil, false
	}
	r.mu.Lock()
	backlog := r.backlog
	r.mu.Unlock()
	if le := r.e.endpoint(r.id); le == nil || delivery.Ordering(le.ep.Ordering) == delivery.OrderingStream {
		backlog = true // a finished delivery lets the next of its stream go
	}
	if backlog {
		return 0, nil, false
	}
	return r.untilDue(r.e.now()), nil, true
}

// record stores the outcomes of a batch of sends with the endpoint's
// breaker state, retrying the compare-and-set on the breaker state, and
// reports whether they were stored.
func (r *runner) record(batch []sendResult) (time.Time, bool) {
	e := r.e
	ctx := context.WithoutCancel(r.ctx) // outcomes are recorded even while stopping
	for range casAttempts {
		le := e.endpoint(r.id)
		if le == nil {
			return time.Time{}, false // deleted: its deliveries are gone
		}
		now := e.now()
		h, hv := fromStoreHealth(le.ep.Health), le.ep.HealthVersion
		params := &store.DeliveryCompleteParams{EndpointID: r.id, ExpectHealthVersion: hv, Now: now}
		var tripped bool
		var finals []finalOutcome
		var sent []store.Delivery
		for _, res := range batch {
			out, ok, obsErr := decide(le, res, now)
			var sig delivery.Signal
			h, sig = e.breaker.Observe(h, delivery.Observation{Success: ok, At: res.at, Error: obsErr})
			tripped = tripped || sig == delivery.SignalTrip
			for _, d := range res.ds {
				dr := out
				dr.DeliveryID, dr.LeaseToken = d.ID, d.LeaseToken
				params.Results = append(params.Results, dr)
				sent = append(sent, d)
				finals = append(finals, finalOutcome{status: dr.Status, tenant: le.ep.Tenant, attempts: d.Attempts + 1, created: d.CreatedAt, latency: res.latency})
			}
		}
		params.Health = toStoreHealth(h)
		var out *store.DeliveryCompleteResult
		err := e.whileAway(leaseEnd(sent), func() error {
			var err error
			out, err = e.st.DeliveryComplete(ctx, params)
			return err
		})
		switch {
		case err == nil:
			e.setHealth(r.id, params.Health, out.HealthVersion)
			if tripped {
				e.log.Warn("endpoint disabled by the circuit breaker", "endpoint", r.id, "reason", h.DisabledReason)
			}
			for i, f := range finals {
				e.observe(f, now)
				e.logOutcome(ctx, le, sent[i], params.Results[i])
			}
			for _, dr := range params.Results {
				if dr.Status == store.DeliveryFailed && (r.nextDue.IsZero() || dr.NextAttemptAt.Before(r.nextDue)) {
					r.nextDue = dr.NextAttemptAt
				}
			}
			return now, true
		case errors.Is(err, store.ErrEndpointConflict):
			// Another replica changed the breaker state: read it again,
			// also when the database is away a moment.
			if err := e.whileAway(leaseEnd(sent), func() error { return e.EndpointChanged(ctx, r.id) }); err != nil {
				e.log.Warn("reloading an endpoint failed", "endpoint", r.id, "err", err)
				return time.Time{}, false
			}
		case errors.Is(err, store.ErrEndpointNotFound):
			e.uninstall(r.id)
			return time.Time{}, false
		default:
			// Not recorded (the database was away until the leases
			// ended, or the engine stopped): the deliveries are sent
			// again after their leases (at least once).
			e.log.Error("recording delivery outcomes failed", "endpoint", r.id, "err", err)
			return time.Time{}, false
		}
	}
	e.log.Error("recording delivery outcomes kept conflicting", "endpoint", r.id)
	return time.Time{}, false
}

// Waits between the writes of an outcome while the database is away.
const (
	storeRetryMin = 100 * time.Millisecond
	storeRetryMax = 2 * time.Second
)

// whileAway runs fn, the recording of outcomes (or a step of it), and
// runs it again while the store says the database is away
// (store.ErrUnavailable), until it is back: an answer received while it
// was away (a 2xx above all) is recorded by the replica that received it
// as soon as it can be, instead of the delivery being sent again when
// its lease ends, and a stream of an ordered endpoint is not held back
// meanwhile. It gives up when the leases (ending at until) have ended
// (another replica may have claimed the deliveries; their token would
// not match) or when the engine's work in flight is cancelled (a
// shutdown's deadline).
func (e *Engine) whileAway(until time.Time, fn func() error) error {
	wait := storeRetryMin
	for {
		err := fn()
		if !errors.Is(err, store.ErrUnavailable) || !e.now().Add(wait).Before(until) {
			return err
		}
		t := time.NewTimer(wait)
		select {
		case <-e.life.WorkContext().Done():
			t.Stop()
			return err
		case <-t.C:
		}
		wait = min(2*wait, storeRetryMax)
	}
}

// leaseEnd is when the last of the leases of ds ends.
func leaseEnd(ds []store.Delivery) time.Time {
	var end time.Time
	for _, d := range ds {
		if d.LeaseUntil.After(end) {
			end = d.LeaseUntil
		}
	}
	return end
}
