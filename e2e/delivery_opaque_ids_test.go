package e2e

import (
	"encoding/hex"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"
)

// Delivery ids cannot be guessed: consecutive deliveries have ids with
// nothing in common but "dlv_", the old sequential shape finds nothing,
// pages follow one another by their cursors (and a made-up cursor is
// 400), and every id names the same delivery after a restart.
func TestDeliveryIDsAreOpaque(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := startHerald(t, dir, deliveryFlags...)
	rc, srv := newEventReceiver(t)
	id, secret := createEndpoint(t, s.base, `{"url":"`+srv.URL+`"}`)
	rc.secret = secret
	const n = 5
	var events []string
	for i := range n {
		ev := fmt.Sprintf("evt_opaque_%d", i)
		body := fmt.Sprintf(`{"id":%q,"type":"order.paid","data":{"i":%d}}`, ev, i)
		if resp, out := do(t, "POST", s.base+"/_herald/v1/events", map[string]string{"Content-Type": "application/json"}, body); resp.StatusCode != http.StatusAccepted {
			t.Fatalf("publish: %d %s", resp.StatusCode, out)
		}
		events = append(events, ev)
	}
	rc.waitFor(events, 20*time.Second, s.logs)

	// listAll pages through the endpoint's deliveries two at a time.
	listAll := func(base string) (ids, eventIDs []string) {
		t.Helper()
		cursor := ""
		for range n {
			var page deliveryPage
			resp, out := do(t, "GET", base+"/_herald/v1/endpoints/"+id+"/deliveries?limit=2"+cursor, nil, "")
			if resp.StatusCode != http.StatusOK || jsonUnmarshal(out, &page) != nil {
				t.Fatalf("list: %d %s", resp.StatusCode, out)
			}
			for _, d := range page.Data {
				ids, eventIDs = append(ids, d.ID), append(eventIDs, d.EventID)
			}
			if page.NextCursor == nil {
				return ids, eventIDs
			}
			cursor = "&cursor=" + *page.NextCursor
		}
		t.Fatalf("more pages than deliveries")
		return nil, nil
	}
	// The deliveries' records may be written just after the receiver
	// accepted them.
	want := slices.Clone(events)
	slices.Reverse(want) // newest first
	ids, eventIDs := listAll(s.base)
	for deadline := time.Now().Add(10 * time.Second); !slices.Equal(eventIDs, want); ids, eventIDs = listAll(s.base) {
		if time.Now().After(deadline) {
			t.Fatalf("pages hold events %v, want %v", eventIDs, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
	for i, d := range ids {
		raw, ok := strings.CutPrefix(d, "dlv_")
		if _, err := hex.DecodeString(raw); !ok || err != nil || len(raw) != 32 || strings.ToLower(raw) != raw {
			t.Fatalf("id %q is not dlv_ and 32 lower-case hex digits", d)
		}
		if i == 0 {
			continue
		}
		// Random ids differ in about 30 of 32 digits.
		same := 0
		for j := range raw {
			if raw[j] == ids[i-1][4+j] {
				same++
			}
		}
		if same > 12 {
			t.Errorf("ids %s and %s of consecutive deliveries share %d digits", ids[i-1], d, same)
		}
	}
	// The sequential ids of before name nothing.
	for seq := range 20 {
		resp, out := do(t, "GET", fmt.Sprintf("%s/_herald/v1/deliveries/dlv_%d", s.base, seq), nil, "")
		if code := apiError(t, "sequential id", resp, out, http.StatusNotFound); code != "" && code != "DELIVERY_NOT_FOUND" {
			t.Errorf("dlv_%d: code %q", seq, code)
		}
	}
	// A cursor no list gave is refused, not an empty page.
	last := ids[len(ids)-1]
	for _, c := range []string{"3", "dlv_3", last[:len(last)-1] + "0", last[:len(last)-1] + "1", strings.ToUpper(last), last + "00"} {
		if c == last {
			continue
		}
		resp, out := do(t, "GET", s.base+"/_herald/v1/endpoints/"+id+"/deliveries?cursor="+c, nil, "")
		if code := apiError(t, "cursor "+c, resp, out, http.StatusBadRequest); code != "" && code != "INVALID_PARAMETER" {
			t.Errorf("cursor %s: code %q", c, code)
		}
	}

	// After a restart the same ids name the same deliveries.
	if err := s.terminate(20 * time.Second); err != nil {
		t.Fatalf("stop: %v\n%s", err, s.logs)
	}
	s = startHerald(t, dir, deliveryFlags...)
	again, _ := listAll(s.base)
	if !slices.Equal(again, ids) {
		t.Fatalf("ids after a restart %v, before %v", again, ids)
	}
	for i, d := range ids {
		var got struct {
			EventID string `json:"event_id"`
		}
		resp, out := do(t, "GET", s.base+"/_herald/v1/deliveries/"+d, nil, "")
		if resp.StatusCode != http.StatusOK || jsonUnmarshal(out, &got) != nil || got.EventID != eventIDs[i] {
			t.Fatalf("GET %s after a restart: %d %s", d, resp.StatusCode, out)
		}
	}
}
