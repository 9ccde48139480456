package exepages

import "time"

// MinGrowthKB is how much the executable's resident pages must have grown
// since the last release (by faulting back) before Run releases them
// again: less is not worth the faults that bring them back.
const MinGrowthKB = 1024

// idleShare is the share of a core under which the process counts as
// idle over an interval: 1 %.
const idleShare = 100

// shouldRelease reports whether Run releases again at the end of an
// interval in which the process used cpu of CPU time: when it was idle
// and its executable's resident pages (rssFileKB now, afterKB just after
// the last release) grew by MinGrowthKB or more. A busy process is left
// alone: it would fault the pages it uses straight back.
func shouldRelease(cpu, interval time.Duration, rssFileKB, afterKB int64) bool {
	return cpu*idleShare <= interval && rssFileKB-afterKB >= MinGrowthKB
}
