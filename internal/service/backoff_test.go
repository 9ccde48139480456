package service

import (
	"testing"
	"time"
)

// TestBackoff: Base first and after a busy run, doubling up to Max
// after idle ones, zero after Again, and Base (not zero) after an idle
// run that follows an immediate one.
func TestBackoff(t *testing.T) {
	t.Parallel()
	b := &Backoff{Base: time.Minute, Max: 5 * time.Minute}
	want := func(d time.Duration) {
		t.Helper()
		if got, ok := b.Next(); !ok || got != d {
			t.Fatalf("Next = %v, %v; want %v", got, ok, d)
		}
	}
	want(time.Minute)
	for _, d := range []time.Duration{2 * time.Minute, 4 * time.Minute, 5 * time.Minute, 5 * time.Minute} {
		b.Ran(false)
		want(d)
	}
	b.Ran(true)
	want(time.Minute)
	b.Again()
	want(0)
	b.Ran(false)
	want(time.Minute)
}
