package delivery

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestParseSchedule(t *testing.T) {
	t.Parallel()
	got, err := ParseSchedule([]string{"0", "5s", "5m", "30m", "2h", "8h", "24h"})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, DefaultSchedule()) {
		t.Fatalf("got %v, want the default schedule", got)
	}
	got, err = ParseSchedule([]string{"300", " 1h30m ", "72h", "250ms"})
	if err != nil {
		t.Fatal(err)
	}
	if want := (Schedule{5 * time.Minute, 90 * time.Minute, 72 * time.Hour, 250 * time.Millisecond}); !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}

	bad := []struct {
		entries []string
		field   string
	}{
		{nil, "retry_schedule"},
		{[]string{}, "retry_schedule"},
		{[]string{"0", "-5s"}, "retry_schedule[1]"},
		{[]string{"0", "73h"}, "retry_schedule[1]"},
		{[]string{"259201"}, "retry_schedule[0]"},
		{[]string{"0", ""}, "retry_schedule[1]"},
		{[]string{"5 minutes"}, "retry_schedule[0]"},
		{[]string{"1d"}, "retry_schedule[0]"},
		{[]string{"99999999999999999999"}, "retry_schedule[0]"},
		{slices.Repeat([]string{"1s"}, MaxScheduleEntries+1), "retry_schedule"},
	}
	for _, tc := range bad {
		_, err := ParseSchedule(tc.entries)
		var ve *ValidationError
		if !errors.As(err, &ve) || ve.Code != CodeInvalidRetrySchedule || ve.Field != tc.field {
			t.Errorf("ParseSchedule(%q) = %v, want CodeInvalidRetrySchedule at %s", tc.entries, err, tc.field)
		}
	}
	if _, err := ParseSchedule(slices.Repeat([]string{"1s"}, MaxScheduleEntries)); err != nil {
		t.Errorf("a schedule of %d entries: %v", MaxScheduleEntries, err)
	}
}

func TestScheduleJSON(t *testing.T) {
	t.Parallel()
	var s Schedule
	if err := json.Unmarshal([]byte(`["0", "5s", 300, "1h30m", 0]`), &s); err != nil {
		t.Fatal(err)
	}
	if want := (Schedule{0, 5 * time.Second, 5 * time.Minute, 90 * time.Minute, 0}); !slices.Equal(s, want) {
		t.Fatalf("got %v, want %v", s, want)
	}
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != `["0","5s","5m","90m","0"]` {
		t.Fatalf("marshal = %s", b)
	}

	var cfg struct {
		RetrySchedule Schedule `json:"retry_schedule"`
	}
	if err := json.Unmarshal([]byte(`{"retry_schedule": null}`), &cfg); err != nil || cfg.RetrySchedule != nil {
		t.Fatalf("null schedule: %v %v", cfg.RetrySchedule, err)
	}
	for _, bad := range []string{`["0", -5]`, `["0", 1.5]`, `[true]`, `"5s"`, `["0", "100h"]`, `[]`} {
		err := json.Unmarshal([]byte(`{"retry_schedule": `+bad+`}`), &cfg)
		var ve *ValidationError
		if !errors.As(err, &ve) || ve.Code != CodeInvalidRetrySchedule {
			t.Errorf("unmarshal %s = %v, want CodeInvalidRetrySchedule", bad, err)
		}
	}
}

func TestNextAttempt(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	def := DefaultSchedule()
	cases := []struct {
		name       string
		schedule   Schedule
		made       int
		retryAfter time.Duration
		want       time.Duration
		exhausted  bool
	}{
		{"first attempt immediately", def, 0, 0, 0, false},
		{"first attempt ignores Retry-After", def, 0, time.Hour, 0, false},
		{"second after 5s", def, 1, 0, 5 * time.Second, false},
		{"third after 5m", def, 2, 0, 5 * time.Minute, false},
		{"seventh after 24h", def, 6, 0, 24 * time.Hour, false},
		{"exhausted after seven", def, 7, 0, 0, true},
		{"nil schedule is the default", nil, 3, 0, 30 * time.Minute, false},
		{"negative count is a new delivery", def, -1, 0, 0, false},
		{"Retry-After lengthens a step", def, 1, 2 * time.Minute, 2 * time.Minute, false},
		{"Retry-After cannot shorten a step", def, 2, 10 * time.Second, 5 * time.Minute, false},
		{"Retry-After capped at 24h", def, 1, 100 * time.Hour, MaxRetryAfter, false},
		{"step over 24h wins over Retry-After", Schedule{0, 48 * time.Hour}, 1, 30 * time.Hour, 48 * time.Hour, false},
		{"Retry-After does not revive an exhausted delivery", Schedule{0}, 1, time.Hour, 0, true},
		{"first-attempt delay", Schedule{10 * time.Second}, 0, 0, 10 * time.Second, false},
	}
	for _, tc := range cases {
		at, exhausted := NextAttempt(tc.schedule, tc.made, now, tc.retryAfter)
		if exhausted != tc.exhausted {
			t.Errorf("%s: exhausted = %v, want %v", tc.name, exhausted, tc.exhausted)
			continue
		}
		if !exhausted && !at.Equal(now.Add(tc.want)) {
			t.Errorf("%s: next attempt in %v, want %v", tc.name, at.Sub(now), tc.want)
		}
	}
}

func TestNextAttemptWalksTheWholeSchedule(t *testing.T) {
	t.Parallel()
	// The default: seven attempts over about 34.5 hours, then exhausted.
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	start := at
	attempts := 0
	for {
		next, exhausted := NextAttempt(DefaultSchedule(), attempts, at, 0)
		if exhausted {
			break
		}
		at = next
		attempts++
	}
	if attempts != 7 {
		t.Fatalf("%d attempts, want 7", attempts)
	}
	if total := at.Sub(start); total != 34*time.Hour+35*time.Minute+5*time.Second {
		t.Fatalf("last attempt %v after creation", total)
	}
}

func TestParseRetryAfter(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	cases := []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"120", 2 * time.Minute, true},
		{" 0 ", 0, true},
		{"Thu, 01 Jan 2026 12:05:00 GMT", 5 * time.Minute, true},
		{"Thursday, 01-Jan-26 12:00:30 GMT", 30 * time.Second, true},
		{"Thu Jan  1 13:00:00 2026", time.Hour, true},
		{"Wed, 31 Dec 2025 12:00:00 GMT", 0, true},
		{"99999999999999999999999", maxParsedRetryAfter, true},
		{"Fri, 01 Jan 2100 00:00:00 GMT", maxParsedRetryAfter, true},
		{"", 0, false},
		{"-5", 0, false},
		{"1.5", 0, false},
		{"soon", 0, false},
		{"2026-01-01T12:05:00Z", 0, false},
	}
	for _, tc := range cases {
		got, ok := ParseRetryAfter(tc.in, now)
		if ok != tc.ok || got != tc.want {
			t.Errorf("ParseRetryAfter(%q) = %v, %v; want %v, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}

func FuzzParseRetryAfter(f *testing.F) {
	for _, s := range []string{"120", "0", "Thu, 01 Jan 2026 12:05:00 GMT", "-1", "1e9", "Mon Jan  2 15:04:05 2006", "99999999999999999999"} {
		f.Add(s)
	}
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, v string) {
		d, ok := ParseRetryAfter(v, now)
		if !ok {
			if d != 0 {
				t.Fatalf("ParseRetryAfter(%q) = %v with ok false", v, d)
			}
			return
		}
		if d < 0 || d > maxParsedRetryAfter {
			t.Fatalf("ParseRetryAfter(%q) = %v, out of [0, %v]", v, d, maxParsedRetryAfter)
		}
		// Whatever a receiver sends, the next attempt stays within the
		// schedule step and MaxRetryAfter.
		at, exhausted := NextAttempt(DefaultSchedule(), 1, now, d)
		if exhausted || at.Before(now.Add(5*time.Second)) || at.After(now.Add(MaxRetryAfter)) {
			t.Fatalf("Retry-After %q put the next attempt at %v", v, at.Sub(now))
		}
	})
}

func FuzzParseSchedule(f *testing.F) {
	f.Add("0,5s,5m,30m,2h,8h,24h")
	f.Add("300, 1h30m")
	f.Add("-1s")
	f.Add("72h0m1s")
	f.Add(",")
	f.Add("9223372036854775807")
	f.Fuzz(func(t *testing.T, list string) {
		entries := strings.Split(list, ",")
		s, err := ParseSchedule(entries)
		if err != nil {
			var ve *ValidationError
			if !errors.As(err, &ve) || ve.Code != CodeInvalidRetrySchedule {
				t.Fatalf("error %v is not CodeInvalidRetrySchedule", err)
			}
			return
		}
		if len(s) != len(entries) || s.Validate() != nil {
			t.Fatalf("ParseSchedule(%q) = %v, invalid", list, s)
		}
		for _, d := range s {
			if d < 0 || d > MaxScheduleStep {
				t.Fatalf("ParseSchedule(%q) accepted step %v", list, d)
			}
		}
		// The written form reads back the same.
		again, err := ParseSchedule(s.Strings())
		if err != nil || !slices.Equal(again, s) {
			t.Fatalf("round trip of %v: %v, %v", s, again, err)
		}
		b, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		var fromJSON Schedule
		if err := json.Unmarshal(b, &fromJSON); err != nil || !slices.Equal(fromJSON, s) {
			t.Fatalf("JSON round trip of %v via %s: %v, %v", s, b, fromJSON, err)
		}
		// Walking the schedule ends exhausted after len(s) attempts.
		if _, exhausted := NextAttempt(s, len(s), testNow, 0); !exhausted {
			t.Fatalf("not exhausted after %d attempts", len(s))
		}
	})
}
