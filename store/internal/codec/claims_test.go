package codec

import (
	"testing"
	"time"
)

// The rate bucket refills at its rate up to its burst, allows whole
// tokens, and says how long until the next one.
func TestBucket(t *testing.T) {
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
