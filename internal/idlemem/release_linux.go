//go:build linux

package idlemem

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// ReleaseExecutable unmaps from the process the resident pages of its executable's
// code and read-only data (the mappings Releasable selects) and returns
// how many bytes of address space it advised. Measured on `herald
// serve`, idle on an empty data directory: 25 to 27 MB of RssFile before,
// about 5 MB just after. The pages an idle server uses fault back
// (with the kernel's fault-around), the rest stays out of its RSS until
// used. MADV_RANDOM on the mappings was measured too: it leaves the
// fault-around as it is (it steers read-ahead from disk, not the mapping
// of cached pages), so it is not used.
func ReleaseExecutable() (int64, error) {
	exe, err := os.Readlink("/proc/self/exe")
	if err != nil {
		return 0, fmt.Errorf("idlemem: %w", err)
	}
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		return 0, fmt.Errorf("idlemem: %w", err)
	}
	maps, err := ParseSmaps(f)
	if cerr := f.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("idlemem: %w", cerr)
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
			errs = append(errs, fmt.Errorf("idlemem: madvise %x-%x: %w", m.Start, m.End, err))
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

// Run gives memory back, until ctx ends, at the first idle interval
// after the start and after each burst of work, and again after growing
// stretches of idle time (trigger, AgainFirst, Again): the
// executable's pages faulted back since the last release, when they grew
// by MinGrowthKB (the caller released them at the start with
// ReleaseExecutable), and the free pages the Go heap retains, when there
// are MinGrowthKB of them (debug.FreeOSMemory: a collection, then every
// free page returned). A burst of requests brings back the code it runs
// and grows the heap (the collector lets it reach twice what is live,
// and returns free pages slowly); an idle server gives both back a
// moment after. Measured on `herald serve` 2 s after creating 10,000
// streams: RssAnon 26 MB without, 20 MB with. Checking costs a
// getrusage(2) an interval. onErr hears of a failed release or reading.
func Run(ctx context.Context, interval time.Duration, onErr func(error)) {
	after, err := rssFileKB()
	if err != nil {
		onErr(err)
	}
	tr := trigger{armed: true, first: AgainFirst, most: Again}
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
		if !tr.tick(used, interval) {
			continue
		}
		if heapFreeKB() >= MinGrowthKB {
			debug.FreeOSMemory()
		}
		kb, err := rssFileKB()
		if err != nil {
			onErr(err)
			continue
		}
		if kb-after >= MinGrowthKB {
			if _, err := ReleaseExecutable(); err != nil {
				onErr(err)
			}
			if after, err = rssFileKB(); err != nil {
				onErr(err)
			}
		}
		// What giving back took is not a burst of work.
		cpu = cpuTime()
	}
}

// GiveBack gives back what the start of a process leaves: the Go heap's
// free pages, after a collection (debug.FreeOSMemory), then the
// executable's pages (ReleaseExecutable). The collection comes first: it
// reads the type data of every object and the function tables of every
// goroutine's frames, pages it would otherwise fault straight back.
func GiveBack() error {
	debug.FreeOSMemory()
	_, err := ReleaseExecutable()
	return err
}

// heapFreeKB is how much of the Go heap is free and still held from the
// operating system, in KB.
func heapFreeKB() int64 {
	s := []metrics.Sample{{Name: "/memory/classes/heap/free:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return int64(s[0].Value.Uint64() >> 10)
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
		return 0, fmt.Errorf("idlemem: %w", err)
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return 0, fmt.Errorf("idlemem: /proc/self/statm: %q", b)
	}
	pages, err := strconv.ParseInt(f[2], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("idlemem: /proc/self/statm: %w", err)
	}
	return pages * int64(os.Getpagesize()) >> 10, nil
}
