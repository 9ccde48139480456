// Package idlemem gives memory back to the operating system once the
// process has started and whenever it goes idle after a burst of work:
// the resident pages of the executable's code and read-only data, and
// the Go heap's free pages.
//
// A Go binary's package initialisers are spread over its whole text, and
// the kernel maps the page-cache pages around each page a process touches
// (fault-around, 64 KB by default), so by the time `herald serve` listens
// nearly all of Herald's 30 MB of code and read-only data count in its
// RSS, though an idle server runs a small part of it. ReleaseExecutable unmaps
// those pages from the process (madvise MADV_DONTNEED). They stay in the
// page cache, clean and shared, and fault back on their next use.
package idlemem

// Mapping is one range of the process's address space as
// /proc/self/smaps describes it.
type Mapping struct {
	Start, End uint64
	// Perms is the mapping's permissions, such as "r-xp".
	Perms string
	// Path is the file mapped, empty for anonymous memory.
	Path string
	// AnonymousKB is how much of the mapping is anonymous memory (pages
	// copied on write, such as a dynamic binary's relocated read-only
	// data): those hold what the file does not, and are never released.
	AnonymousKB int64
}

// Releasable reports whether m may be released: a private mapping of the
// executable exe that is not writable and holds no anonymous page, so
// every page of it is a clean copy of the file, read back from the page
// cache on its next use. Writable mappings (the binary's data, its
// heap) and anonymous ones are never released: their pages are the
// process's own.
func (m Mapping) Releasable(exe string) bool {
	return exe != "" && m.Path == exe && len(m.Perms) == 4 &&
		m.Perms[0] == 'r' && m.Perms[1] == '-' && m.Perms[3] == 'p' &&
		m.AnonymousKB == 0 && m.End > m.Start
}
