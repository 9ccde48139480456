package idlemem

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// ParseSmaps reads the mappings of a /proc/PID/smaps text: each
// mapping's header line (range, permissions, offset, device, inode,
// path) and its Anonymous field.
func ParseSmaps(r io.Reader) ([]Mapping, error) {
	var maps []Mapping
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		if lo, hi, ok := parseRange(f[0]); ok && len(f) >= 5 {
			m := Mapping{Start: lo, End: hi, Perms: f[1]}
			if len(f) >= 6 {
				m.Path = afterFields(line, 5)
			}
			maps = append(maps, m)
			continue
		}
		if f[0] == "Anonymous:" && len(maps) > 0 && len(f) >= 2 {
			kb, err := strconv.ParseInt(f[1], 10, 64)
			if err != nil {
				return nil, fmt.Errorf("idlemem: smaps: %q: %w", line, err)
			}
			maps[len(maps)-1].AnonymousKB = kb
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("idlemem: smaps: %w", err)
	}
	return maps, nil
}

// parseRange parses a mapping's "start-end" hexadecimal range.
func parseRange(s string) (lo, hi uint64, ok bool) {
	a, b, found := strings.Cut(s, "-")
	if !found {
		return 0, 0, false
	}
	lo, err1 := strconv.ParseUint(a, 16, 64)
	hi, err2 := strconv.ParseUint(b, 16, 64)
	return lo, hi, err1 == nil && err2 == nil
}

// afterFields returns what follows the first n space-separated fields of
// line, trimmed: a mapping's path, which may hold spaces.
func afterFields(line string, n int) string {
	rest := line
	for range n {
		rest = strings.TrimLeft(rest, " \t")
		i := strings.IndexAny(rest, " \t")
		if i < 0 {
			return ""
		}
		rest = rest[i:]
	}
	return strings.TrimSpace(rest)
}
