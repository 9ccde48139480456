package delivery

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/heraldstreams/herald/store"
	"github.com/heraldstreams/herald/webhook"
)

// runner sends one endpoint's deliveries: it claims as many as the
// endpoint's max in-flight, its rate limit and the global bound allow,
// sends each in its own goroutine, and records the outcomes of finished
// sends in one transaction together with the breaker state. It alone
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
	// The fields below belong to the loop goroutine.
	inflight int
	bucket   *TokenBucket
	rate     float64
}

type sendResult struct {
	d       store.Delivery
	resp    *webhook.Response
	err     error
	at      time.Time
	latency time.Duration
}

func newRunner(e *Engine, id string) *runner {
	ctx, cancel := context.WithCancel(e.ctx)
	return &runner{e: e, id: id, ctx: ctx, cancel: cancel, kick: make(chan struct{}, 1), results: make(chan sendResult, MaxMaxInFlight)}
}

// wake makes the runner claim again soon.
func (r *runner) wake() {
	select {
	case r.kick <- struct{}{}:
	default:
	}
}

func (r *runner) loop() {
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	var wait time.Duration
	var starved <-chan struct{}
	needRound := true
	for {
		stopping := r.ctx.Err() != nil
		if stopping && r.inflight == 0 {
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
// its max in-flight, its rate limit and the global bound.
type claimPlan struct {
	le    *liveEndpoint
	now   time.Time
	free  int // what the endpoint and its rate allow
	limit int // global slots acquired for the claim (<= free)
	freed <-chan struct{}
	// When limit is 0: how long to wait, or a channel to wait on.
	wait    time.Duration
	starved <-chan struct{}
}

func (r *runner) plan() claimPlan {
	e := r.e
	p := claimPlan{le: e.endpoint(r.id), now: e.now()}
	if p.le == nil || !p.le.ep.Active || !p.le.ep.Health.DisabledAt.IsZero() {
		return p // a PATCH or a sweep wakes it
	}
	p.free = p.le.maxInFlight(e.cfg.EndpointMaxInFlight) - r.inflight
	if p.free <= 0 {
		return p // a result wakes it
	}
	if r.bucket == nil || r.rate != p.le.ep.RateLimit {
		r.bucket, r.rate = NewTokenBucket(p.le.ep.RateLimit, p.now), p.le.ep.RateLimit
	}
	tokens, wait := r.bucket.Available(p.now)
	if tokens == 0 {
		p.free, p.wait = 0, wait
		return p
	}
	p.free = min(p.free, tokens)
	p.freed = e.slotFreed() // before acquiring, so no release is missed
	p.limit = e.acquireGlobal(p.free)
	if p.limit == 0 {
		p.starved = p.freed
	}
	return p
}

// round claims and starts what it may, and returns how long until it
// should claim again (0: when kicked) and, when global slots ran out, a
// channel closed when one frees.
func (r *runner) round() (time.Duration, <-chan struct{}) {
	p := r.plan()
	if p.limit == 0 {
		return p.wait, p.starved
	}
	res, err := r.e.st.DeliveryClaim(r.ctx, &store.DeliveryClaimParams{EndpointID: r.id, Limit: p.limit, Lease: r.e.cfg.Lease, Now: p.now})
	if err != nil {
		r.e.releaseGlobal(p.limit)
		if r.ctx.Err() == nil {
			r.e.log.Warn("claiming deliveries failed", "endpoint", r.id, "err", err)
		}
		return time.Second, nil
	}
	return r.start(p, res)
}

// start sends what a claim returned and says when to claim again.
func (r *runner) start(p claimPlan, res *store.DeliveryClaimResult) (time.Duration, <-chan struct{}) {
	e := r.e
	e.releaseGlobal(p.limit - len(res.Deliveries))
	r.bucket.Take(len(res.Deliveries), p.now)
	for _, d := range res.Deliveries {
		r.inflight++
		if !e.goOwned(func() { r.send(p.le, d) }) {
			r.inflight--
			e.releaseGlobal(1)
		}
	}
	if len(res.Deliveries) == p.limit {
		// More may be due now: claim again when what limited this round
		// allows.
		if p.limit < p.free {
			return 0, p.freed // the global bound
		}
		if _, wait := r.bucket.Available(p.now); wait > 0 {
			return wait, nil // the rate limit
		}
		// Otherwise the endpoint's max in-flight: a result wakes it.
	}
	if res.NextDueAt.IsZero() {
		return 0, nil
	}
	return max(res.NextDueAt.Sub(p.now), time.Millisecond), nil
}

// send attempts one delivery and hands the outcome to the loop.
func (r *runner) send(le *liveEndpoint, d store.Delivery) {
	e := r.e
	at := e.now()
	req, err := e.signedRequest(&le.ep, d.EventID, d.Body, at)
	var resp *webhook.Response
	if err == nil {
		resp, err = e.sender.Send(e.sendCtx, req)
	}
	latency := e.now().Sub(at)
	if resp != nil {
		latency = resp.Latency
	}
	r.results <- sendResult{d: d, resp: resp, err: err, at: at, latency: latency}
}

// signedRequest builds the POST of one event: custom headers, then the
// Standard Webhooks headers signed with every secret valid at now.
func (e *Engine) signedRequest(ep *store.Endpoint, eventID string, body []byte, now time.Time) (*webhook.Request, error) {
	secrets := SecretSet{Current: ep.Secret, Previous: ep.PreviousSecret, PreviousUntil: ep.PreviousSecretUntil}.Signing(now)
	sh, err := Sign(&SignParams{MessageID: eventID, Timestamp: now, Body: body, Secrets: secrets})
	if err != nil {
		return nil, err
	}
	h := make(http.Header, len(ep.Headers)+4)
	for k, v := range ep.Headers {
		h.Set(k, v)
	}
	sh.Apply(h)
	h.Set("Content-Type", "application/json")
	return &webhook.Request{URL: ep.URL, Header: h, Body: body}, nil
}

// complete decides each outcome (retry schedule, Retry-After, breaker)
// and stores them with the breaker state, claiming the next deliveries in
// the same transaction. claimed is false when it did not claim (the loop
// then claims on its own).
func (r *runner) complete(batch []sendResult) (wait time.Duration, starved <-chan struct{}, claimed bool) {
	e := r.e
	// The sends are over: their slots are free for the claim below.
	r.inflight -= len(batch)
	e.releaseGlobal(len(batch))
	ctx := context.WithoutCancel(r.ctx) // outcomes are recorded even while stopping
	var p claimPlan
	if r.ctx.Err() == nil {
		p = r.plan()
	}
	defer func() {
		if !claimed {
			e.releaseGlobal(p.limit)
		}
	}()
	for range casAttempts {
		le := e.endpoint(r.id)
		if le == nil {
			return 0, nil, false // deleted: its deliveries are gone
		}
		now := e.now()
		h, hv := fromStoreHealth(le.ep.Health), le.ep.HealthVersion
		params := &store.DeliveryCompleteParams{EndpointID: r.id, ExpectHealthVersion: hv, Now: now, ClaimLimit: p.limit, ClaimLease: e.cfg.Lease}
		var tripped bool
		var finals []finalOutcome
		for _, res := range batch {
			dr, ok, obsErr := decide(le, res, now)
			var sig Signal
			h, sig = e.breaker.Observe(h, Observation{Success: ok, At: res.at, Error: obsErr})
			tripped = tripped || sig == SignalTrip
			params.Results = append(params.Results, dr)
			finals = append(finals, finalOutcome{status: dr.Status, attempts: res.d.Attempts + 1, created: res.d.CreatedAt, latency: res.latency})
		}
		if tripped {
			params.ClaimLimit = 0 // the store would refuse it anyway
		}
		params.Health = toStoreHealth(h)
		out, err := e.st.DeliveryComplete(ctx, params)
		switch {
		case err == nil:
			e.setHealth(r.id, params.Health, out.HealthVersion)
			if tripped {
				e.log.Warn("endpoint disabled by the circuit breaker", "endpoint", r.id, "reason", h.DisabledReason)
			}
			for _, f := range finals {
				e.observe(f, now)
			}
			if out.Claimed == nil {
				return 0, nil, false
			}
			p.now = now
			wait, starved = r.start(p, out.Claimed)
			return wait, starved, true
		case errors.Is(err, store.ErrEndpointConflict):
			if err := e.EndpointChanged(ctx, r.id); err != nil {
				e.log.Warn("reloading an endpoint failed", "endpoint", r.id, "err", err)
				return 0, nil, false
			}
		case errors.Is(err, store.ErrEndpointNotFound):
			e.uninstall(r.id)
			return 0, nil, false
		default:
			// Not recorded: the leases expire and the deliveries are sent
			// again (at least once).
			e.log.Error("recording delivery outcomes failed", "endpoint", r.id, "err", err)
			return 0, nil, false
		}
	}
	e.log.Error("recording delivery outcomes kept conflicting", "endpoint", r.id)
	return 0, nil, false
}

type finalOutcome struct {
	status   string
	attempts int
	created  time.Time
	latency  time.Duration
}

func (e *Engine) observe(f finalOutcome, now time.Time) {
	m := e.metrics
	m.attemptTime.Observe(f.latency.Seconds())
	switch f.status {
	case store.DeliveryDelivered:
		m.outcomes.WithLabelValues("delivered").Inc()
		m.attempts.Observe(float64(f.attempts))
		m.endToEnd.Observe(now.Sub(f.created).Seconds())
	case store.DeliveryExhausted:
		m.outcomes.WithLabelValues("exhausted").Inc()
		m.attempts.Observe(float64(f.attempts))
		m.deadLetters.Inc()
	default:
		m.outcomes.WithLabelValues("retrying").Inc()
	}
}

// decide turns one send outcome into the delivery's next state.
func decide(le *liveEndpoint, res sendResult, now time.Time) (dr store.DeliveryResult, ok bool, errText string) {
	a := store.DeliveryAttempt{At: res.at, Latency: res.latency}
	var retryAfter time.Duration
	switch {
	case res.err != nil:
		errText = res.err.Error()
	case res.resp.OK():
		ok = true
	default:
		errText = fmt.Sprintf("HTTP %d", res.resp.StatusCode)
		if s := res.resp.StatusCode; s == http.StatusTooManyRequests || s == http.StatusServiceUnavailable {
			if d, found := ParseRetryAfter(res.resp.Header.Get("Retry-After"), now); found {
				retryAfter = d
			}
		}
	}
	if res.resp != nil {
		a.StatusCode = res.resp.StatusCode
		a.ResponseBody = res.resp.Body
		if res.resp.BodyErr != nil {
			errText = joinErr(errText, "reading the response: "+res.resp.BodyErr.Error())
		}
	}
	a.Error = errText
	dr = store.DeliveryResult{DeliveryID: res.d.ID, LeaseToken: res.d.LeaseToken, Attempt: a}
	if ok {
		dr.Status = store.DeliveryDelivered
		return dr, true, ""
	}
	at, exhausted := NextAttempt(le.schedule, res.d.RoundAttempts+1, now, retryAfter)
	if exhausted {
		dr.Status = store.DeliveryExhausted
	} else {
		dr.Status, dr.NextAttemptAt = store.DeliveryFailed, at
	}
	return dr, false, errText
}

func joinErr(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}

func fromStoreHealth(h store.EndpointHealth) Health {
	return Health{ConsecutiveFailures: h.ConsecutiveFailures, LastSuccessAt: h.LastSuccessAt, LastFailureAt: h.LastFailureAt,
		LastError: h.LastError, DisabledAt: h.DisabledAt, DisabledReason: h.DisabledReason}
}

func toStoreHealth(h Health) store.EndpointHealth {
	return store.EndpointHealth{ConsecutiveFailures: h.ConsecutiveFailures, LastSuccessAt: h.LastSuccessAt, LastFailureAt: h.LastFailureAt,
		LastError: h.LastError, DisabledAt: h.DisabledAt, DisabledReason: h.DisabledReason}
}
