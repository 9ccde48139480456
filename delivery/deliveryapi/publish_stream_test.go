package deliveryapi

import (
	"context"
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	"github.com/heraldstreams/herald/store"
)

// TestAPIPublishToAStreamThatCannotTakeIt: an event published to a
// stream of another content type, a deleted or a closed stream is a 409
// with the publisher's code (docs/api.md, Events), never the stream
// routes' CONTENT_TYPE_MISMATCH or STREAM_NOT_FOUND.
func TestAPIPublishToAStreamThatCannotTakeIt(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t, nil)
		ctx, now := context.Background(), time.Now()
		create := func(p *store.StreamCreateParams) {
			t.Helper()
			p.Now = now
			if _, err := r.st.StreamCreate(ctx, p); err != nil {
				t.Fatal(err)
			}
		}
		create(&store.StreamCreateParams{Path: "/text", ContentType: "text/plain"})
		create(&store.StreamCreateParams{Path: "/closed", ContentType: "application/json", Closed: true})
		// A stream with a fork is soft-deleted: gone, not missing.
		create(&store.StreamCreateParams{Path: "/deleted", ContentType: "application/json"})
		create(&store.StreamCreateParams{Path: "/deleted-fork", ForkSource: "/deleted"})
		if err := r.st.StreamDelete(ctx, &store.StreamDeleteParams{Path: "/deleted", Now: now}); err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct {
			stream, code string
		}{
			{"/text", "STREAM_NOT_JSON"},
			{"/deleted", "STREAM_GONE"},
			{"/closed", "STREAM_CLOSED"},
		} {
			var out apiErr
			status := r.call("POST", "/_herald/v1/events", `{"type":"a.b","stream":"`+c.stream+`"}`, &out)
			if status != http.StatusConflict || out.Error.Code != c.code || out.Error.Message == "" {
				t.Errorf("publish to %s: %d %+v, want 409 %s", c.stream, status, out.Error, c.code)
			}
		}
	})
}
