package delivery

import (
	"errors"
	"strings"
	"testing"
)

func TestEventTypePatternValidation(t *testing.T) {
	t.Parallel()
	valid := []string{"*", "scenario.*", "infra.turn.*", "tool.execution.completed", "a", "a:b.c-d_e.*"}
	for _, p := range valid {
		if err := ValidateEventTypePattern(p); err != nil {
			t.Errorf("ValidateEventTypePattern(%q) = %v, want nil", p, err)
		}
	}
	invalidPatterns := []string{"", "**", "scen*", "*.created", "a.*.b", "a.**", ".*", "a..*", "a.", ".a", "a b", "a.*.*", "é.*", strings.Repeat("a", 256)}
	for _, p := range invalidPatterns {
		err := ValidateEventTypePattern(p)
		var ve *ValidationError
		if !errors.As(err, &ve) || ve.Code != CodeInvalidEventTypePattern {
			t.Errorf("ValidateEventTypePattern(%q) = %v, want CodeInvalidEventTypePattern", p, err)
		}
	}
}

func TestCompileTypeFilterNamesTheBadEntry(t *testing.T) {
	t.Parallel()
	_, err := CompileTypeFilter([]string{"a.*", "b", "c*"})
	var ve *ValidationError
	if !errors.As(err, &ve) || ve.Field != "event_types[2]" {
		t.Fatalf("CompileTypeFilter = %v, want the error at event_types[2]", err)
	}
	if _, err := CompileTypeFilter([]string{}); !errors.As(err, &ve) || ve.Code != CodeInvalidEventTypePattern {
		t.Fatalf("empty pattern list = %v, want an error", err)
	}
	many := make([]string, MaxEventTypePatterns+1)
	for i := range many {
		many[i] = "a"
	}
	if _, err := CompileTypeFilter(many); err == nil {
		t.Fatal("too many patterns accepted")
	}
}

func TestTypeFilterMatch(t *testing.T) {
	t.Parallel()
	cases := []struct {
		patterns []string
		typ      string
		want     bool
	}{
		{[]string{"*"}, "anything.at.all", true},
		{[]string{"scenario.*"}, "scenario.activated", true},
		{[]string{"scenario.*"}, "scenario.step.entered", true},
		{[]string{"scenario.*"}, "scenario", false},
		{[]string{"scenario.*"}, "scenarios.activated", false},
		{[]string{"scenario.*"}, "other.scenario.activated", false},
		{[]string{"infra.turn.*"}, "infra.turn.started", true},
		{[]string{"infra.turn.*"}, "infra.tool.started", false},
		{[]string{"tool.execution.completed"}, "tool.execution.completed", true},
		{[]string{"tool.execution.completed"}, "tool.execution.completed.late", false},
		{[]string{"tool.execution.completed"}, "Tool.Execution.Completed", false},
		{[]string{"a.b", "c.*"}, "c.d", true},
		{[]string{"a.b", "c.*"}, "a.b", true},
		{[]string{"a.b", "c.*"}, "a.c", false},
	}
	for _, tc := range cases {
		f, err := CompileTypeFilter(tc.patterns)
		if err != nil {
			t.Fatalf("CompileTypeFilter(%v): %v", tc.patterns, err)
		}
		if got := f.Match(tc.typ); got != tc.want {
			t.Errorf("%v matching %q = %v, want %v", tc.patterns, tc.typ, got, tc.want)
		}
	}
}

func FuzzEventTypePattern(f *testing.F) {
	for _, s := range []string{"*", "scenario.*", "a.b.c", "a.*.b", "*.*", "a..b", "", "x.*"} {
		f.Add(s, "scenario.activated")
	}
	f.Fuzz(func(t *testing.T, pattern, typ string) {
		tf, err := CompileTypeFilter([]string{pattern})
		if err != nil {
			var ve *ValidationError
			if !errors.As(err, &ve) || ve.Code != CodeInvalidEventTypePattern {
				t.Fatalf("error %v is not CodeInvalidEventTypePattern", err)
			}
			return
		}
		got := tf.Match(typ)
		// The definition of docs/delivery.md, Endpoints, written independently.
		var want bool
		switch {
		case pattern == "*":
			want = true
		case strings.HasSuffix(pattern, ".*"):
			want = strings.HasPrefix(typ, strings.TrimSuffix(pattern, "*")) && len(typ) > len(pattern)-1
		default:
			want = pattern == typ
		}
		if got != want {
			t.Fatalf("pattern %q on %q = %v, want %v", pattern, typ, got, want)
		}
		// A valid exact pattern is a valid event type.
		if pattern != "*" && !strings.HasSuffix(pattern, ".*") && ValidateEventType(pattern) != nil {
			t.Fatalf("exact pattern %q is not a valid event type", pattern)
		}
	})
}
