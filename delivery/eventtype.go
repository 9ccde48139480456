package delivery

import (
	"fmt"
	"strings"
)

// MaxEventTypePatterns bounds the event_types of one endpoint.
const MaxEventTypePatterns = 100

// ValidateEventTypePattern checks one event_types entry. Three forms exist
// (docs/delivery.md, Endpoints):
//
//   - every event type
//     scenario.*            every type that starts with "scenario." at any
//     depth ("scenario.a", "scenario.a.b"), but not
//     "scenario" itself
//     tool.execution.done   exactly that type
//
// '*' anywhere else ("scen*", "*.created", "a.*.b") is refused.
func ValidateEventTypePattern(p string) error {
	if e := validateTypePattern(p); e != nil {
		return e
	}
	return nil
}

func validateTypePattern(p string) *ValidationError {
	if p == "*" {
		return nil
	}
	if p == "" {
		return Invalid(CodeInvalidEventTypePattern, "event_types", "pattern must not be empty")
	}
	body := strings.TrimSuffix(p, ".*")
	if strings.Contains(body, "*") {
		return Invalid(CodeInvalidEventTypePattern, "event_types", "%q: '*' is allowed only alone or as a final \".*\" segment (\"scenario.*\")", p)
	}
	if len(body) > maxEventTypeLen {
		return Invalid(CodeInvalidEventTypePattern, "event_types", "%q is over %d bytes", p, maxEventTypeLen)
	}
	if msg := typeSegmentsProblem(body); msg != "" {
		return Invalid(CodeInvalidEventTypePattern, "event_types", "%q: %s", p, msg)
	}
	return nil
}

// TypeFilter is a compiled list of event-type patterns: an event type
// matches when any pattern does.
type TypeFilter struct {
	all      bool
	exact    map[string]struct{}
	prefixes []string // each ends in "."
}

// CompileTypeFilter validates and compiles event-type patterns. It needs at
// least one pattern and at most MaxEventTypePatterns. Errors are
// *ValidationError with CodeInvalidEventTypePattern and the entry's index.
func CompileTypeFilter(patterns []string) (*TypeFilter, error) {
	if len(patterns) == 0 {
		return nil, Invalid(CodeInvalidEventTypePattern, "event_types", "at least one pattern is needed (\"*\" for every event)")
	}
	if len(patterns) > MaxEventTypePatterns {
		return nil, Invalid(CodeInvalidEventTypePattern, "event_types", "%d patterns, over the limit of %d", len(patterns), MaxEventTypePatterns)
	}
	f := &TypeFilter{exact: make(map[string]struct{})}
	for i, p := range patterns {
		if e := validateTypePattern(p); e != nil {
			e.Field = fmt.Sprintf("event_types[%d]", i)
			return nil, e
		}
		switch {
		case p == "*":
			f.all = true
		case strings.HasSuffix(p, ".*"):
			f.prefixes = append(f.prefixes, strings.TrimSuffix(p, "*"))
		default:
			f.exact[p] = struct{}{}
		}
	}
	return f, nil
}

// Match reports whether eventType matches one of the patterns.
func (f *TypeFilter) Match(eventType string) bool {
	if f.all {
		return true
	}
	if _, ok := f.exact[eventType]; ok {
		return true
	}
	for _, pre := range f.prefixes {
		if strings.HasPrefix(eventType, pre) && len(eventType) > len(pre) {
			return true
		}
	}
	return false
}
