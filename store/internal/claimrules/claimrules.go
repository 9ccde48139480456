// Package claimrules holds the rules by which a store hands out delivery
// leases: an endpoint's rate-limit token bucket, the bound of its running
// leases, how many deliveries a claim or a leased insert may take within
// them, and when a claim waits for a batch to fill. It is pure (no I/O,
// no store types): the SQL backends read the counts in their transaction,
// ask these rules, and write back what they decided.
package claimrules

import (
	"math"
	"time"
)

// Limits are an endpoint's delivery limits (store.DeliveryLimits has the
// same fields and converts to it): MaxInFlight bounds its running leases
// (0: none), Rate its deliveries a second (0: none), and Batch, above 1,
// is how many deliveries one POST carries, which MaxInFlight and Rate
// then count.
type Limits struct {
	MaxInFlight int
	Rate        float64
	Batch       int
}

// PerPOST is how many deliveries a unit of the limits covers.
func (l Limits) PerPOST() int { return max(1, l.Batch) }

// LeaseBound is the bound of the endpoint's running leases (0: none).
func (l Limits) LeaseBound() int { return l.MaxInFlight * l.PerPOST() }

// Tokens is how many rate tokens leasing n deliveries takes.
func (l Limits) Tokens(n int) float64 {
	per := l.PerPOST()
	return float64((n + per - 1) / per)
}

// InFlight is how many POSTs running leases of n deliveries make.
func (l Limits) InFlight(n int) int {
	per := l.PerPOST()
	return (n + per - 1) / per
}

// ClaimCount is how many due deliveries a claim asking for limit may
// lease, given the endpoint's bucket refilled at now: none while a batch
// is held to fill, at most the bucket's whole tokens' worth under a rate.
// (The bound of running leases is applied in the claim's statement,
// which counts them.)
func (l Limits) ClaimCount(limit int, b Bucket, held bool) int {
	if held {
		return 0
	}
	if l.Rate > 0 {
		return min(limit, b.Whole()*l.PerPOST())
	}
	return limit
}

// GrantCount is how many of want fresh deliveries may be inserted leased,
// given running leases of the endpoint and its bucket refilled at now:
// the same bounds as a claim's.
func (l Limits) GrantCount(want, running int, b Bucket) int {
	n := want
	if l.MaxInFlight > 0 {
		n = min(n, max(0, l.LeaseBound()-running))
	}
	if l.Rate > 0 {
		n = min(n, b.Whole()*l.PerPOST())
	}
	return n
}

// HoldUntil returns until when (Unix ns) a claim is held to let a batch
// fill, or 0 when it need not wait: with a batch of at least two and a
// hold, while fewer than batch deliveries are due (due, the earliest at
// earliest), none of them was sent in a batch before (batched), and the
// earliest fell due less than hold before now.
func HoldUntil(hold time.Duration, batch int, due, earliest int64, batched bool, now int64) int64 {
	if hold <= 0 || batch < 2 {
		return 0
	}
	until := earliest + int64(hold)
	if due == 0 || due >= int64(batch) || batched || until <= now {
		return 0
	}
	return until
}

// Bucket is an endpoint's rate-limit token bucket as stored: Tokens at
// At (Unix ns). Rate tokens a second accrue up to Burst(rate).
type Bucket struct {
	Tokens float64
	At     int64
}

// Burst is the bucket size of a rate: a tenth of a second's worth, at
// least 1, so a high rate is not throttled to one delivery per round
// trip while a low one stays close to exact.
func Burst(rate float64) float64 { return math.Max(1, math.Floor(rate/10)) }

// Refill returns the bucket at now (a clock behind At adds nothing).
func (b Bucket) Refill(rate float64, now int64) Bucket {
	burst := Burst(rate)
	if now > b.At {
		b.Tokens += float64(now-b.At) / float64(time.Second) * rate
		b.At = now
	}
	b.Tokens = math.Min(b.Tokens, burst)
	return b
}

// epsilon absorbs the rounding of refills: ten refills of a tenth of a
// token make a whole one.
const epsilon = 1e-9

// Whole is how many deliveries the bucket allows now.
func (b Bucket) Whole() int { return max(0, int(math.Floor(b.Tokens+epsilon))) }

// Wait is how long until the bucket holds one token (0 when it does).
func (b Bucket) Wait(rate float64) time.Duration {
	if b.Tokens+epsilon >= 1 || rate <= 0 {
		return 0
	}
	return max(time.Duration((1-b.Tokens)/rate*float64(time.Second)), time.Nanosecond)
}

// Take returns the bucket after n deliveries were leased under limits.
func (b Bucket) Take(l Limits, n int) Bucket {
	b.Tokens -= l.Tokens(n)
	return b
}
