package sqlite

import (
	"errors"
	"reflect"
	"testing"

	"github.com/heraldstreams/herald/store"
	"github.com/heraldstreams/herald/streamrules"
)

// Entries read back as written, each field and each optional part; an
// entry cut anywhere is an error, never an entry of other values.
func TestSegmentEntriesRoundTrip(t *testing.T) {
	t.Parallel()
	in := []segEntry{
		{stream: 1, start: 0, n: 100, off: 32, accessedAt: 1700000000000000000},
		{stream: 2, start: 1 << 40, n: 0, off: 0, accessedAt: 5, closed: true,
			closedBy: &store.Producer{ID: "p", Epoch: 3, Seq: 9}, lastSeq: "0005",
			producerID: "p", producer: streamrules.ProducerState{Epoch: 3, LastSeq: 9}},
	}
	var p []byte
	for i := range in {
		p = appendEntry(p, &in[i])
	}
	r := entryReader{p: p}
	var out []segEntry
	for e := (segEntry{}); r.next(&e); {
		out = append(out, e)
	}
	if r.err != nil || !reflect.DeepEqual(in, out) {
		t.Fatalf("read %+v (%v), want %+v", out, r.err, in)
	}
	for cut := 1; cut < len(p); cut++ {
		r := entryReader{p: p[:cut]}
		n := 0
		for e := (segEntry{}); r.next(&e); {
			n++
		}
		if cut != len(appendEntry(nil, &in[0])) && !errors.Is(r.err, errBadEntry) {
			t.Fatalf("cut at %d of %d: %d entries, err %v", cut, len(p), n, r.err)
		}
	}
}
