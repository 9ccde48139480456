package dispatch

import (
	"context"
	"fmt"

	"github.com/heraldstreams/herald/delivery"
	"github.com/heraldstreams/herald/store"
)

// pageIDs names the events of one page of a stream, [from, to), that were
// appended without an id, from the stream's id spans (see
// store.EventIDSpan and delivery.CoverIDSpans). It reads the spans on the
// first event that needs one (a page of events that all carry ids costs
// nothing), covers what no span covers with a span of this run, and
// leaves the spans to store, in the enqueue that stores the deliveries,
// in writes. The stream's matching (or replay) is the only writer while
// it runs; a concurrent one makes the enqueue fail with
// store.ErrCursorConflict, and the page is done again.
type pageIDs struct {
	e        *Engine
	streamID int64
	from, to int64
	loaded   bool
	spans    []delivery.IDSpan
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
			return delivery.SpanEventID(sp, p.streamID, pos), nil
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
	spans := make([]delivery.IDSpan, len(stored))
	for i, sp := range stored {
		spans[i] = delivery.IDSpan{Start: sp.Start, End: sp.End, Nonce: sp.Nonce, Run: sp.Run}
	}
	nonce := func(start int64) string { return delivery.SpanNonce(p.e.runKey[:], p.streamID, start) }
	var writes []delivery.IDSpanWrite
	p.spans, writes = delivery.CoverIDSpans(spans, p.from, p.to, p.e.run, nonce)
	for _, w := range writes {
		sp := store.EventIDSpan{StreamID: p.streamID, Start: w.Span.Start, End: w.Span.End, Nonce: w.Span.Nonce, Run: w.Span.Run}
		p.writes = append(p.writes, store.EventIDSpanWrite{Span: sp, ExtendFrom: w.ExtendFrom})
	}
	return nil
}
