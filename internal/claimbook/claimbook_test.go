package claimbook

import (
	"errors"
	"slices"
	"testing"
	"time"
)

// The book asks for a release only after a write failed, keeps the keys
// worked on, and bounds the release by the earliest write still under
// way: its claims, whose answer is to come, are not ended.
func TestOrphans(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	at := t0
	clock := func() time.Time { return at }
	var b Book[int64]
	claim, _ := b.Begin(clock)
	b.End(claim, []int64{7, 7, 8}, nil)
	if _, ok := b.Orphans(clock, time.Minute); ok {
		t.Fatal("a release asked for while no write failed")
	}
	at = t0.Add(time.Second)
	lost, _ := b.Begin(clock)
	at = t0.Add(2 * time.Second)
	underWay, now := b.Begin(clock)
	if !now.Equal(at) {
		t.Fatalf("a write's Now = %v, want the clock's %v", now, at)
	}
	b.End(lost, nil, errors.New("connection reset"))
	b.Done([]int64{7, 8})
	at = t0.Add(3 * time.Second)
	r, ok := b.Orphans(clock, time.Minute)
	if !ok || !slices.Equal(r.Keep, []int64{7}) || !r.Before.Equal(t0.Add(2*time.Second+time.Minute)) || !r.Now.Equal(at) {
		t.Fatalf("orphans = %+v, %v; want key 7 kept, before the write under way's lease end", r, ok)
	}
	if _, ok := b.Orphans(clock, time.Minute); ok {
		t.Fatal("a second release asked for without a new failure")
	}
	b.End(underWay, nil, nil)
	b.Lost()
	at = t0.Add(4 * time.Second)
	if r, ok := b.Orphans(clock, time.Minute); !ok || !r.Before.Equal(at.Add(time.Minute)) {
		t.Fatalf("after Lost, orphans = %+v, %v; want a release bounded by now", r, ok)
	}
}
