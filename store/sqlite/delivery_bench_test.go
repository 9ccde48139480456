package sqlite_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/heraldstreams/herald/store"
)

// BenchmarkDeliveryCycle measures the store's share of delivering
// events through the engine, without the engine: each op is one page of
// 100 events with their own ids, each matched to one endpoint (the
// deliveries, their sightings in the event log and the cursor, in one
// DeliveryEnqueue), claimed (DeliveryClaim) and delivered (one
// DeliveryComplete with an attempt each), by 8 workers at once, each on
// its endpoint and stream. cpu-µs/op is the process's CPU a page; the
// committer, one goroutine, bounds the events a second the engine can
// deliver at 100 events over ns/op.
//
//	go test -run '^$' -bench DeliveryCycle -benchtime 300x ./store/sqlite/
func BenchmarkDeliveryCycle(b *testing.B) {
	const workers, page = 8, 100
	s := open(b, b.TempDir())
	ctx := context.Background()
	now := time.Now()
	pos := make([]int64, workers)
	cursor := make([]store.CursorAdvance, workers)
	for w := range workers {
		id := fmt.Sprintf("ep%d", w)
		if _, err := s.EndpointCreate(ctx, &store.EndpointCreateParams{Endpoint: store.Endpoint{ID: id, URL: "https://example.com/" + id,
			EventTypes: []string{"*"}, Streams: []string{"/**"}, Active: true, Ordering: "none", MaxInFlight: 100,
			RetrySchedule: []time.Duration{0, 5 * time.Second}, Secret: "whsec_a"}, Now: now}); err != nil {
			b.Fatal(err)
		}
		cursor[w] = store.CursorAdvance{EndpointID: id, StreamID: int64(w + 1)}
	}
	body := []byte(`{"type":"bench.event","data":{"pad":"` + strings.Repeat("0", 200) + `"}}`)
	runOps(b, workers, func(w, n int) error {
		ep := cursor[w].EndpointID
		stream := fmt.Sprintf("/bench/%d", w)
		params := &store.DeliveryEnqueueParams{Stream: stream, Now: now}
		for i := range page {
			id := fmt.Sprintf("ev-%d-%d", n, i)
			params.Deliveries = append(params.Deliveries, store.Delivery{EndpointID: ep, EventID: id, EventType: "bench.event",
				Stream: stream, Position: pos[w], Body: body, NextAttemptAt: now})
			params.Sightings = append(params.Sightings, store.EventSighting{EventID: id, Position: pos[w], EventType: "bench.event"})
			pos[w] += int64(len(body))
		}
		c := &cursor[w]
		c.Position = pos[w]
		params.Cursors = []store.CursorAdvance{*c}
		if _, err := s.DeliveryEnqueue(ctx, params); err != nil {
			return err
		}
		c.Found, c.ExpectStreamID, c.ExpectPosition = true, c.StreamID, c.Position
		claimed, err := s.DeliveryClaim(ctx, &store.DeliveryClaimParams{EndpointID: ep, Limit: page, Lease: time.Minute,
			DeliveryLimits: store.DeliveryLimits{MaxInFlight: 100}, Now: now})
		if err != nil {
			return err
		}
		if len(claimed.Deliveries) != page {
			return fmt.Errorf("claimed %d deliveries, want %d", len(claimed.Deliveries), page)
		}
		ep0, err := s.EndpointGet(ctx, ep)
		if err != nil {
			return err
		}
		done := &store.DeliveryCompleteParams{EndpointID: ep, ExpectHealthVersion: ep0.HealthVersion, Now: now,
			Health: store.EndpointHealth{LastSuccessAt: now}}
		for _, d := range claimed.Deliveries {
			done.Results = append(done.Results, store.DeliveryResult{DeliveryID: d.ID, LeaseToken: d.LeaseToken,
				Status: store.DeliveryDelivered, Attempt: store.DeliveryAttempt{At: now, Latency: time.Millisecond}})
		}
		res, err := s.DeliveryComplete(ctx, done)
		if err != nil {
			return err
		}
		if res.Applied != page {
			return fmt.Errorf("completed %d deliveries, want %d", res.Applied, page)
		}
		return nil
	})
}
