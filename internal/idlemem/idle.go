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

// Again is the longest idle time after a release before Run checks
// again for memory to give back, and gives it back when there is
// MinGrowthKB of it; the first check comes AgainFirst after the release
// that follows a burst (or the start), and each wait doubles up to
// Again. What an idle server runs now and then (the engines' sweeps every
// second or few, their minute-long safety nets, the dashboard's sampler)
// maps its code back in, 64 KB around each page it touches: left alone,
// an idle `herald serve` (release build, empty data directory) grew from
// 2.8 MB of RssFile just after a release to 10 MB within two seconds of
// its start and 13.7 MB after a minute. Measured cost: over 70 s idle,
// 0.31 % of a core without checking again, 0.33 % with a 30 s wait and
// 0.41 % with a fixed 10 s one (the pages the periodic work faults back
// after each release: faults are dear in a virtual machine), so the waits
// grow: the start's tail is given back within seconds, and a server idle
// for long pays once every Again.
const (
	AgainFirst = time.Second
	Again      = 30 * time.Second
)

// trigger decides when Run gives memory back: at the first idle interval
// after each burst of work, then after AgainFirst of idle time, and
// again after each wait, twice the last, up to Again. Not at every idle
// interval: what an idle server runs now and then (a sweep, the
// collector) faults its own pages back, and giving them back at once
// again and again would only cost faults. The start of the process
// counts as a burst.
type trigger struct {
	// armed is set by a burst and cleared by the release that follows.
	armed bool
	// busy counts the busy intervals in a row.
	busy int
	// first and most are AgainFirst and Again (most 0: never again
	// without a burst); wait is the idle time to the next release, quiet
	// the idle time since the last one.
	first, most, wait, quiet time.Duration
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
	switch {
	case t.armed:
		t.armed, t.wait = false, t.first
	case t.most > 0 && t.quiet >= t.wait:
		t.wait = min(2*t.wait, t.most)
	default:
		return false
	}
	t.quiet = 0
	return true
}
