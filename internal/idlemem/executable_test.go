package idlemem

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// smaps is a /proc/PID/smaps of a dynamically linked /opt/herald bin/herald
// (a path with a space), cut to the fields ParseSmaps reads and a few
// others.
const smaps = `00400000-0138d000 r-xp 00000000 fe:00 1094 /opt/herald bin/herald
Size:              15924 kB
Rss:               13108 kB
Anonymous:             0 kB
0138d000-024cb000 r--p 00f8d000 fe:00 1094 /opt/herald bin/herald
Rss:               14648 kB
Anonymous:             0 kB
024cb000-024cd000 r--p 020cb000 fe:00 1094 /opt/herald bin/herald
Rss:                   8 kB
Anonymous:             8 kB
024cd000-025c3000 rw-p 020cd000 fe:00 1094 /opt/herald bin/herald
Rss:                 736 kB
Anonymous:           120 kB
025c3000-04628000 rw-p 00000000 00:00 0
Rss:                 260 kB
Anonymous:           260 kB
7ff8fa80e000-7ff8fa964000 r-xp 00026000 fe:00 326269                     /usr/lib/x86_64-linux-gnu/libc.so.6
Rss:                 968 kB
Anonymous:             0 kB
7fa998948000-7fa998950000 rw-s 00000000 fe:00 9978254                    /data/herald.db-shm
Anonymous:             0 kB
7fa998950000-7fa998960000 r--s 00000000 fe:00 9978255                    /opt/herald bin/herald
Anonymous:             0 kB
7fff11cbd000-7fff11cde000 rw-p 00000000 00:00 0                          [stack]
Anonymous:           132 kB
`

// TestReleasablePicksOnlyCleanReadOnlyMappingsOfTheExecutable: of every
// mapping, only the executable's private, read-only ones without an
// anonymous page are released; never its data, the heap, another file,
// a shared mapping or relocated read-only data (pages copied on write).
func TestReleasablePicksOnlyCleanReadOnlyMappingsOfTheExecutable(t *testing.T) {
	t.Parallel()
	maps, err := ParseSmaps(strings.NewReader(smaps))
	if err != nil {
		t.Fatal(err)
	}
	if len(maps) != 9 {
		t.Fatalf("parsed %d mappings, want 9: %+v", len(maps), maps)
	}
	var picked []string
	for _, m := range maps {
		if m.Releasable("/opt/herald bin/herald") {
			picked = append(picked, fmt.Sprintf("%s %x-%x", m.Perms, m.Start, m.End))
		}
	}
	want := []string{"r-xp 400000-138d000", "r--p 138d000-24cb000"}
	if strings.Join(picked, ",") != strings.Join(want, ",") {
		t.Fatalf("released %v, want %v", picked, want)
	}
	if maps[2].AnonymousKB != 8 || maps[0].Path != "/opt/herald bin/herald" || maps[4].Path != "" || maps[8].Path != "[stack]" {
		t.Fatalf("parsed %+v", maps)
	}
	for _, m := range maps {
		if m.Releasable("") {
			t.Fatalf("%+v released without a known executable", m)
		}
	}
}

// TestParseSmapsRefusesABadAnonymousField: a field that is not a number
// is an error, not a mapping taken for clean.
func TestParseSmapsRefusesABadAnonymousField(t *testing.T) {
	t.Parallel()
	_, err := ParseSmaps(strings.NewReader("00400000-0138d000 r-xp 00000000 fe:00 1094 /bin/x\nAnonymous: many kB\n"))
	if err == nil {
		t.Fatal("parsed a bad Anonymous field")
	}
}

// TestTriggerReleasesOnceAfterEachBurst: memory is given back at the
// first idle interval (1 % of a core or less) after the start and after
// each burst (burstIntervals intervals in a row at 10 % or more), once;
// never in a busy interval, in one between the two, nor after a single
// busy interval (periodic work).
func TestTriggerReleasesOnceAfterEachBurst(t *testing.T) {
	t.Parallel()
	const s = time.Second
	ms := time.Millisecond
	tr := trigger{armed: true}
	for i, c := range []struct {
		cpu  time.Duration
		want bool
	}{
		{cpu: 50 * ms},             // the start's tail: busy
		{cpu: 10 * ms, want: true}, // idle: give back
		{cpu: 0},                   // still idle: already given back
		{cpu: 5 * ms},              // between: nothing
		{cpu: 300 * ms},            // periodic work: one busy interval
		{cpu: 1 * ms},              // idle: nothing to give back
		{cpu: 100 * ms},            // a burst: four busy intervals
		{cpu: 100 * ms},
		{cpu: 200 * ms},
		{cpu: 100 * ms},
		{cpu: 50 * ms}, // between: not yet
		{cpu: 11 * ms}, // between
		{cpu: 1 * ms, want: true},
		{cpu: 1 * ms},
	} {
		if got := tr.tick(c.cpu, s); got != c.want {
			t.Fatalf("interval %d (%v of CPU): gave back %v, want %v", i, c.cpu, got, c.want)
		}
	}
}

// With first and most set, an idle process gives back again after first
// of idle time since the release after a burst, then after waits twice
// as long each, up to most; intervals between idle and busy do not
// count, and a burst starts over.
func TestTriggerReleasesAgainAfterGrowingIdleTime(t *testing.T) {
	t.Parallel()
	const s = time.Second
	ms := time.Millisecond
	tr := trigger{armed: true, first: s, most: 4 * s}
	var got []int
	for i, cpu := range []time.Duration{
		0,             // 0: the start's release
		0,             // 1: 1 s idle
		0, 50 * ms, 0, // 2-4: 2 s idle, the between interval not counted
		0, 0, 0, 0, // 5-8: 4 s idle
		0, 0, 0, 0, // 9-12: 4 s idle, the most
		100 * ms, 100 * ms, 100 * ms, 100 * ms, // 13-16: a burst
		0, // 17: at once after it
		0, // 18: 1 s idle again
	} {
		if tr.tick(cpu, s) {
			got = append(got, i)
		}
	}
	if want := []int{0, 1, 4, 8, 12, 17, 18}; !slices.Equal(got, want) {
		t.Fatalf("gave back at intervals %v, want %v", got, want)
	}
}
