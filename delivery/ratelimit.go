package delivery

import (
	"math"
	"time"
)

// TokenBucket is a pure rate limiter: Rate tokens per second accrue up to
// Burst. The caller passes the time, so it runs on any clock. The zero
// value allows nothing; use NewTokenBucket.
type TokenBucket struct {
	rate   float64
	burst  float64
	tokens float64
	last   time.Time
}

// NewTokenBucket returns a full bucket. A rate of 0 or less means no
// limit. The burst is a tenth of a second's worth, at least 1, so a high
// rate is not throttled to one delivery per round trip while a low one
// stays close to exact.
func NewTokenBucket(rate float64, now time.Time) *TokenBucket {
	b := &TokenBucket{rate: rate, burst: math.Max(1, math.Floor(rate/10)), last: now}
	b.tokens = b.burst
	return b
}

// Unlimited reports whether the bucket never limits.
func (b *TokenBucket) Unlimited() bool { return b.rate <= 0 }

func (b *TokenBucket) refill(now time.Time) {
	if now.After(b.last) {
		b.tokens = math.Min(b.burst, b.tokens+now.Sub(b.last).Seconds()*b.rate)
		b.last = now
	}
}

// Available returns how many whole tokens can be taken at now, and, when
// none, how long until one can.
func (b *TokenBucket) Available(now time.Time) (n int, wait time.Duration) {
	if b.Unlimited() {
		return math.MaxInt32, 0
	}
	b.refill(now)
	if b.tokens >= 1 {
		return int(b.tokens), 0
	}
	wait = time.Duration((1 - b.tokens) / b.rate * float64(time.Second))
	if wait <= 0 {
		wait = time.Nanosecond
	}
	return 0, wait
}

// Take removes n tokens at now (after Available said they are there).
func (b *TokenBucket) Take(n int, now time.Time) {
	if b.Unlimited() {
		return
	}
	b.refill(now)
	b.tokens -= float64(n)
}

// Put gives back n tokens taken but not used (a claim that found fewer
// deliveries than it reserved tokens for), up to the burst.
func (b *TokenBucket) Put(n int) {
	if b.Unlimited() || n <= 0 {
		return
	}
	b.tokens = math.Min(b.burst, b.tokens+float64(n))
}
