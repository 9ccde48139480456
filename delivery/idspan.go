package delivery

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"strconv"
)

// IDSpan names the events appended without an id at the positions
// [Start, End) of one stream: the event at pos is evt_<Nonce>_<pos>
// (evt_<stream id>_<pos> for a span stored before spans had nonces). Run
// names the engine run that created it: only that run extends it, so
// positions appended after a backup was taken and again after it was
// restored get different ids.
type IDSpan struct {
	Start, End int64
	Nonce      string
	Run        string
}

// IDSpanWrite is a span to store: inserted when ExtendFrom is 0, else
// the stored span of the same Start and Run, which ended at ExtendFrom,
// grown to Span.End.
type IDSpanWrite struct {
	Span       IDSpan
	ExtendFrom int64
}

// CoverIDSpans covers the page [from, to) of a stream with spans, given
// the stored spans that touch it (in order of Start): a gap right after a
// span of this run extends it, any other gap gets a new span of this run
// whose nonce is nonce(start). It returns the spans that cover the page
// and the writes that store the new and grown ones.
func CoverIDSpans(stored []IDSpan, from, to int64, run string, nonce func(start int64) string) ([]IDSpan, []IDSpanWrite) {
	spans := stored
	var writes []IDSpanWrite
	fill := func(start, end int64, before int) {
		if before >= 0 {
			if sp := &spans[before]; sp.End == start && sp.Run == run {
				from := sp.End
				sp.End = end
				writes = append(writes, IDSpanWrite{Span: *sp, ExtendFrom: from})
				return
			}
		}
		sp := IDSpan{Start: start, End: end, Nonce: nonce(start), Run: run}
		spans = append(spans, sp)
		writes = append(writes, IDSpanWrite{Span: sp})
	}
	at := from
	before := -1 // index in spans of the span that ends at `at`, if any
	for i, sp := range stored {
		if sp.End < at {
			continue
		}
		if sp.Start > at {
			fill(at, sp.Start, before)
		}
		at, before = sp.End, i
	}
	if at < to {
		fill(at, to, before)
	}
	return spans, writes
}

// SpanNonce is the nonce of a new span of a run starting at start: an
// HMAC under the run's random key, so it is as unpredictable and unique as
// a random one, yet the same if a page is done again after its enqueue
// failed (the events a send already carried keep their ids).
func SpanNonce(runKey []byte, streamID, start int64) string {
	var msg [16]byte
	binary.BigEndian.PutUint64(msg[:8], uint64(streamID))
	binary.BigEndian.PutUint64(msg[8:], uint64(start))
	mac := hmac.New(sha256.New, runKey)
	mac.Write(msg[:])
	return hex.EncodeToString(mac.Sum(nil)[:12])
}

// SpanEventID is the id of the event at pos in sp, a span of the stream
// streamID.
func SpanEventID(sp *IDSpan, streamID, pos int64) string {
	if sp.Nonce == "" {
		return "evt_" + strconv.FormatInt(streamID, 10) + "_" + strconv.FormatInt(pos, 10)
	}
	return "evt_" + sp.Nonce + "_" + strconv.FormatInt(pos, 10)
}
