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

// trigger decides when Run gives memory back: once after each burst of
// work, at the first idle interval that follows it. Once, not at every
// idle interval: what an idle server runs now and then (a heartbeat, the
// collector) faults its own pages back, and giving them back again and
// again would only cost faults. The start of the process counts as a
// burst.
type trigger struct {
	// armed is set by a burst and cleared by the release that follows.
	armed bool
	// busy counts the busy intervals in a row.
	busy int
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
	if cpu*idleShare <= interval && t.armed {
		t.armed = false
		return true
	}
	return false
}
