package storetest

import (
	"context"
	"errors"
	"testing"

	"github.com/heraldstreams/herald/store"
)

// testProducerClose: once a producer closed a stream, only the retry of
// that exact (producer, epoch, seq) succeeds, echoing it; every other
// producer request, a close-only one included, is a ClosedError.
func testProducerClose(t *testing.T, f Factory) {
	s := f.Open(t)
	ctx := context.Background()
	mustCreate(t, s, &store.StreamCreateParams{Path: "/pc", ContentType: "text/plain"})
	closeBy := func(p *store.Producer) (*store.StreamAppendResult, error) {
		return s.StreamAppend(ctx, &store.StreamAppendParams{Path: "/pc", Close: true, Producer: p, Now: t0})
	}
	p1 := store.Producer{ID: "p1", Epoch: 0, Seq: 0}
	if res, err := closeBy(&p1); err != nil || res.Outcome != store.Closed || !res.Stream.Closed || res.ProducerSeq != 0 {
		t.Fatalf("producer close = %+v, %v", res, err)
	}
	if res, err := closeBy(&p1); err != nil || res.Outcome != store.Duplicate || res.ProducerEpoch != 0 || res.ProducerSeq != 0 {
		t.Fatalf("retry of the producer close = %+v, %v", res, err)
	}
	for _, p := range []store.Producer{{ID: "p2", Epoch: 0, Seq: 0}, {ID: "p1", Epoch: 0, Seq: 1}, {ID: "p1", Epoch: 1, Seq: 0}} {
		_, err := closeBy(&p)
		var ce *store.ClosedError
		if !errors.As(err, &ce) || ce.Tail != 0 {
			t.Errorf("close by %+v after p1 closed = %v, want a ClosedError", p, err)
		}
	}
	// Without producer headers, closing again stays harmless.
	if res, err := closeBy(nil); err != nil || res.Outcome != store.Closed {
		t.Fatalf("plain close of the closed stream = %+v, %v", res, err)
	}
}

// testContentTypeKept: a stream keeps its content type as created,
// parameters included, and matches requests by media type.
func testContentTypeKept(t *testing.T, f Factory) {
	s := f.Open(t)
	ctx := context.Background()
	const ct = "text/plain; charset=utf-8"
	mustCreate(t, s, &store.StreamCreateParams{Path: "/ct", ContentType: ct})
	if res, err := s.StreamCreate(ctx, &store.StreamCreateParams{Path: "/ct", ContentType: "text/plain", Now: t0}); err != nil || res.Created {
		t.Fatalf("create again by media type = %+v, %v", res, err)
	}
	res := mustAppend(t, s, &store.StreamAppendParams{Path: "/ct", ContentType: "TEXT/plain", Data: []byte("a")})
	if res.Stream.ContentType != ct {
		t.Fatalf("append answered content type %q", res.Stream.ContentType)
	}
	_, err := s.StreamAppend(ctx, &store.StreamAppendParams{Path: "/ct", ContentType: "text/csv; charset=utf-8", Data: []byte("b"), Now: t0})
	expectErr(t, err, store.ErrContentTypeMismatch)
	fork := mustCreate(t, s, &store.StreamCreateParams{Path: "/ct-fork", ForkSource: "/ct", ForkOffset: -1})
	if fork.ContentType != ct {
		t.Fatalf("fork content type = %q", fork.ContentType)
	}
	s = f.Reopen(t, s)
	got, err := s.StreamGet(ctx, &store.StreamGetParams{Path: "/ct", Now: t0})
	if err != nil || got.ContentType != ct {
		t.Fatalf("after reopen = %+v, %v", got, err)
	}
}
