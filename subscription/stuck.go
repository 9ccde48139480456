package subscription

import (
	"fmt"
	"time"
)

// StuckWakes is how many wake cycles in a row a consumer may start without
// its acks advancing before it is shown as stuck. A healthy consumer acks
// in every wake it gets, so the count goes back to 0 at once; one whose
// reads are refused, or whose processing fails every time, is woken again
// and again (its done leaves the work pending) and never acks. Ten wakes
// is about ten seconds of such a loop with the Go SDK's one-second retry
// backoff, and far more than a consumer that merely restarted needs.
const StuckWakes = 10

// Stuck reports whether c makes no progress at now, and the reason shown
// with it: woken StuckWakes times or more since its acks last advanced,
// for example "woken 60 times in 60 s without an ack". The span runs from
// the first of those wakes to now. A consumer below the threshold is not
// stuck and the reason is "".
func (c *Consumer) Stuck(now time.Time) (reason string, stuck bool) {
	if c.StalledWakes < StuckWakes {
		return "", false
	}
	return fmt.Sprintf("woken %d times in %s without an ack", c.StalledWakes, span(now.Sub(c.StalledSince))), true
}

// span formats a duration for a reason a person reads: whole seconds up
// to two minutes, then whole minutes up to two hours, then whole hours.
func span(d time.Duration) string {
	switch {
	case d < 0:
		return "0 s"
	case d < 2*time.Minute:
		return fmt.Sprintf("%d s", int64(d/time.Second))
	case d < 2*time.Hour:
		return fmt.Sprintf("%d min", int64(d/time.Minute))
	default:
		return fmt.Sprintf("%d h", int64(d/time.Hour))
	}
}

// woken counts a new wake cycle towards Stuck: the first since the last
// progress starts the span.
func woken(c *Consumer, now time.Time) {
	if c.StalledWakes == 0 {
		c.StalledSince = now
	}
	c.StalledWakes++
}

// progressed clears the count of Stuck: an ack advanced, or the consumer
// has nothing left to do.
func progressed(c *Consumer) {
	c.StalledWakes = 0
	c.StalledSince = time.Time{}
}
