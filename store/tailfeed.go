package store

import "sync"

// keptTailBuffer bounds the capacity of a buffer a TailFeed keeps for
// reuse: a burst may grow one to the feed's bound, and an idle feed
// should not hold that much.
const keptTailBuffer = 1024

// TailFeed is one listener's feed of tail changes (Notifier.Listen). The
// changes wait in a buffer that grows with the backlog up to the bound
// given, rather than being allocated at that bound up front: the engines
// ask for room for tens of thousands of changes to ride out a burst, and
// an idle server should not hold megabytes for it. Past the bound the
// oldest change is dropped and the next Take says so. One goroutine takes
// from a feed; any may publish to it.
type TailFeed struct {
	ready chan struct{}
	bound int

	mu      sync.Mutex
	pending []TailChange // pending[head:] wait to be taken
	head    int
	spare   []TailChange // the buffer the last Take returned, reused
	dropped bool
}

// NewTailFeed returns an empty feed that holds at most bound changes (at
// least 1). Backends get theirs from a Hub; tests may feed one directly.
func NewTailFeed(bound int) *TailFeed {
	return &TailFeed{ready: make(chan struct{}, 1), bound: max(bound, 1)}
}

// Ready returns a channel that receives when changes wait to be taken.
func (f *TailFeed) Ready() <-chan struct{} { return f.ready }

// Take returns the changes published since the last Take, oldest first,
// and whether some were dropped meanwhile. The slice is valid until the
// next Take.
func (f *TailFeed) Take() (changes []TailChange, dropped bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	changes, dropped = f.pending[f.head:], f.dropped
	next := f.spare[:0]
	if cap(f.pending) <= keptTailBuffer {
		f.spare = f.pending
	} else {
		f.spare = nil
	}
	f.pending, f.head, f.dropped = next, 0, false
	return changes, dropped
}

// Publish adds changes to the feed, dropping the oldest past its bound,
// and signals Ready.
func (f *TailFeed) Publish(changes ...TailChange) {
	if len(changes) == 0 {
		return
	}
	f.mu.Lock()
	for _, c := range changes {
		if len(f.pending)-f.head >= f.bound {
			f.pending[f.head] = TailChange{} // let the dropped change's strings go
			f.head++
			f.dropped = true
			if f.head >= f.bound {
				// Move the kept changes down, once per bound's worth of
				// drops, so the buffer does not grow past twice the bound.
				n := copy(f.pending, f.pending[f.head:])
				clear(f.pending[n:])
				f.pending, f.head = f.pending[:n], 0
			}
		}
		f.pending = append(f.pending, c)
	}
	f.mu.Unlock()
	select {
	case f.ready <- struct{}{}:
	default:
	}
}
