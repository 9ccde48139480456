package dispatch

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"strconv"

	"github.com/heraldstreams/herald/store"
)

// pageIDs names the events of one page of a stream, [from, to), that were
// appended without an id, from the stream's id spans (see
// store.EventIDSpan). It reads the spans on the first event that needs
// one (a page of events that all carry ids costs nothing), covers what no
// span covers with a span of this run, and leaves the spans to store, in
// the enqueue that stores the deliveries, in writes. The stream's
// matching (or replay) is the only writer while it runs; a concurrent one
// makes the enqueue fail with store.ErrCursorConflict, and the page is
// done again.
type pageIDs struct {
	e        *Engine
	streamID int64
	from, to int64
	loaded   bool
	spans    []store.EventIDSpan
	writes   []store.EventIDSpanWrite
}

func (e *Engine) newPageIDs(streamID, from, to int64) *pageIDs {
	return &pageIDs{e: e, streamID: streamID, from: from, to: to}
}

// id returns the id of the event whose message starts at pos.
func (p *pageIDs) id(ctx context.Context, pos int64) (string, error) {
	if !p.loaded {
		if err := p.load(ctx); err != nil {
			return "", err
		}
		p.loaded = true
	}
	for i := range p.spans {
		if sp := &p.spans[i]; sp.Start <= pos && pos < sp.End {
			return spanEventID(sp, pos), nil
		}
	}
	return "", fmt.Errorf("delivery: no id span covers position %d of stream %d", pos, p.streamID)
}

// load reads the spans that touch the page and fills its gaps.
func (p *pageIDs) load(ctx context.Context) error {
	stored, err := p.e.st.EventIDSpans(ctx, &store.EventIDSpansParams{StreamID: p.streamID, From: p.from, To: p.to})
	if err != nil {
		return err
	}
	p.spans = stored
	at := p.from
	before := -1 // index in p.spans of the span that ends at `at`, if any
	for i, sp := range stored {
		if sp.End < at {
			continue
		}
		if sp.Start > at {
			p.fill(at, sp.Start, before)
		}
		at, before = sp.End, i
	}
	if at < p.to {
		p.fill(at, p.to, before)
	}
	return nil
}

// fill covers [start, end) with a span: the one before it when this run
// made it and it ends at start, else a new one with a fresh nonce. (A new
// run, after a restart or a restore from a backup, never extends an older
// run's span: positions appended after a backup was taken and again after
// it was restored get different ids.)
func (p *pageIDs) fill(start, end int64, before int) {
	if before >= 0 {
		if sp := &p.spans[before]; sp.End == start && sp.Run == p.e.run {
			from := sp.End
			sp.End = end
			p.writes = append(p.writes, store.EventIDSpanWrite{Span: *sp, ExtendFrom: from})
			return
		}
	}
	sp := store.EventIDSpan{StreamID: p.streamID, Start: start, End: end, Nonce: p.e.spanNonce(p.streamID, start), Run: p.e.run}
	p.spans = append(p.spans, sp)
	p.writes = append(p.writes, store.EventIDSpanWrite{Span: sp})
}

// spanNonce is the nonce of a new span of this run starting at start: an
// HMAC under the run's random key, so it is as unpredictable and unique as
// a random one, yet the same if the page is done again after its enqueue
// failed (the events a fresh send already carried keep their ids).
func (e *Engine) spanNonce(streamID, start int64) string {
	var msg [16]byte
	binary.BigEndian.PutUint64(msg[:8], uint64(streamID))
	binary.BigEndian.PutUint64(msg[8:], uint64(start))
	mac := hmac.New(sha256.New, e.runKey[:])
	mac.Write(msg[:])
	return hex.EncodeToString(mac.Sum(nil)[:12])
}

// spanEventID is the id of the event at pos in sp.
func spanEventID(sp *store.EventIDSpan, pos int64) string {
	if sp.Nonce == "" {
		return "evt_" + strconv.FormatInt(sp.StreamID, 10) + "_" + strconv.FormatInt(pos, 10)
	}
	return "evt_" + sp.Nonce + "_" + strconv.FormatInt(pos, 10)
}
