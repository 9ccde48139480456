package protocol

import (
	"strconv"
	"testing"
	"time"
)

func TestNextCursorIsTheInterval(t *testing.T) {
	t.Parallel()
	now := CursorEpoch.Add(1000*CursorInterval + 5*time.Second)
	if got := NextCursor(now, "", time.Second); got != "1000" {
		t.Errorf("cursor = %q, want 1000", got)
	}
	// A client behind the current interval gets the current interval.
	if got := NextCursor(now, "999", time.Second); got != "1000" {
		t.Errorf("cursor after 999 = %q, want 1000", got)
	}
	// A malformed client cursor is ignored.
	if got := NextCursor(now, "abc", time.Second); got != "1000" {
		t.Errorf("cursor after abc = %q, want 1000", got)
	}
}

func TestNextCursorAdvancesPastClient(t *testing.T) {
	t.Parallel()
	now := CursorEpoch.Add(1000 * CursorInterval)
	cases := []struct {
		client string
		jitter time.Duration
		want   int64
	}{
		{"1000", time.Second, 1001},
		{"1000", 0, 1001},
		{"1000", 20 * time.Second, 1001},
		{"1000", 21 * time.Second, 1002},
		{"1000", time.Hour, 1180},
		{"1000", 10 * time.Hour, 1180},
		{"5000", time.Second, 5001},
	}
	for _, c := range cases {
		got, err := strconv.ParseInt(NextCursor(now, c.client, c.jitter), 10, 64)
		if err != nil || got != c.want {
			t.Errorf("NextCursor(client %s, jitter %v) = %d, %v; want %d", c.client, c.jitter, got, err, c.want)
		}
	}
}

func TestNextCursorBeforeEpoch(t *testing.T) {
	t.Parallel()
	if got := NextCursor(CursorEpoch.Add(-time.Hour), "", time.Second); got != "0" {
		t.Errorf("cursor before epoch = %q", got)
	}
}
