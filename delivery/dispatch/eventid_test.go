package dispatch

import (
	"context"
	"regexp"
	"testing"
	"testing/synctest"
	"time"

	"github.com/heraldstreams/herald/store"
)

// Events appended without an id are named from one span per run and
// stream, grown page by page (not a span per page), and a replay of them
// that reaches back before the endpoint's first match names the older
// positions with a span of their own.
func TestEventIDSpansGrowWithTheStream(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t, nil)
		ctx := context.Background()
		appendOne := func() {
			t.Helper()
			if _, err := r.st.StreamAppend(ctx, &store.StreamAppendParams{Path: "/s", ContentType: "application/json",
				Data: []byte(`{"type":"a.b","data":1}` + "\n"), Messages: 1, Now: time.Now()}); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := r.st.StreamCreate(ctx, &store.StreamCreateParams{Path: "/s", ContentType: "application/json", Now: time.Now()}); err != nil {
			t.Fatal(err)
		}
		appendOne() // before the endpoint: not delivered, no span
		ep := r.endpoint(&CreateEndpointParams{Active: true})
		for range 3 {
			appendOne()
			synctest.Wait() // each append matched as a page of its own
		}
		st, err := r.st.StreamGet(ctx, &store.StreamGetParams{Path: "/s", Now: time.Now()})
		if err != nil {
			t.Fatal(err)
		}
		spans, err := r.st.EventIDSpans(ctx, &store.EventIDSpansParams{StreamID: st.ID, From: 0, To: st.Tail})
		if err != nil || len(spans) != 1 || spans[0].Start != 24 || spans[0].End != st.Tail {
			t.Fatalf("spans = %+v, %v; want one from 24 to %d", spans, err, st.Tail)
		}
		format := regexp.MustCompile(`^evt_[0-9a-f]{24}_(24|48|72)$`)
		got := r.rc.Requests()
		if len(got) != 3 {
			t.Fatalf("%d requests, want 3", len(got))
		}
		for _, g := range got {
			if !format.MatchString(g.Event.ID) {
				t.Fatalf("id %q is not evt_<24 hex>_<position>", g.Event.ID)
			}
		}
		if _, err := r.e.Replay(ctx, &ReplayParams{EndpointID: ep.ID, Stream: "/s", HasFrom: true}); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		spans, err = r.st.EventIDSpans(ctx, &store.EventIDSpansParams{StreamID: st.ID, From: 0, To: st.Tail})
		if err != nil || len(spans) != 2 || spans[0].Start != 0 || spans[0].End != 24 || spans[0].Nonce == spans[1].Nonce {
			t.Fatalf("spans after a replay from the start = %+v, %v", spans, err)
		}
		// The replay reaches back to the event appended before the
		// endpoint, and sends the three others with their first ids.
		again := map[string]bool{}
		for _, g := range r.rc.Requests()[3:] {
			again[g.Event.ID] = true
		}
		if len(again) != 4 || !again["evt_"+spans[0].Nonce+"_0"] {
			t.Fatalf("replay sent %v, want 4 events, one of them evt_%s_0", again, spans[0].Nonce)
		}
		for _, g := range got {
			if !again[g.Event.ID] {
				t.Fatalf("replay did not send %q again (sent %v)", g.Event.ID, again)
			}
		}
	})
}
