package claimrules

import (
	"testing"
	"time"
)

// The rate bucket refills at its rate up to its burst, allows whole
// tokens, and says how long until the next one.
func TestBucket(t *testing.T) {
	t.Parallel()
	const sec = int64(time.Second)
	b := Bucket{Tokens: Burst(2), At: 0}
	if b.Whole() != 1 || b.Wait(2) != 0 {
		t.Fatalf("full bucket = %+v", b)
	}
	b.Tokens--
	if b.Wait(2) != 500*time.Millisecond {
		t.Fatalf("wait = %v", b.Wait(2))
	}
	b = b.Refill(2, sec/4)
	if b.Whole() != 0 || b.Wait(2) != 250*time.Millisecond {
		t.Fatalf("after 250 ms = %+v", b)
	}
	if b = b.Refill(2, 10*sec); b.Tokens != 1 {
		t.Fatalf("refilled past the burst: %+v", b)
	}
	if b2 := b.Refill(2, sec); b2.Tokens != 1 || b2.At != 10*sec {
		t.Fatalf("a clock behind refilled: %+v", b2)
	}
	fast := Bucket{At: 0}.Refill(1000, 10*sec)
	if fast.Whole() != 100 {
		t.Fatalf("burst of 1000/s = %d, want a tenth of a second's worth", fast.Whole())
	}
	var tenths Bucket
	for i := int64(1); i <= 10; i++ {
		tenths = tenths.Refill(10, i*sec/100)
	}
	if tenths.Whole() != 1 {
		t.Fatalf("ten refills of a tenth = %v tokens", tenths.Tokens)
	}
}

// A batch of three counts POSTs: three deliveries take one token and one
// in-flight place.
func TestLimitsCountPOSTs(t *testing.T) {
	t.Parallel()
	l := Limits{MaxInFlight: 2, Rate: 1, Batch: 3}
	if l.PerPOST() != 3 || l.LeaseBound() != 6 || l.Tokens(4) != 2 || l.InFlight(4) != 2 || l.InFlight(0) != 0 {
		t.Fatalf("batch of 3: per %d, bound %d, tokens(4) %v, in flight(4) %d", l.PerPOST(), l.LeaseBound(), l.Tokens(4), l.InFlight(4))
	}
	one := Limits{}
	if one.PerPOST() != 1 || one.LeaseBound() != 0 || one.Tokens(5) != 5 {
		t.Fatalf("no limits: per %d, bound %d, tokens %v", one.PerPOST(), one.LeaseBound(), one.Tokens(5))
	}
}

func TestClaimAndGrantCounts(t *testing.T) {
	t.Parallel()
	two := Bucket{Tokens: 2}
	for _, c := range []struct {
		name string
		got  int
		want int
	}{
		{"claim without limits", Limits{}.ClaimCount(10, Bucket{}, false), 10},
		{"claim held", Limits{}.ClaimCount(10, two, true), 0},
		{"claim under a rate", Limits{Rate: 5}.ClaimCount(10, two, false), 2},
		{"claim under a rate, batches of 4", Limits{Rate: 5, Batch: 4}.ClaimCount(10, two, false), 8},
		{"grant without limits", Limits{}.GrantCount(7, 100, Bucket{}), 7},
		{"grant within in flight", Limits{MaxInFlight: 5}.GrantCount(7, 3, Bucket{}), 2},
		{"grant past in flight", Limits{MaxInFlight: 5}.GrantCount(7, 9, Bucket{}), 0},
		{"grant under a rate", Limits{Rate: 5}.GrantCount(7, 0, two), 2},
	} {
		if c.got != c.want {
			t.Errorf("%s = %d, want %d", c.name, c.got, c.want)
		}
	}
	if b := two.Take(Limits{Batch: 4}, 5); b.Tokens != 0 {
		t.Errorf("five deliveries in batches of four took %v tokens", 2-b.Tokens)
	}
}

// A claim waits for a batch to fill only while it is short, never batched
// before, and the hold since the earliest due has not passed.
func TestHoldUntil(t *testing.T) {
	t.Parallel()
	const hold = 100
	for _, c := range []struct {
		name          string
		hold          time.Duration
		batch         int
		due, earliest int64
		batched       bool
		now, want     int64
	}{
		{"no hold", 0, 4, 1, 10, false, 20, 0},
		{"no batch", hold, 1, 1, 10, false, 20, 0},
		{"nothing due", hold, 4, 0, 0, false, 20, 0},
		{"short batch", hold, 4, 2, 10, false, 20, 110},
		{"full batch", hold, 4, 4, 10, false, 20, 0},
		{"batched before", hold, 4, 2, 10, true, 20, 0},
		{"hold over", hold, 4, 2, 10, false, 110, 0},
	} {
		if got := HoldUntil(c.hold, c.batch, c.due, c.earliest, c.batched, c.now); got != c.want {
			t.Errorf("%s: HoldUntil = %d, want %d", c.name, got, c.want)
		}
	}
}
