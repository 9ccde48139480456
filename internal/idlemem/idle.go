package idlemem

import "time"

// MinGrowthKB is how much memory must be there to give back (executable
// pages faulted back since the last release, or free heap pages the Go
// runtime retains) before Run gives it back: less is not worth the faults
// or the collection it costs.
const MinGrowthKB = 1024

// The shares of a core that tell busy intervals (10 % or more) from idle
// ones (1 % or less). Between the two (a heartbeat, a request now and
// then) nothing changes.
const (
	busyShare = 10
	idleShare = 100
)

// burstIntervals is how many busy intervals in a row make a burst of
// work: periodic work (the statistics sampler, a checkpoint) may keep one
// interval busy, and giving memory back after each would only cost the
// faults that bring its pages back.
const burstIntervals = 4

// Again is how much idle time after a release Run checks again for
// memory to give back, and gives it back when there is MinGrowthKB of it:
// what an idle server runs now and then (the engines' sweeps every few
// seconds, their minute-long safety nets, the dashboard's sampler) maps
// its code back in, 64 KB around each page it touches, and left alone
// that grew an idle `herald serve` by 5 MB in its first minute. Measured
// cost: a release takes well under a millisecond of CPU (reading
// /proc/self/smaps, a madvise per mapping), and the pages the periodic
// work then faults back in are a few dozen faults; every 10 s of idle
// time, both are under 0.01 % of a core.
const Again = 10 * time.Second

// trigger decides when Run gives memory back: at the first idle interval
// after each burst of work, and again after every Again of idle time
// since the last release. Not at every idle interval: what an idle
// server runs now and then (a sweep, the collector) faults its own pages
// back, and giving them back at once again and again would only cost
// faults. The start of the process counts as a burst.
type trigger struct {
	// armed is set by a burst and cleared by the release that follows.
	armed bool
	// busy counts the busy intervals in a row.
	busy int
	// again is Again (0: never again without a burst); quiet is the idle
	// time since the last release.
	again, quiet time.Duration
}

// tick takes the CPU time the process used over the last interval and
// reports whether to give memory back now.
func (t *trigger) tick(cpu, interval time.Duration) bool {
	if cpu*busyShare >= interval {
		t.busy++
		if t.busy >= burstIntervals {
			t.armed = true
		}
		return false
	}
	t.busy = 0
	if cpu*idleShare > interval {
		return false
	}
	t.quiet += interval
	if t.armed || (t.again > 0 && t.quiet >= t.again) {
		t.armed, t.quiet = false, 0
		return true
	}
	return false
}
