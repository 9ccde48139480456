package storetest

import (
	"context"
	"testing"

	"github.com/heraldstreams/herald/store"
)

func testEventPublish(t *testing.T, f Factory) {
	s := f.Open(t)
	ctx := context.Background()
	p := &store.EventPublishParams{Stream: "/events", EventID: "evt_1", Data: []byte(`{"id":"evt_1"}` + "\n"), Now: t0}
	res, err := s.EventPublish(ctx, p)
	if err != nil || res.Duplicate || res.Position != 0 || res.Stream != "/events" {
		t.Fatalf("publish = %+v, %v", res, err)
	}
	res, err = s.EventPublish(ctx, &store.EventPublishParams{Stream: "/events", EventID: "evt_2", Data: []byte(`{"id":"evt_2"}` + "\n"), Now: t0})
	if err != nil || res.Position != 15 {
		t.Fatalf("second = %+v, %v", res, err)
	}
	s = f.Reopen(t, s)
	res, err = s.EventPublish(ctx, p)
	if err != nil || !res.Duplicate || res.Position != 0 {
		t.Fatalf("duplicate = %+v, %v", res, err)
	}
	if got := readAll(t, s, "/events", -1, t0); string(got) != `{"id":"evt_1"}`+"\n"+`{"id":"evt_2"}`+"\n" {
		t.Fatalf("stream = %q", got)
	}
	mustCreate(t, s, &store.StreamCreateParams{Path: "/text", ContentType: "text/plain"})
	_, err = s.EventPublish(ctx, &store.EventPublishParams{Stream: "/text", EventID: "evt_3", Data: []byte("{}\n"), Now: t0})
	expectErr(t, err, store.ErrContentTypeMismatch)
	// The refused event's id is not recorded.
	res, err = s.EventPublish(ctx, &store.EventPublishParams{Stream: "/events", EventID: "evt_3", Data: []byte("{}\n"), Now: t0})
	if err != nil || res.Duplicate {
		t.Fatalf("id of a refused event = %+v, %v", res, err)
	}
}

// DeliveryComplete with ClaimLimit records outcomes and claims the next
// deliveries in one call.

// Id spans are written with the deliveries named from them, read back by
// range, extended only as read, never overlap, and survive a reopen.
func testEventIDSpans(t *testing.T, f Factory) {
	s := f.Open(t)
	ctx := context.Background()
	mustEndpoint(t, s, endpoint("ep"))
	spans := func(from, to int64) []store.EventIDSpan {
		t.Helper()
		out, err := s.EventIDSpans(ctx, &store.EventIDSpansParams{StreamID: 7, From: from, To: to})
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	enqueue := func(event string, ws ...store.EventIDSpanWrite) error {
		_, err := s.DeliveryEnqueue(ctx, &store.DeliveryEnqueueParams{Stream: "/s", Spans: ws, Deliveries: []store.Delivery{delivery("ep", event, 0)}, Now: t0})
		return err
	}
	a := store.EventIDSpan{StreamID: 7, Start: 10, End: 20, Nonce: "n1", Run: "r1"}
	if err := enqueue("e1", store.EventIDSpanWrite{Span: a}); err != nil {
		t.Fatal(err)
	}
	if got := spans(0, 100); len(got) != 1 || got[0] != a {
		t.Fatalf("spans = %+v", got)
	}
	// A span that ends at From is returned (it may be extended); one that
	// starts at To is not.
	if got := spans(20, 30); len(got) != 1 {
		t.Fatalf("spans from its end = %+v", got)
	}
	if got := spans(0, 10); len(got) != 0 {
		t.Fatalf("spans before its start = %+v", got)
	}
	for _, bad := range []store.EventIDSpanWrite{
		{Span: store.EventIDSpan{StreamID: 7, Start: 15, End: 25, Nonce: "n2", Run: "r2"}},                 // overlaps
		{Span: store.EventIDSpan{StreamID: 7, Start: 5, End: 11, Nonce: "n2", Run: "r2"}},                  // overlaps
		{Span: store.EventIDSpan{StreamID: 7, Start: 10, End: 30, Nonce: "n1", Run: "r2"}, ExtendFrom: 20}, // another run
		{Span: store.EventIDSpan{StreamID: 7, Start: 10, End: 30, Nonce: "n1", Run: "r1"}, ExtendFrom: 18}, // not as read
	} {
		expectErr(t, enqueue("e2", bad), store.ErrCursorConflict)
		if byEvent(t, s, "ep", "e2") != nil {
			t.Fatalf("a conflicting span %+v let its delivery be written", bad)
		}
	}
	grown := a
	grown.End = 30
	other := store.EventIDSpan{StreamID: 7, Start: 0, End: 10, Nonce: "n3", Run: "r2"}
	if err := enqueue("e2", store.EventIDSpanWrite{Span: grown, ExtendFrom: 20}, store.EventIDSpanWrite{Span: other}); err != nil {
		t.Fatal(err)
	}
	s = f.Reopen(t, s)
	if got := spans(0, 100); len(got) != 2 || got[0] != other || got[1] != grown {
		t.Fatalf("after reopen spans = %+v", got)
	}
	if got, err := s.EventIDSpans(ctx, &store.EventIDSpansParams{StreamID: 8, From: 0, To: 100}); err != nil || len(got) != 0 {
		t.Fatalf("another stream's spans = %+v, %v", got, err)
	}
	// Pruning removes the spans of streams that no longer exist (7 never
	// did) and keeps those of streams that do.
	live := mustCreate(t, s, &store.StreamCreateParams{Path: "/live", ContentType: "application/json", Now: t0})
	kept := store.EventIDSpan{StreamID: live.ID, Start: 0, End: 5, Nonce: "n4", Run: "r2"}
	if err := enqueue("e3", store.EventIDSpanWrite{Span: kept}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.DeliveryPrune(ctx, &store.DeliveryPruneParams{Before: t0, Limit: 10}); err != nil {
		t.Fatal(err)
	}
	if got := spans(0, 100); len(got) != 0 {
		t.Fatalf("spans of a missing stream after pruning = %+v", got)
	}
	if got, err := s.EventIDSpans(ctx, &store.EventIDSpansParams{StreamID: live.ID, From: 0, To: 100}); err != nil || len(got) != 1 || got[0] != kept {
		t.Fatalf("spans of a live stream after pruning = %+v, %v", got, err)
	}
}
