package deliveryapi

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/heraldstreams/herald/delivery"
	"github.com/heraldstreams/herald/delivery/dispatch"
	"github.com/heraldstreams/herald/delivery/internal/deliverytest"
	"github.com/heraldstreams/herald/store"
)

// batchJSON is the body of a batch's POST.
type batchJSON struct {
	BatchID string           `json:"batch_id"`
	Events  []delivery.Event `json:"events"`
}

// batchesOf decodes the batch bodies a receiver got and checks each one's
// signature, made under the batch id.
func batchesOf(t *testing.T, secret string, got []deliverytest.Received) []batchJSON {
	t.Helper()
	wh, err := standardwebhooks.NewWebhook(secret)
	if err != nil {
		t.Fatal(err)
	}
	var out []batchJSON
	for _, g := range got {
		var b batchJSON
		if err := json.Unmarshal(g.Body, &b); err != nil {
			t.Fatalf("body %s: %v", g.Body, err)
		}
		if err := wh.Verify(g.Body, g.Header); err != nil {
			t.Fatalf("the batch signature does not verify: %v", err)
		}
		if id := g.Header.Get("webhook-id"); id != b.BatchID || len(id) < 5 || id[:4] != "bat_" {
			t.Fatalf("webhook-id %q, batch_id %q", id, b.BatchID)
		}
		out = append(out, b)
	}
	return out
}

// Ten events published at once to an endpoint batching four reach it in
// three or four POSTs of at most four (a partial batch goes once
// max_wait_ms has passed, or with a full one claimed together), every
// event once, each batch in publishing order; each delivery records one
// attempt with its batch's id, which the delivery API shows.
func TestBatchDelivery(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t, nil)
		ep := r.endpoint(&dispatch.CreateEndpointParams{Active: true, Config: delivery.EndpointConfig{Batch: &delivery.BatchConfig{MaxEvents: 4, MaxWaitMS: 500}}})
		var ids []string
		for i := range 10 {
			ids = append(ids, r.publish("order.created", "", fmt.Sprintf(`{"n":%d}`, i)).Event.ID)
		}
		synctest.Wait()
		time.Sleep(time.Second) // the last, partial batch waits max_wait_ms
		synctest.Wait()
		bs := batchesOf(t, ep.Secret, r.rc.Requests())
		if len(bs) < 3 || len(bs) > 4 {
			t.Fatalf("%d POSTs, want 3 or 4", len(bs))
		}
		index := make(map[string]int, len(ids))
		for i, id := range ids {
			index[id] = i
		}
		seen := make(map[string]bool)
		for _, b := range bs {
			if len(b.Events) > 4 {
				t.Fatalf("a batch of %d events, over max_events", len(b.Events))
			}
			for i, ev := range b.Events {
				if i > 0 && index[ev.ID] <= index[b.Events[i-1].ID] {
					t.Fatalf("batch %s out of publishing order", b.BatchID)
				}
				seen[ev.ID] = true
			}
		}
		if len(seen) != len(ids) {
			t.Fatalf("%d distinct events delivered, want %d", len(seen), len(ids))
		}
		for _, d := range r.deliveries(ep.ID) {
			if d.Status != store.DeliveryDelivered || d.BatchID == "" {
				t.Fatalf("delivery %+v, want delivered in a batch", d)
			}
			atts, err := r.st.DeliveryAttempts(context.Background(), d.ID)
			if err != nil {
				t.Fatal(err)
			}
			if len(atts) != 1 || atts[0].BatchID != d.BatchID {
				t.Fatalf("attempts %+v, want one in batch %s", atts, d.BatchID)
			}
			var v deliveryJSON
			if code := r.call(http.MethodGet, "/_herald/v1/deliveries/"+d.ID, "", &v); code != http.StatusOK || v.BatchID != d.BatchID ||
				len(v.Attempts) != 1 || v.Attempts[0].BatchID != d.BatchID {
				t.Fatalf("GET delivery: %d %+v", code, v)
			}
		}
	})
}

// A failing receiver gets the same batch, under the same id, on the
// retry; a final 4xx under the standard policy dead-letters every
// delivery of the batch.
func TestBatchRetryAndDeadLetter(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t, nil)
		ep := r.endpoint(&dispatch.CreateEndpointParams{Active: true, Config: delivery.EndpointConfig{Batch: &delivery.BatchConfig{MaxEvents: 3, MaxWaitMS: 100}}})
		r.rc.SetRespond(func(n int, _ delivery.Event) (int, map[string]string) {
			if n == 0 {
				return http.StatusInternalServerError, nil
			}
			return http.StatusNotFound, nil
		})
		for i := range 3 {
			r.publish("order.created", "", fmt.Sprintf(`{"n":%d}`, i))
		}
		synctest.Wait()
		time.Sleep(5 * time.Second) // the second step of the schedule
		synctest.Wait()
		bs := batchesOf(t, ep.Secret, r.rc.Requests())
		if len(bs) != 2 || bs[0].BatchID != bs[1].BatchID || len(bs[0].Events) != 3 || len(bs[1].Events) != 3 {
			t.Fatalf("POSTs %+v, want the same batch of 3 twice", bs)
		}
		for _, d := range r.deliveries(ep.ID) {
			if d.Status != store.DeliveryExhausted || d.Attempts != 2 || d.BatchID != bs[0].BatchID {
				t.Fatalf("delivery %+v, want exhausted after 2 attempts in batch %s", d, bs[0].BatchID)
			}
		}
	})
}

// batch is validated: max_events 2..1000, max_wait_ms 0..60000, each a
// 400 invalid_batch naming the field; PATCH sets it and null removes it.
func TestBatchValidationAndPatch(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t, nil)
		for body, field := range map[string]string{
			`{"url":"` + hookURL + `","batch":{"max_events":1}}`:                     "batch.max_events",
			`{"url":"` + hookURL + `","batch":{"max_events":1001}}`:                  "batch.max_events",
			`{"url":"` + hookURL + `","batch":{"max_events":2,"max_wait_ms":60001}}`: "batch.max_wait_ms",
			`{"url":"` + hookURL + `","batch":{"max_events":2,"max_wait_ms":-1}}`:    "batch.max_wait_ms",
		} {
			var e struct {
				Error struct{ Code, Field string } `json:"error"`
			}
			if code := r.call(http.MethodPost, "/_herald/v1/endpoints", body, &e); code != http.StatusBadRequest ||
				e.Error.Code != string(delivery.CodeInvalidBatch) || e.Error.Field != field {
				t.Fatalf("%s: %d %+v, want 400 invalid_batch %s", body, code, e, field)
			}
		}
		var ep endpointJSON
		if code := r.call(http.MethodPost, "/_herald/v1/endpoints", `{"url":"`+hookURL+`"}`, &ep); code != http.StatusCreated || ep.Batch != nil {
			t.Fatalf("create: %d %+v", code, ep)
		}
		path := "/_herald/v1/endpoints/" + ep.ID
		if code := r.call(http.MethodPatch, path, `{"batch":{"max_events":50,"max_wait_ms":2000}}`, &ep); code != http.StatusOK ||
			ep.Batch == nil || *ep.Batch != (delivery.BatchConfig{MaxEvents: 50, MaxWaitMS: 2000}) {
			t.Fatalf("patch: %d %+v", code, ep)
		}
		if code := r.call(http.MethodGet, path, "", &ep); code != http.StatusOK || ep.Batch == nil || ep.Batch.MaxEvents != 50 {
			t.Fatalf("get: %d %+v", code, ep)
		}
		if code := r.call(http.MethodPatch, path, `{"batch":null}`, &ep); code != http.StatusOK || ep.Batch != nil {
			t.Fatalf("patch null: %d %+v", code, ep)
		}
	})
}
