package exepages

import (
	"fmt"
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

// TestShouldReleaseOnlyWhenIdleAndGrown: a release comes after an idle
// interval (under 1 % of a core) in which the pages grew by MinGrowthKB,
// never in a busy one nor for less growth.
func TestShouldReleaseOnlyWhenIdleAndGrown(t *testing.T) {
	t.Parallel()
	const s = time.Second
	for _, c := range []struct {
		cpu         time.Duration
		rss, after  int64
		wantRelease bool
	}{
		{cpu: 5 * time.Millisecond, rss: 9000, after: 5000, wantRelease: true},
		{cpu: 10 * time.Millisecond, rss: 5000 + MinGrowthKB, after: 5000, wantRelease: true},
		{cpu: 11 * time.Millisecond, rss: 9000, after: 5000},
		{cpu: 0, rss: 5000 + MinGrowthKB - 1, after: 5000},
		{cpu: 0, rss: 4000, after: 5000},
	} {
		if got := shouldRelease(c.cpu, s, c.rss, c.after); got != c.wantRelease {
			t.Errorf("shouldRelease(%v, 1s, %d, %d) = %v, want %v", c.cpu, c.rss, c.after, got, c.wantRelease)
		}
	}
}
