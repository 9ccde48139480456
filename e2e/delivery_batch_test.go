package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
)

// TestDeliveryBatchesE2E: an endpoint batching up to four events receives
// ten events published at once in signed POSTs of at most four, verified
// with the official Standard Webhooks library under the batch id, every
// event exactly once and in publishing order within each batch; each
// delivery's attempt carries the id of the batch that sent it.
func TestDeliveryBatchesE2E(t *testing.T) {
	t.Parallel()
	type post struct {
		header http.Header
		body   []byte
	}
	var (
		mu    sync.Mutex
		posts []post
	)
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		mu.Lock()
		posts = append(posts, post{r.Header.Clone(), body})
		mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	defer receiver.Close()
	s := startHerald(t, t.TempDir(), deliveryFlags...)
	epID, secret := createEndpoint(t, s.base, `{"url":"`+receiver.URL+`","batch":{"max_events":4,"max_wait_ms":300}}`)

	var ids []string
	for i := range 10 {
		id := fmt.Sprintf("bat-ev-%d", i)
		ids = append(ids, id)
		body := fmt.Sprintf(`{"id":%q,"type":"order.created","data":{"n":%d}}`, id, i)
		if resp, out := do(t, "POST", s.base+"/_herald/v1/events", jsonBody, body); resp.StatusCode != http.StatusAccepted {
			t.Fatalf("publish %s: %d %s", id, resp.StatusCode, out)
		}
	}

	wh, err := standardwebhooks.NewWebhook(secret)
	if err != nil {
		t.Fatal(err)
	}
	type batch struct {
		BatchID string `json:"batch_id"`
		Events  []struct {
			ID string `json:"id"`
		} `json:"events"`
	}
	index := map[string]int{}
	for i, id := range ids {
		index[id] = i
	}
	var batches []batch
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		mu.Lock()
		got := append([]post(nil), posts...)
		mu.Unlock()
		batches = batches[:0]
		n := 0
		for _, p := range got {
			var b batch
			if err := json.Unmarshal(p.body, &b); err != nil {
				t.Fatalf("body %s: %v", p.body, err)
			}
			if err := wh.Verify(p.body, p.header); err != nil {
				t.Fatalf("batch %s: the signature does not verify: %v", b.BatchID, err)
			}
			if p.header.Get("webhook-id") != b.BatchID {
				t.Fatalf("webhook-id %q, batch_id %q", p.header.Get("webhook-id"), b.BatchID)
			}
			batches = append(batches, b)
			n += len(b.Events)
		}
		if n >= len(ids) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d events received in %d POSTs, want %d\n%s", n, len(got), len(ids), s.logs)
		}
	}
	seen := map[string]string{} // event id → batch id
	for _, b := range batches {
		if len(b.Events) > 4 {
			t.Fatalf("batch %s holds %d events, over max_events", b.BatchID, len(b.Events))
		}
		for i, ev := range b.Events {
			if _, dup := seen[ev.ID]; dup {
				t.Fatalf("event %s delivered twice", ev.ID)
			}
			seen[ev.ID] = b.BatchID
			if i > 0 && index[ev.ID] <= index[b.Events[i-1].ID] {
				t.Fatalf("batch %s is out of publishing order", b.BatchID)
			}
		}
	}
	if len(seen) != len(ids) || len(batches) < 3 {
		t.Fatalf("%d events in %d POSTs, want 10 in at least 3", len(seen), len(batches))
	}

	// The attempt log: each delivery, one attempt, with its batch's id.
	var list struct {
		Data []struct {
			ID      string `json:"id"`
			EventID string `json:"event_id"`
			Status  string `json:"status"`
		} `json:"data"`
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		_, out := do(t, "GET", s.base+"/_herald/v1/endpoints/"+epID+"/deliveries?status=delivered", nil, "")
		if err := json.Unmarshal([]byte(out), &list); err != nil {
			t.Fatal(err)
		}
		if len(list.Data) == len(ids) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d deliveries delivered, want %d", len(list.Data), len(ids))
		}
	}
	for _, d := range list.Data {
		var one struct {
			BatchID  string `json:"batch_id"`
			Attempts []struct {
				BatchID string `json:"batch_id"`
			} `json:"attempts"`
		}
		_, out := do(t, "GET", s.base+"/_herald/v1/deliveries/"+d.ID, nil, "")
		if err := json.Unmarshal([]byte(out), &one); err != nil {
			t.Fatal(err)
		}
		if len(one.Attempts) != 1 || one.Attempts[0].BatchID != seen[d.EventID] || one.BatchID != seen[d.EventID] {
			t.Fatalf("delivery %s of %s: %s, want one attempt in batch %s", d.ID, d.EventID, out, seen[d.EventID])
		}
	}
}
