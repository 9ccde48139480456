package stats

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// clock is a settable clock safe for concurrent use.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func newRig(t *testing.T) (*Recorder, prometheus.Counter, *prometheus.CounterVec, *clock) {
	t.Helper()
	reg := prometheus.NewRegistry()
	appends := prometheus.NewCounter(prometheus.CounterOpts{Name: "t_appends_total", Help: "h"})
	outcomes := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "t_outcomes_total", Help: "h"}, []string{"outcome"})
	reg.MustRegister(appends, outcomes)
	c := &clock{t: time.Date(2026, 1, 2, 15, 4, 0, 0, time.UTC)}
	r := New(Config{Gatherer: reg, Now: c.now, Series: []Series{
		{Name: "appends", Metric: "t_appends_total"},
		{Name: "deliveries", Metric: "t_outcomes_total", Label: "outcome", Values: []string{"delivered"}},
		{Name: "failures", Metric: "t_outcomes_total", Label: "outcome", Values: []string{"retrying", "exhausted"}},
	}})
	return r, appends, outcomes, c
}

func TestGrowthLandsInItsMinute(t *testing.T) {
	t.Parallel()
	r, appends, outcomes, c := newRig(t)
	appends.Add(100) // before the first sample: the base, not counted
	if err := r.Sample(); err != nil {
		t.Fatal(err)
	}
	appends.Add(3)
	outcomes.WithLabelValues("delivered").Add(2)
	outcomes.WithLabelValues("retrying").Inc()
	outcomes.WithLabelValues("exhausted").Inc()
	if err := r.Sample(); err != nil {
		t.Fatal(err)
	}
	c.add(time.Minute)
	appends.Add(5)
	if err := r.Sample(); err != nil {
		t.Fatal(err)
	}
	s := r.Snapshot()
	if len(s.Minutes) != Minutes || len(s.Series) != 3 {
		t.Fatalf("snapshot has %d minutes and series %v", len(s.Minutes), s.Series)
	}
	prev, cur := s.Minutes[Minutes-2], s.Minutes[Minutes-1]
	if cur.Start != "2026-01-02T15:05:00Z" || prev.Start != "2026-01-02T15:04:00Z" {
		t.Fatalf("minutes start at %s and %s", prev.Start, cur.Start)
	}
	if prev.Counts["appends"] != 3 || prev.Counts["deliveries"] != 2 || prev.Counts["failures"] != 2 {
		t.Errorf("first minute: %v", prev.Counts)
	}
	if cur.Counts["appends"] != 5 || cur.Counts["deliveries"] != 0 {
		t.Errorf("second minute: %v", cur.Counts)
	}
	if s.Minutes[0].Counts["appends"] != 0 {
		t.Errorf("an unsampled minute counts %v", s.Minutes[0].Counts)
	}
}

// A bucket reused an hour later starts from zero.
func TestTheRingForgetsAfterAnHour(t *testing.T) {
	t.Parallel()
	r, appends, _, c := newRig(t)
	if err := r.Sample(); err != nil {
		t.Fatal(err)
	}
	appends.Add(7)
	if err := r.Sample(); err != nil {
		t.Fatal(err)
	}
	c.add(Minutes * time.Minute)
	appends.Add(1)
	if err := r.Sample(); err != nil {
		t.Fatal(err)
	}
	s := r.Snapshot()
	if got := s.Minutes[Minutes-1].Counts["appends"]; got != 1 {
		t.Errorf("the reused minute counts %v, want 1", got)
	}
	for _, m := range s.Minutes[:Minutes-1] {
		if m.Counts["appends"] != 0 {
			t.Errorf("minute %s counts %v after an hour", m.Start, m.Counts)
		}
	}
}

func TestServeHTTPSamplesFirst(t *testing.T) {
	t.Parallel()
	r, appends, _, _ := newRig(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); r.Run(ctx, time.Hour) }() // samples once at start
	for deadline := time.Now().Add(5 * time.Second); ; {
		r.mu.Lock()
		primed := r.primed
		r.mu.Unlock()
		if primed {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("Run never sampled")
		}
		time.Sleep(time.Millisecond)
	}
	cancel()
	<-done
	appends.Add(4)
	w := httptest.NewRecorder()
	r.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/_herald/v1/stats", nil))
	if w.Code != http.StatusOK || w.Header().Get("Cache-Control") != "no-store" {
		t.Fatalf("%d %v", w.Code, w.Header())
	}
	var s Snapshot
	if err := json.Unmarshal(w.Body.Bytes(), &s); err != nil {
		t.Fatal(err)
	}
	if got := s.Minutes[len(s.Minutes)-1].Counts["appends"]; got != 4 {
		t.Errorf("the current minute counts %v appends, want 4", got)
	}
}

func TestServeHTTPCountsTheBacklog(t *testing.T) {
	t.Parallel()
	r, _, _, _ := newRig(t)
	r.cfg.Backlog = func(context.Context) (int, error) { return 7, nil }
	w := httptest.NewRecorder()
	r.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/_herald/v1/stats", nil))
	var s Snapshot
	if err := json.Unmarshal(w.Body.Bytes(), &s); err != nil || w.Code != http.StatusOK {
		t.Fatalf("%d %v", w.Code, err)
	}
	if s.Backlog == nil || *s.Backlog != 7 {
		t.Errorf("backlog %v, want 7", s.Backlog)
	}
	r.cfg.Backlog = func(context.Context) (int, error) { return 0, errors.New("store down") }
	w = httptest.NewRecorder()
	r.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/_herald/v1/stats", nil))
	if w.Code != http.StatusInternalServerError {
		t.Errorf("a failed count answered %d, want 500", w.Code)
	}
}

func TestSeriesAddsItsOtherCounters(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	appends := prometheus.NewCounter(prometheus.CounterOpts{Name: "t_appends_total", Help: "h"})
	published := prometheus.NewCounter(prometheus.CounterOpts{Name: "t_published_total", Help: "h"})
	reg.MustRegister(appends, published)
	c := &clock{t: time.Date(2026, 1, 2, 15, 4, 0, 0, time.UTC)}
	r := New(Config{Gatherer: reg, Now: c.now, Series: []Series{
		{Name: "appends", Metric: "t_appends_total", Also: []string{"t_published_total"}},
	}})
	if err := r.Sample(); err != nil {
		t.Fatal(err)
	}
	appends.Add(2)
	published.Add(3)
	if err := r.Sample(); err != nil {
		t.Fatal(err)
	}
	if got := r.Snapshot().Minutes[Minutes-1].Counts["appends"]; got != 5 {
		t.Errorf("appends = %v, want 5 (2 appended, 3 published)", got)
	}
}
