package sqlstore

// RangeSource is how a backend holds its streams (S: SQLite's cache
// entry, PostgreSQL's row) for ReadRange.
type RangeSource[S any] interface {
	// Fork returns s's fork position, ok false when s is not a fork.
	Fork(s S) (position int64, ok bool)
	// Source returns the stream s was forked from.
	Source(s S) (S, error)
	// Chunks adds to r (Range.Add) the stored chunks of s that end
	// after r's window starts and start before it ends, in order, while
	// Add says more.
	Chunks(s S, r *Range) error
}

// Range is the data ReadRange gathers.
type Range struct {
	// Max bounds Out; 0 is no bound. At least one chunk is read when
	// data exists, whatever its size.
	Max int
	// Out is the data gathered.
	Out []byte
	// counted is data gathered elsewhere (Count), which counts toward
	// Max as Out does.
	counted int
	// from and end are the window being read.
	from, end int64
	// stopped: the source ended the read short of Max (Stop).
	stopped bool
}

// Window is the positions [from, end) being read.
func (r *Range) Window() (from, end int64) { return r.from, r.end }

// Add appends what of a chunk [start, stop) lies in the window, and
// reports whether more is wanted. data is not kept.
func (r *Range) Add(start, stop int64, data []byte) (more bool) {
	lo, hi := max(r.from, start)-start, min(r.end, stop)-start
	if r.Out == nil {
		r.Out = make([]byte, 0, min(int64(r.Max)+int64(len(data)), r.end-r.from))
	}
	r.Out = append(r.Out, data[lo:hi]...)
	return !r.full()
}

// Room is how many more bytes Out takes before it reaches Max; 0 is no
// bound. A source that reads ahead stops at the chunk that fills it.
func (r *Range) Room() int {
	if r.Max <= 0 {
		return 0
	}
	return max(r.Max-r.Len(), 1)
}

// Count records n bytes gathered outside Out (a source that hands out
// where its bytes lie rather than the bytes); they count toward Max.
func (r *Range) Count(n int) { r.counted += n }

// Stop ends the read where it is, short of Max: a source that hands out
// where its bytes lie stops at as many pieces as one read may hold, and
// nothing after them (a fork's own data after its source's) may be
// gathered.
func (r *Range) Stop() { r.stopped = true }

// Len is the data gathered: Out and what Count recorded.
func (r *Range) Len() int { return len(r.Out) + r.counted }

// Fill appends n bytes to Out, which read writes into the slice it is
// given: a source that reads from files reads straight into Out.
func (r *Range) Fill(n int, read func(dst []byte) error) error {
	if n == 0 {
		return nil
	}
	if r.Out == nil {
		r.Out = make([]byte, 0, n)
	}
	at := len(r.Out)
	r.Out = append(r.Out, make([]byte, n)...)
	return read(r.Out[at:])
}

// full reports whether Out reached Max, or the source stopped the read.
func (r *Range) full() bool { return r.stopped || (r.Max > 0 && r.Len() >= r.Max) }

// ReadRange appends the data of [from, end) of s to r.Out: a fork's data
// below its fork position is its source's, stitched in front of its own.
func ReadRange[S any, R RangeSource[S]](src R, r *Range, s S, from, end int64) error {
	if fp, ok := src.Fork(s); ok && from < fp {
		source, err := src.Source(s)
		if err != nil {
			return err
		}
		if err := ReadRange(src, r, source, from, min(end, fp)); err != nil {
			return err
		}
		if r.full() {
			return nil
		}
		from = fp
	}
	if from >= end {
		return nil
	}
	r.from, r.end = from, end
	return src.Chunks(s, r)
}
