package store

import (
	"strconv"
	"testing"
)

// A feed allocates for its backlog, not for its bound: an idle feed with
// room for 65,536 changes holds none, and a drained burst gives its
// buffer back.
func TestTailFeedGrowsWithTheBacklog(t *testing.T) {
	t.Parallel()
	f := NewTailFeed(1 << 16)
	if cap(f.pending) != 0 || cap(f.spare) != 0 {
		t.Fatalf("a new feed holds room for %d changes", cap(f.pending)+cap(f.spare))
	}
	for i := range 5000 {
		f.Publish(TailChange{Tail: int64(i)})
	}
	changes, dropped := f.Take()
	if len(changes) != 5000 || dropped || changes[4999].Tail != 4999 {
		t.Fatalf("took %d changes (dropped %t)", len(changes), dropped)
	}
	f.Take()
	if c := cap(f.pending) + cap(f.spare); c > keptTailBuffer {
		t.Fatalf("a drained feed keeps room for %d changes, want at most %d", c, keptTailBuffer)
	}
}

// Past its bound a feed drops the oldest changes, says so once, and its
// buffer stays within twice the bound however long it is not taken.
func TestTailFeedDropsTheOldest(t *testing.T) {
	t.Parallel()
	const bound = 8
	f := NewTailFeed(bound)
	for i := range 1000 {
		f.Publish(TailChange{Path: "/" + strconv.Itoa(i), Tail: int64(i)})
		if cap(f.pending) > 2*bound+bound {
			t.Fatalf("after %d changes the buffer holds room for %d", i+1, cap(f.pending))
		}
	}
	select {
	case <-f.Ready():
	default:
		t.Fatal("Ready did not fire")
	}
	changes, dropped := f.Take()
	if !dropped || len(changes) != bound || changes[0].Tail != 1000-bound || changes[bound-1].Tail != 999 {
		t.Fatalf("took %v (dropped %t)", changes, dropped)
	}
	f.Publish(TailChange{Tail: 1})
	if changes, dropped := f.Take(); dropped || len(changes) != 1 {
		t.Fatalf("after a take: %v (dropped %t)", changes, dropped)
	}
}
