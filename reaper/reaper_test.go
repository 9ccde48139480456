package reaper_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/heraldstreams/herald/reaper"
	"github.com/heraldstreams/herald/store"
	"github.com/heraldstreams/herald/store/sqlite"
)

func TestRunOnceRemovesExpiredStreams(t *testing.T) {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, sqlite.Config{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, p := range []store.StreamCreateParams{
		{Path: "/short", ContentType: "text/plain", TTL: time.Second},
		{Path: "/long", ContentType: "text/plain", TTL: time.Hour},
		{Path: "/forever", ContentType: "text/plain"},
	} {
		p.Now = t0
		if _, err := st.StreamCreate(ctx, &p); err != nil {
			t.Fatal(err)
		}
	}
	now := t0.Add(time.Minute)
	r := reaper.New(reaper.Config{Store: st, Now: func() time.Time { return now }})
	n, err := r.RunOnce(ctx)
	if err != nil || n != 1 {
		t.Fatalf("RunOnce = %d, %v; want 1 stream removed", n, err)
	}
	// The path is free again; the others are untouched.
	if _, err := st.StreamCreate(ctx, &store.StreamCreateParams{Path: "/short", ContentType: "application/json", Now: now}); err != nil {
		t.Fatalf("re-create after reaping: %v", err)
	}
	for _, p := range []string{"/long", "/forever"} {
		if _, err := st.StreamGet(ctx, &store.StreamGetParams{Path: p, Now: now}); err != nil {
			t.Errorf("%s: %v", p, err)
		}
	}
	if n, err := r.RunOnce(ctx); err != nil || n != 0 {
		t.Fatalf("second RunOnce = %d, %v", n, err)
	}
	if _, err := st.StreamGet(ctx, &store.StreamGetParams{Path: "/missing", Now: now}); !errors.Is(err, store.ErrNotFound) {
		t.Fatal(err)
	}
}
