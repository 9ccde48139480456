package delivery

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// prefixGlob is a stand-in for the glob package: "/a/**" matches paths
// under /a/, anything else matches exactly. Patterns with "[" are refused.
type prefixGlob string

func (g prefixGlob) Match(path string) bool {
	if pre, ok := strings.CutSuffix(string(g), "**"); ok {
		return strings.HasPrefix(path, pre)
	}
	return path == string(g)
}

func compilePrefixGlob(p string) (StreamMatcher, error) {
	if strings.Contains(p, "[") || !strings.HasPrefix(p, "/") {
		return nil, errors.New("not a pattern")
	}
	return prefixGlob(p), nil
}

func TestFiltersMatch(t *testing.T) {
	t.Parallel()
	f, err := CompileFilters(&FiltersParams{
		EventTypes:    []string{"scenario.*", "tool.execution.completed"},
		Streams:       []string{"/tenants/t1/**", "/audit"},
		Filter:        json.RawMessage(`{"data.agent_id": {"in": ["a1", "a2"]}}`),
		CompileStream: compilePrefixGlob,
	})
	if err != nil {
		t.Fatal(err)
	}
	ev := func(typ, data string) *Event {
		return &Event{ID: "e", Type: typ, Timestamp: testNow, Data: json.RawMessage(data)}
	}
	cases := []struct {
		name   string
		ev     *Event
		stream string
		want   bool
	}{
		{"all hold", ev("scenario.activated", `{"agent_id":"a1"}`), "/tenants/t1/agents", true},
		{"exact type", ev("tool.execution.completed", `{"agent_id":"a2"}`), "/audit", true},
		{"type filtered", ev("policy.blocked", `{"agent_id":"a1"}`), "/tenants/t1/agents", false},
		{"stream filtered", ev("scenario.activated", `{"agent_id":"a1"}`), "/tenants/t2/agents", false},
		{"field filtered", ev("scenario.activated", `{"agent_id":"a3"}`), "/tenants/t1/agents", false},
		{"no data", ev("scenario.activated", `null`), "/tenants/t1/agents", false},
	}
	for _, tc := range cases {
		if got := f.Match(NewTarget(tc.ev, tc.stream)); got != tc.want {
			t.Errorf("%s: Match = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestFiltersDefaultsMatchEverything(t *testing.T) {
	t.Parallel()
	f, err := CompileFilters(&FiltersParams{})
	if err != nil {
		t.Fatal(err)
	}
	tg := NewTarget(&Event{Type: "x.y", Timestamp: testNow, Data: json.RawMessage(`{"a":1}`)}, "/any/stream")
	if !f.Match(tg) {
		t.Fatal("filters with defaults do not match an event")
	}
	// The default stream pattern needs no compiler and matches every stream.
	f, err = CompileFilters(&FiltersParams{Streams: []string{DefaultStreamPattern}})
	if err != nil {
		t.Fatal(err)
	}
	if !f.Match(tg) {
		t.Fatalf("%q does not match /any/stream", DefaultStreamPattern)
	}
	// Other entries are still validated.
	_, err = CompileFilters(&FiltersParams{Streams: []string{DefaultStreamPattern, "/bad["}, CompileStream: compilePrefixGlob})
	if !errors.Is(err, ErrInvalid) {
		t.Fatalf("invalid pattern next to the default = %v", err)
	}
}

func TestTargetDecodesOnce(t *testing.T) {
	t.Parallel()
	tg := NewTarget(&Event{ID: "e", Type: "a", Timestamp: testNow, Data: json.RawMessage(`{"k":"v"}`)}, "/s")
	d1 := tg.Doc()
	d1["marker"] = true
	if _, ok := tg.Doc()["marker"]; !ok {
		t.Fatal("Doc decoded the event again")
	}
	if d1["data"].(map[string]any)["k"] != "v" || d1["id"] != "e" || d1["type"] != "a" {
		t.Fatalf("Doc = %v", d1)
	}
}

func TestCompileFiltersRefuses(t *testing.T) {
	t.Parallel()
	cases := []struct {
		p     *FiltersParams
		code  Code
		field string
	}{
		{&FiltersParams{EventTypes: []string{"a", "*.b"}}, CodeInvalidEventTypePattern, "event_types[1]"},
		{&FiltersParams{Streams: []string{"/ok/**", "/bad["}, CompileStream: compilePrefixGlob}, CodeInvalidStreamPattern, "streams[1]"},
		{&FiltersParams{Streams: []string{}, CompileStream: compilePrefixGlob}, CodeInvalidStreamPattern, "streams"},
		{&FiltersParams{Filter: json.RawMessage(`{"data.a": {"like": 1}}`)}, CodeInvalidFilter, "filter.data.a"},
	}
	for i, tc := range cases {
		_, err := CompileFilters(tc.p)
		var ve *ValidationError
		if !errors.As(err, &ve) || ve.Code != tc.code || ve.Field != tc.field {
			t.Errorf("case %d: %v, want %s at %s", i, err, tc.code, tc.field)
		}
	}
	if _, err := CompileFilters(&FiltersParams{Streams: []string{"/a"}}); err == nil || errors.Is(err, ErrInvalid) {
		t.Errorf("streams without a compiler = %v, want a programming error", err)
	}
}
