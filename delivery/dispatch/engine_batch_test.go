package dispatch

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/heraldstreams/herald/delivery"
	"github.com/heraldstreams/herald/store"
)

// A batching endpoint gets the fresh events of an append in full
// batches as they are stored, without a claim; what does not fill a
// batch waits for a claim, which holds it for max_wait_ms.
func TestEngineSendsFreshFullBatchesWithoutClaiming(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		r, cc := newClaimCountingRig(t)
		ctx := context.Background()
		if _, err := r.st.StreamCreate(ctx, &store.StreamCreateParams{Path: "/s", ContentType: "application/json", Now: time.Now()}); err != nil {
			t.Fatal(err)
		}
		ep := r.endpoint(&CreateEndpointParams{Active: true, Config: delivery.EndpointConfig{Streams: []string{"/s"},
			Batch: &delivery.BatchConfig{MaxEvents: 3, MaxWaitMS: 1000}}})
		synctest.Wait()
		var msgs strings.Builder
		for i := range 7 {
			fmt.Fprintf(&msgs, `{"id":"e%d","type":"a.b","data":{"i":%d}}`+"\n", i, i)
		}
		if _, err := r.st.StreamAppend(ctx, &store.StreamAppendParams{Path: "/s", ContentType: "application/json",
			Data: []byte(msgs.String()), Messages: 7, Now: time.Now()}); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		batchIDs := func(want int) []string {
			t.Helper()
			got := r.rc.Requests()
			if len(got) != want {
				t.Fatalf("%d POSTs, want %d", len(got), want)
			}
			var out []string
			for _, g := range got {
				var b struct {
					BatchID string           `json:"batch_id"`
					Events  []delivery.Event `json:"events"`
				}
				if err := json.Unmarshal(g.Body, &b); err != nil || !strings.HasPrefix(b.BatchID, batchIDPrefix) {
					t.Fatalf("POST %s is not a batch (%v)", g.Body, err)
				}
				var ids []string
				for _, ev := range b.Events {
					ids = append(ids, ev.ID)
				}
				out = append(out, strings.Join(ids, ","))
			}
			slices.Sort(out) // sent at once, in any order: the endpoint does not order
			return out
		}
		if got := fmt.Sprint(batchIDs(2)); got != "[e0,e1,e2 e3,e4,e5]" {
			t.Fatalf("fresh batches %s, want the first six events in two batches", got)
		}
		if n := cc.leased(); n != 0 {
			t.Fatalf("claims leased %d deliveries, want the fresh batches sent without one", n)
		}
		time.Sleep(time.Second) // the partial batch's max_wait_ms
		synctest.Wait()
		if got := fmt.Sprint(batchIDs(3)); got != "[e0,e1,e2 e3,e4,e5 e6]" {
			t.Fatalf("batches %s, want e6 alone once its wait ended", got)
		}
		if n := cc.leased(); n != 1 {
			t.Fatalf("claims leased %d deliveries, want the one left over", n)
		}
		for _, d := range r.deliveries(ep.ID) {
			if d.Status != store.DeliveryDelivered || d.Attempts != 1 {
				t.Fatalf("delivery %s: %s after %d attempts", d.EventID, d.Status, d.Attempts)
			}
		}
	})
}
