package wake

import (
	"context"
	"net/url"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/heraldstreams/herald/internal/testhttp"
	"github.com/heraldstreams/herald/store"
	"github.com/heraldstreams/herald/subscription"
)

// TestOneEngineWakesBothKinds: a query-string subscription's consumer
// and a reserved-API subscription over the same stream are rows of one
// table; one append reaches both through the engine's one worker, each
// woken by its own front door, and a reserved-API wake's token opens
// nothing at the other front door's callback.
func TestOneEngineWakesBothKinds(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	synctest.Test(t, func(t *testing.T) {
		hook := &testhttp.Receiver[subscription.DSWebhookBody]{}
		r := newDSRig(t, dir, hook)
		defer r.crash()
		ctx := context.Background()
		r.create("both", `{"type":"webhook","pattern":"events/*","webhook":{"url":"`+hookURL+`"}}`)
		if _, err := r.engine.CreateSubscription(ctx, &CreateSubscriptionParams{Caller: Platform, ID: "both",
			Pattern: "/v1/stream/events/*", Webhook: hookURL}); err != nil {
			t.Fatal(err)
		}
		r.stream("/v1/stream/events/a", "text/plain", "abc")
		synctest.Wait()
		var reserved, query []testhttp.Received[subscription.DSWebhookBody]
		for _, got := range hook.Requests() {
			if strings.Contains(string(got.Body), `"consumer_id"`) {
				query = append(query, got)
			} else {
				reserved = append(reserved, got)
			}
		}
		if len(reserved) != 1 || len(query) != 1 || reserved[0].Value.SubscriptionID != "both" || reserved[0].Value.Generation != 1 {
			t.Fatalf("wakes: %d of the reserved API (%+v), %d of the query-string subscription; want one each", len(reserved), reserved, len(query))
		}
		verifyDS(t, r.eng, reserved[0])
		linking, err := r.st.ConsumerListByStream(ctx, &store.ConsumerListByStreamParams{Path: "/v1/stream/events/a"})
		if err != nil || len(linking) != 2 {
			t.Fatalf("consumers of the stream: %+v, %v; want one of each kind", linking, err)
		}

		// The reserved-API wake's token names the consumer row
		// __ds/both: the query-string callback refuses it as a consumer
		// that is not its own, and the row is untouched.
		body := `{"epoch":1,"wake_id":"` + reserved[0].Value.WakeID + `","done":true}`
		if _, err := r.engine.Callback(ctx, &CallbackParams{ConsumerID: url.PathEscape("__ds/both"), Token: reserved[0].Value.CallbackToken,
			Body: []byte(body)}); err == nil {
			t.Fatal("the query-string callback accepted a reserved-API wake's token")
		}
		if v := r.get("both"); v.Generation != 1 || v.Status != "active" {
			t.Fatalf("the reserved-API subscription after the refused callback: %+v", v)
		}
		row, err := r.st.ConsumerGet(ctx, "__ds/both")
		if err != nil || row.Kind != store.ConsumerReserved || row.State != string(subscription.StateLive) && row.State != string(subscription.StateWaking) {
			t.Fatalf("the subscription's row: %+v, %v", row, err)
		}
	})
}
