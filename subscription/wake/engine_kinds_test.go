package wake

import (
	"context"
	"errors"
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
	inDSRig(t, func(t *testing.T, r *dsRig, hook *testhttp.Receiver[subscription.DSWebhookBody]) {
		ctx := context.Background()
		createBoth(t, r)
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

// TestOneLoopKeepsEachKindsInputs: the engine's one loop decides for
// rows of both kinds, and an input of one kind applied to a row of the
// other is refused as a consumer that is gone, with the row untouched: a
// reserved-API edit (which may change links) never reaches a
// query-string consumer, nor a query-string event a reserved row.
func TestOneLoopKeepsEachKindsInputs(t *testing.T) {
	t.Parallel()
	inDSRig(t, func(t *testing.T, r *dsRig, hook *testhttp.Receiver[subscription.DSWebhookBody]) {
		ctx := context.Background()
		r.stream("/v1/stream/events/a", "text/plain", "")
		createBoth(t, r)
		synctest.Wait()
		query := subscription.ConsumerID("both", "/v1/stream/events/a")
		rows := map[string]*store.Consumer{}
		for _, id := range []string{query, "__ds/both"} {
			row, err := r.st.ConsumerGet(ctx, id)
			if err != nil {
				t.Fatalf("the row %s: %v", id, err)
			}
			rows[id] = row
		}

		edited := false
		_, err := r.engine.apply(ctx, query, input{Edit: func(sub *subscription.Consumer, _ *store.Consumer, tails subscription.Tails) (subscription.Event, error) {
			edited = true
			sub.Streams = nil
			return subscription.TailsChanged{Tails: tails}, nil
		}})
		if !errors.Is(err, subscription.ErrConsumerGone) || edited {
			t.Fatalf("a reserved-API edit of a query-string consumer: %v (edit ran: %v); want ErrConsumerGone, not run", err, edited)
		}
		if _, err := r.engine.apply(ctx, "__ds/both", input{Event: subscription.SubscriptionDeleted{}}); !errors.Is(err, subscription.ErrConsumerGone) {
			t.Fatalf("a query-string event on a reserved row: %v; want ErrConsumerGone", err)
		}
		for id, was := range rows {
			row, err := r.st.ConsumerGet(ctx, id)
			if err != nil || row.Version != was.Version || len(row.Streams) != len(was.Streams) {
				t.Fatalf("the row %s after the refused inputs: %+v, %v; want it as it was (%+v)", id, row, err, was)
			}
		}

		// The loop decides a reserved row's own input: a new explicit
		// link is stored with the row's configuration carried over.
		a, err := r.engine.apply(ctx, "__ds/both", input{Edit: func(sub *subscription.Consumer, _ *store.Consumer, _ subscription.Tails) (subscription.Event, error) {
			sub.Streams = append(sub.Streams, subscription.StreamCursor{Path: "/v1/stream/other", Explicit: true, Acked: subscription.OffsetStart})
			return nil, nil
		}})
		if err != nil || a.Config == nil || a.Config.WebhookURL != hookURL {
			t.Fatalf("a reserved row's edit: %+v, %v; want its configuration", a, err)
		}
		row, err := r.st.ConsumerGet(ctx, "__ds/both")
		if err != nil || row.Kind != store.ConsumerReserved || row.Config != rows["__ds/both"].Config || row.ConfigHash != rows["__ds/both"].ConfigHash ||
			row.Pattern != rows["__ds/both"].Pattern || len(row.Streams) != len(rows["__ds/both"].Streams)+1 {
			t.Fatalf("the reserved row after its edit: %+v, %v", row, err)
		}
	})
}

// createBoth makes a reserved-API subscription and a query-string
// subscription, both "both", over the streams events/*.
func createBoth(t *testing.T, r *dsRig) {
	t.Helper()
	r.create("both", `{"type":"webhook","pattern":"events/*","webhook":{"url":"`+hookURL+`"}}`)
	if _, err := r.engine.CreateSubscription(context.Background(), &CreateSubscriptionParams{Caller: Platform, ID: "both",
		Pattern: "/v1/stream/events/*", Webhook: hookURL}); err != nil {
		t.Fatal(err)
	}
}
