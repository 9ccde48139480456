package dispatch

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/heraldstreams/herald/store"
)

// The lease book asks for a release only after a write failed, keeps the
// tokens being sent on, and bounds the release by the earliest write
// still under way: its leases, whose answer is to come, are not ended.
func TestLeaseBookOrphans(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	at := t0
	clock := func() time.Time { return at }
	b := newLeaseBook()
	claim, _ := b.begin(clock)
	b.end(claim, []store.Delivery{{LeaseToken: 7}, {LeaseToken: 7}, {LeaseToken: 8}}, nil)
	if _, ok := b.orphans(clock, time.Minute); ok {
		t.Fatal("a release asked for while no write failed")
	}
	at = t0.Add(time.Second)
	lost, _ := b.begin(clock)
	at = t0.Add(2 * time.Second)
	underWay, _ := b.begin(clock)
	b.end(lost, nil, errors.New("connection reset"))
	b.done([]store.Delivery{{LeaseToken: 7}, {LeaseToken: 8}})
	at = t0.Add(3 * time.Second)
	p, ok := b.orphans(clock, time.Minute)
	if !ok || !slices.Equal(p.Keep, []int64{7}) || !p.Before.Equal(t0.Add(2*time.Second+time.Minute)) || !p.Now.Equal(at) {
		t.Fatalf("orphans = %+v, %v; want token 7 kept, before the write under way's lease end", p, ok)
	}
	if _, ok := b.orphans(clock, time.Minute); ok {
		t.Fatal("a second release asked for without a new failure")
	}
	b.end(underWay, nil, nil)
	b.failed()
	at = t0.Add(4 * time.Second)
	if p, ok := b.orphans(clock, time.Minute); !ok || !p.Before.Equal(at.Add(time.Minute)) {
		t.Fatalf("after a failed release, orphans = %+v, %v; want a release bounded by now", p, ok)
	}
}
