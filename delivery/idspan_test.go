package delivery

import (
	"reflect"
	"strconv"
	"testing"
)

func testNonce(start int64) string { return "n" + strconv.FormatInt(start, 10) }

// A page's gaps are covered: right after a span of this run by growing
// it, anywhere else (and after another run's span) by a new span.
func TestCoverIDSpans(t *testing.T) {
	t.Parallel()
	stored := []IDSpan{
		{Start: 10, End: 20, Nonce: "old", Run: "r0"},
		{Start: 30, End: 40, Nonce: "mine", Run: "r1"},
	}
	spans, writes := CoverIDSpans(stored, 0, 50, "r1", testNonce)
	wantSpans := []IDSpan{
		{Start: 10, End: 20, Nonce: "old", Run: "r0"},
		{Start: 30, End: 50, Nonce: "mine", Run: "r1"},
		{Start: 0, End: 10, Nonce: "n0", Run: "r1"},
		{Start: 20, End: 30, Nonce: "n20", Run: "r1"},
	}
	wantWrites := []IDSpanWrite{
		{Span: IDSpan{Start: 0, End: 10, Nonce: "n0", Run: "r1"}},
		{Span: IDSpan{Start: 20, End: 30, Nonce: "n20", Run: "r1"}},
		{Span: IDSpan{Start: 30, End: 50, Nonce: "mine", Run: "r1"}, ExtendFrom: 40},
	}
	if !reflect.DeepEqual(spans, wantSpans) || !reflect.DeepEqual(writes, wantWrites) {
		t.Fatalf("spans %+v\nwrites %+v", spans, writes)
	}

	// A covered page writes nothing; another run never grows the span.
	if _, w := CoverIDSpans([]IDSpan{{Start: 0, End: 10, Run: "r1"}}, 2, 8, "r2", testNonce); w != nil {
		t.Fatalf("a covered page writes %+v", w)
	}
	_, w := CoverIDSpans([]IDSpan{{Start: 0, End: 10, Nonce: "a", Run: "r1"}}, 5, 15, "r2", testNonce)
	if want := []IDSpanWrite{{Span: IDSpan{Start: 10, End: 15, Nonce: "n10", Run: "r2"}}}; !reflect.DeepEqual(w, want) {
		t.Fatalf("after another run's span: %+v, want %+v", w, want)
	}
}

// Nonces are the same for the same run key, stream and start, and differ
// otherwise; an id names the nonce (or, for a span without one, the
// stream) and the position.
func TestSpanNonceAndEventID(t *testing.T) {
	t.Parallel()
	k1, k2 := []byte("key one"), []byte("key two")
	a := SpanNonce(k1, 7, 24)
	if len(a) != 24 || a != SpanNonce(k1, 7, 24) {
		t.Fatalf("nonce %q is not 24 hex digits, or not stable", a)
	}
	for _, other := range []string{SpanNonce(k2, 7, 24), SpanNonce(k1, 8, 24), SpanNonce(k1, 7, 48)} {
		if other == a {
			t.Fatalf("two spans share the nonce %q", a)
		}
	}
	if got := SpanEventID(&IDSpan{Nonce: a}, 7, 48); got != "evt_"+a+"_48" {
		t.Fatalf("id %q", got)
	}
	if got := SpanEventID(&IDSpan{}, 7, 48); got != "evt_7_48" {
		t.Fatalf("id of a span without a nonce %q", got)
	}
}
