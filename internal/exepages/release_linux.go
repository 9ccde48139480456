//go:build linux

package exepages

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Release unmaps from the process the resident pages of its executable's
// code and read-only data (the mappings Releasable selects) and returns
// how many bytes of address space it advised. Measured on `herald
// serve`, idle on an empty data directory: 25 to 27 MB of RssFile before,
// about 5 MB just after. The pages an idle server uses fault back
// (with the kernel's fault-around), the rest stays out of its RSS until
// used. MADV_RANDOM on the mappings was measured too: it leaves the
// fault-around as it is (it steers read-ahead from disk, not the mapping
// of cached pages), so it is not used.
func Release() (int64, error) {
	exe, err := os.Readlink("/proc/self/exe")
	if err != nil {
		return 0, fmt.Errorf("exepages: %w", err)
	}
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		return 0, fmt.Errorf("exepages: %w", err)
	}
	maps, err := ParseSmaps(f)
	if cerr := f.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("exepages: %w", cerr)
	}
	if err != nil {
		return 0, err
	}
	var n int64
	var errs []error
	for _, m := range maps {
		if !m.Releasable(exe) {
			continue
		}
		if err := madvise(m.Start, m.End-m.Start, syscall.MADV_DONTNEED); err != nil {
			errs = append(errs, fmt.Errorf("exepages: madvise %x-%x: %w", m.Start, m.End, err))
			continue
		}
		n += int64(m.End - m.Start)
	}
	return n, errors.Join(errs...)
}

// madvise calls madvise(2) on a range of the process's own mappings
// (syscall.Madvise takes a byte slice, which a code mapping is not).
func madvise(addr, length uint64, advice int) error {
	_, _, e := syscall.Syscall(syscall.SYS_MADVISE, uintptr(addr), uintptr(length), uintptr(advice))
	if e != 0 {
		return e
	}
	return nil
}

// Run releases the executable's pages again, every interval until ctx
// ends, whenever the process was idle over the interval and the pages
// faulted back since the last release (or since Run started, after the
// caller's Release) grew by MinGrowthKB (shouldRelease): a burst of
// requests brings back the code it runs, and an idle server gives it back
// a moment after. Checking costs a getrusage(2) and a read of
// /proc/self/statm an interval. onErr hears of a failed release or
// reading.
func Run(ctx context.Context, interval time.Duration, onErr func(error)) {
	after, err := rssFileKB()
	if err != nil {
		onErr(err)
	}
	cpu := cpuTime()
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		now := cpuTime()
		used := now - cpu
		cpu = now
		kb, err := rssFileKB()
		if err != nil {
			onErr(err)
			continue
		}
		if !shouldRelease(used, interval, kb, after) {
			continue
		}
		if _, err := Release(); err != nil {
			onErr(err)
		}
		if after, err = rssFileKB(); err != nil {
			onErr(err)
		}
	}
}

// cpuTime is the process's user and system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// rssFileKB is the process's resident file-backed memory, in KB: the
// third field of /proc/self/statm (resident shared pages: the file
// pages, and shared memory, which Herald barely maps).
func rssFileKB() (int64, error) {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0, fmt.Errorf("exepages: %w", err)
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return 0, fmt.Errorf("exepages: /proc/self/statm: %q", b)
	}
	pages, err := strconv.ParseInt(f[2], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("exepages: /proc/self/statm: %w", err)
	}
	return pages * int64(os.Getpagesize()) >> 10, nil
}
