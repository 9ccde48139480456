package dispatch

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/heraldstreams/herald/delivery"
)

// publishFor publishes an event of a tenant.
func (r *rig) publishFor(tenant, typ string) *PublishResult {
	r.t.Helper()
	res, err := r.e.Publish(context.Background(), &PublishParams{Event: &delivery.Event{Type: typ, Data: []byte(`{}`)}, Stream: "/s", Tenant: tenant})
	if err != nil {
		r.t.Fatalf("publish: %v", err)
	}
	return res
}

// recordingHandler keeps the records logged, with their attributes.
type recordingHandler struct {
	mu      sync.Mutex
	records []slog.Record
}

func (h *recordingHandler) Enabled(context.Context, slog.Level) bool { return true }

func (h *recordingHandler) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	h.records = append(h.records, r.Clone())
	h.mu.Unlock()
	return nil
}

func (h *recordingHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *recordingHandler) WithGroup(string) slog.Handler      { return h }

// outcomes returns the attempt outcome lines: their level and attributes.
func (h *recordingHandler) outcomes() (levels []slog.Level, attrs []map[string]any) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, r := range h.records {
		m := map[string]any{}
		r.Attrs(func(a slog.Attr) bool {
			m[a.Key] = a.Value.Any()
			return true
		})
		if _, ok := m["outcome"]; ok {
			levels, attrs = append(levels, r.Level), append(attrs, m)
		}
	}
	return levels, attrs
}

// Every attempt's outcome is logged once, with the same fields whatever
// the outcome, at --delivery-log-level (a dead letter at warn at least).
func TestDeliveryOutcomeLogs(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		logs := &recordingHandler{}
		r := newRig(t, func(c *EngineConfig) {
			c.Logger = slog.New(logs)
			c.LogLevel = slog.LevelDebug
			c.RetrySchedule = delivery.Schedule{0, time.Second}
		})
		r.rc.SetRespond(func(_ int, ev delivery.Event) (int, map[string]string) {
			if ev.Type == "a.fail" {
				return http.StatusInternalServerError, nil
			}
			return http.StatusNoContent, nil
		})
		ep := r.endpoint(&CreateEndpointParams{Config: delivery.EndpointConfig{Tenant: "acme"}, Active: true})
		ok := r.publishFor("acme", "a.ok")
		synctest.Wait()
		failed := r.publishFor("acme", "a.fail")
		synctest.Wait()
		time.Sleep(2 * time.Second) // the second and last attempt
		synctest.Wait()

		levels, attrs := logs.outcomes()
		if len(attrs) != 3 {
			t.Fatalf("%d outcome lines, want 3: %v", len(attrs), attrs)
		}
		want := []struct {
			level   slog.Level
			event   string
			outcome string
			attempt int64
			status  int64
		}{
			{slog.LevelDebug, ok.Event.ID, "delivered", 1, 204},
			{slog.LevelDebug, failed.Event.ID, "retrying", 1, 500},
			{slog.LevelWarn, failed.Event.ID, "exhausted", 2, 500},
		}
		fields := []string{"endpoint", "tenant", "delivery", "event", "event_type", "attempt", "outcome", "status", "latency"}
		for i, w := range want {
			a := attrs[i]
			if levels[i] != w.level || a["event"] != w.event || a["outcome"] != w.outcome || a["attempt"] != w.attempt ||
				a["status"] != w.status || a["endpoint"] != ep.ID || a["tenant"] != "acme" {
				t.Errorf("line %d: %v %v, want %+v", i, levels[i], a, w)
			}
			for _, f := range fields {
				if _, ok := a[f]; !ok {
					t.Errorf("line %d has no %s: %v", i, f, a)
				}
			}
			if d, _ := a["delivery"].(string); d == "" || !slices.Contains([]string{"delivered", "retrying", "exhausted"}, a["outcome"].(string)) {
				t.Errorf("line %d: %v", i, a)
			}
		}
		if _, ok := attrs[1]["next_attempt_at"]; !ok {
			t.Errorf("a retrying attempt without next_attempt_at: %v", attrs[1])
		}
	})
}

// With the tenant label on, the attempt and outcome metrics carry the
// endpoint's tenant; off (the default), they have no tenant label.
func TestDeliveryMetricsTenantLabel(t *testing.T) {
	t.Parallel()
	for _, on := range []bool{true, false} {
		synctest.Test(t, func(t *testing.T) {
			r := newRig(t, func(c *EngineConfig) {
				c.MetricsTenantLabel = on
				c.RetrySchedule = delivery.Schedule{0}
			})
			r.rc.SetRespond(func(_ int, ev delivery.Event) (int, map[string]string) {
				if ev.Type == "a.fail" {
					return http.StatusInternalServerError, nil
				}
				return http.StatusOK, nil
			})
			r.endpoint(&CreateEndpointParams{Config: delivery.EndpointConfig{Tenant: "acme"}, Active: true})
			r.endpoint(&CreateEndpointParams{Config: delivery.EndpointConfig{Tenant: "globex"}, Active: true})
			for _, tenant := range []string{"acme", "globex"} {
				r.publishFor(tenant, "a.ok")
				r.publishFor(tenant, "a.fail")
			}
			synctest.Wait()
			for _, m := range []struct {
				name   string
				labels []string
				want   float64
			}{
				{"herald_delivery_attempts_total", []string{"outcome", "delivered", "tenant", "acme"}, 1},
				{"herald_delivery_attempts_total", []string{"outcome", "exhausted", "tenant", "globex"}, 1},
				{"herald_delivery_dead_letters_total", []string{"tenant", "acme"}, 1},
				{"herald_delivery_attempt_duration_seconds", []string{"tenant", "globex"}, 2},
				{"herald_delivery_latency_seconds", []string{"tenant", "acme"}, 1},
				{"herald_delivery_attempts_per_delivery", []string{"tenant", "globex"}, 2},
			} {
				got := r.metric(m.name, m.labels...)
				if !on && got != -1 {
					t.Errorf("tenant label off: %s%v = %v", m.name, m.labels, got)
				}
				if on && got != m.want {
					t.Errorf("%s%v = %v, want %v", m.name, m.labels, got, m.want)
				}
			}
			if got := r.metric("herald_delivery_attempts_total", "outcome", "delivered"); got < 1 {
				t.Errorf("delivered attempts (label %v) = %v", on, got)
			}
		})
	}
}

func TestPublishedEventsAreCounted(t *testing.T) {
	t.Parallel()
	r := newRig(t, nil)
	r.publish("a.one", "/counted", `{}`)
	r.publish("a.two", "/counted", `{}`)
	if got := r.metric("herald_delivery_events_published_total"); got != 2 {
		t.Fatalf("herald_delivery_events_published_total = %v, want 2", got)
	}
	// A duplicate id appends nothing, and is not counted.
	ev := &delivery.Event{ID: "evt-once", Type: "a.three", Timestamp: time.Now().UTC(), Data: json.RawMessage(`{}`)}
	for range 2 {
		if _, err := r.e.Publish(context.Background(), &PublishParams{Event: ev, Stream: "/counted"}); err != nil {
			t.Fatal(err)
		}
	}
	if got := r.metric("herald_delivery_events_published_total"); got != 3 {
		t.Fatalf("after a duplicate: %v, want 3", got)
	}
}
