package delivery

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
)

// docOf decodes an event for filter tests the way Target does.
func docOf(t *testing.T, data string) map[string]any {
	t.Helper()
	ev := &Event{ID: "evt_1", Type: "agent.updated", Timestamp: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), Data: json.RawMessage(data)}
	return NewTarget(ev, "/agents/a1").Doc()
}

func TestFieldFilterMatch(t *testing.T) {
	t.Parallel()
	data := `{"agent_id":"a1","status":"open","priority":2,"ratio":0.5,"flag":true,"none":null,
		"tags":["x","y"],"items":[{"sku":"s1"},{"sku":"s2"}],"meta":{"region":"eu","n":{"k":1}}}`
	cases := []struct {
		filter string
		want   bool
	}{
		{`{"data.agent_id": "a1"}`, true},
		{`{"data.agent_id": "a2"}`, false},
		{`{"data.agent_id": {"eq": "a1"}}`, true},
		{`{"data.status": {"in": ["open", "held"]}}`, true},
		{`{"data.status": {"in": ["closed", "held"]}}`, false},
		{`{"data.status": {"nin": ["closed"]}}`, true},
		{`{"data.status": {"nin": ["open"]}}`, false},
		{`{"data.status": {"ne": "closed"}}`, true},
		{`{"data.priority": 2}`, true},
		{`{"data.priority": 2.0}`, true},
		{`{"data.priority": 2e0}`, true},
		{`{"data.priority": "2"}`, false},
		{`{"data.priority": {"in": [1, 2, 3]}}`, true},
		{`{"data.ratio": 0.50}`, true},
		{`{"data.flag": true}`, true},
		{`{"data.flag": false}`, false},
		{`{"data.none": null}`, true},
		{`{"data.missing": null}`, false},
		{`{"data.none": {"exists": true}}`, true},
		{`{"data.missing": {"exists": false}}`, true},
		{`{"data.missing": {"exists": true}}`, false},
		{`{"data.missing": {"ne": "x"}}`, true},
		{`{"data.missing": {"nin": ["x"]}}`, true},
		{`{"data.missing": {"in": ["x"]}}`, false},
		{`{"data.tags": {"eq": ["x", "y"]}}`, true},
		{`{"data.tags": {"eq": ["y", "x"]}}`, false},
		{`{"data.tags.1": "y"}`, true},
		{`{"data.tags.2": {"exists": false}}`, true},
		{`{"data.tags.01": {"exists": false}}`, true},
		{`{"data.items.1.sku": "s2"}`, true},
		{`{"data.meta": {"eq": {"n": {"k": 1.0}, "region": "eu"}}}`, true},
		{`{"data.meta": {"eq": {"region": "eu"}}}`, false},
		{`{"data.meta.region": "eu", "data.agent_id": "a1"}`, true},
		{`{"data.meta.region": "eu", "data.agent_id": "a2"}`, false},
		{`{"data.meta.region.x": {"exists": false}}`, true},
		{`{"data.priority": {"ne": 0, "exists": true}}`, true},
		{`{"data.priority": {"gt": 1}}`, true},
		{`{"data.priority": {"gt": 2}}`, false},
		{`{"data.priority": {"gte": 2.0}}`, true},
		{`{"data.priority": {"lt": 2.5, "gt": 1.5}}`, true},
		{`{"data.priority": {"lte": 1}}`, false},
		{`{"data.ratio": {"lt": 1, "gte": 0.5}}`, true},
		{`{"data.priority": {"gt": "1"}}`, false},
		{`{"data.status": {"gt": "a", "lt": "p"}}`, true},
		{`{"data.status": {"gte": "p"}}`, false},
		{`{"data.missing": {"lt": 10}}`, false},
		{`{"data.none": {"lt": 10}}`, false},
		{`{"timestamp": {"gte": "2026-01-01T00:00:00Z", "lt": "2026-02-01T00:00:00Z"}}`, true},
		{`{"type": {"prefix": "agent."}}`, true},
		{`{"type": {"prefix": "agent.x"}}`, false},
		{`{"data.priority": {"prefix": "2"}}`, false},
		{`{"data.meta.region": {"regex": "^(eu|uk)$"}}`, true},
		{`{"data.meta.region": {"regex": "^us"}}`, false},
		{`{"data.missing": {"regex": ".*"}}`, false},
		{`{"data.tags": {"regex": "x"}}`, false},
		{`{"or": [{"data.status": "closed"}, {"data.priority": {"gte": 2}}]}`, true},
		{`{"or": [{"data.status": "closed"}, {"data.priority": {"gt": 2}}]}`, false},
		{`{"and": [{"data.status": "open"}, {"data.flag": true}]}`, true},
		{`{"and": [{"data.status": "open"}, {"data.flag": false}]}`, false},
		{`{"not": {"data.status": "open"}}`, false},
		{`{"not": {"data.status": "closed"}}`, true},
		{`{"data.agent_id": "a1", "or": [{"data.tags.0": "x"}, {"data.tags.0": "z"}], "not": {"data.none": {"exists": false}}}`, true},
		{`{"data.agent_id": "a2", "or": [{"data.tags.0": "x"}]}`, false},
		{`{"not": {"or": [{"data.status": "closed"}, {"not": {"data.flag": true}}]}}`, true},
		{`{"data.priority": {"ne": 2, "exists": true}}`, false},
		{`{"type": "agent.updated"}`, true},
		{`{"id": {"in": ["evt_1"]}}`, true},
		{`{"timestamp": "2026-01-02T03:04:05Z"}`, true},
		{`{}`, true},
		{`null`, true},
	}
	doc := docOf(t, data)
	for _, tc := range cases {
		f, err := ParseFieldFilter([]byte(tc.filter))
		if err != nil {
			t.Fatalf("ParseFieldFilter(%s): %v", tc.filter, err)
		}
		if got := f.Match(doc); got != tc.want {
			t.Errorf("%s = %v, want %v", tc.filter, got, tc.want)
		}
	}
}

func TestFieldFilterOnScalarOrMissingData(t *testing.T) {
	t.Parallel()
	f, err := ParseFieldFilter([]byte(`{"data.agent_id": "a1"}`))
	if err != nil {
		t.Fatal(err)
	}
	for _, data := range []string{`null`, `"a1"`, `[1]`, `{}`} {
		if f.Match(docOf(t, data)) {
			t.Errorf("filter matched data %s", data)
		}
	}
	g, err := ParseFieldFilter([]byte(`{"data": null}`))
	if err != nil {
		t.Fatal(err)
	}
	if !g.Match(docOf(t, `null`)) {
		t.Error(`{"data": null} does not match null data`)
	}
}

func TestFieldFilterRefuses(t *testing.T) {
	t.Parallel()
	cases := []struct {
		filter string
		field  string
		msg    string
	}{
		{`[1]`, "filter", "JSON object"},
		{`"x"`, "filter", "JSON object"},
		{`{"data.a": 1`, "filter", "not valid JSON"},
		{`{"data.a": 1} x`, "filter", "not valid JSON"},
		{`{"": 1}`, "filter", "empty path"},
		{`{"data..a": 1}`, "filter.data..a", "empty segment"},
		{`{"agent_id": 1}`, "filter.agent_id", "must start with"},
		{`{"type.x": 1}`, "filter.type.x", "no fields"},
		{`{"data.a": {}}`, "filter.data.a", "empty operator object"},
		{`{"data.a": {"like": 1}}`, "filter.data.a", "unknown operator"},
		{`{"data.a": {"gt": true}}`, "filter.data.a", "number or a string"},
		{`{"data.a": {"lte": [1]}}`, "filter.data.a", "number or a string"},
		{`{"data.a": {"prefix": 1}}`, "filter.data.a", "takes a string"},
		{`{"data.a": {"regex": "(a"}}`, "filter.data.a", "not a valid RE2"},
		{`{"data.a": {"regex": "(?=a)"}}`, "filter.data.a", "not a valid RE2"},
		{`{"data.a": {"regex": "` + strings.Repeat("a", MaxFilterRegexBytes+1) + `"}}`, "filter.data.a", "over the limit"},
		{`{"or": []}`, "filter.or", "non-empty array"},
		{`{"and": {"data.a": 1}}`, "filter.and", "non-empty array"},
		{`{"or": [{"data.a": 1}, {}]}`, "filter.or.1", "at least one condition"},
		{`{"not": 1}`, "filter.not", "at least one condition"},
		{`{"not": {"data.a": {"bad": 1}}}`, "filter.data.a", "unknown operator"},
		{`{"andd": [{"data.a": 1}]}`, "filter.andd", "must start with"},
		{`{"not": ` + strings.Repeat(`{"not": `, MaxFilterNesting) + `{"data.a": 1}` + strings.Repeat("}", MaxFilterNesting+1), "", "nest deeper"},
		{`{"data.a": {"eq": 1, "like": "x"}}`, "filter.data.a", "unknown operator"},
		{`{"data.a": {"in": "x"}}`, "filter.data.a", "array"},
		{`{"data.a": {"in": []}}`, "filter.data.a", "at least one"},
		{`{"data.a": {"nin": {}}}`, "filter.data.a", "array"},
		{`{"data.a": {"exists": "yes"}}`, "filter.data.a", "true or false"},
		{`{"data.a": ["x", "y"]}`, "filter.data.a", "membership"},
		{`{"data.` + strings.Repeat("a.", MaxFilterPathDepth) + `a": 1}`, "", "deeper"},
	}
	for _, tc := range cases {
		_, err := ParseFieldFilter([]byte(tc.filter))
		var ve *ValidationError
		if !errors.As(err, &ve) || ve.Code != CodeInvalidFilter {
			t.Errorf("ParseFieldFilter(%s) = %v, want CodeInvalidFilter", tc.filter, err)
			continue
		}
		if (tc.field != "" && ve.Field != tc.field) || !strings.Contains(ve.Message, tc.msg) {
			t.Errorf("ParseFieldFilter(%s) = %q at %q, want %q at %q", tc.filter, ve.Message, ve.Field, tc.msg, tc.field)
		}
	}

	var many strings.Builder
	many.WriteString("{")
	for i := range MaxFilterConditions + 1 {
		if i > 0 {
			many.WriteString(",")
		}
		many.WriteString(`"data.k` + strings.Repeat("x", i) + `": 1`)
	}
	many.WriteString("}")
	if _, err := ParseFieldFilter([]byte(many.String())); !errors.Is(err, ErrInvalid) {
		t.Errorf("too many conditions = %v", err)
	}
	long := `{"data.a": "` + strings.Repeat("x", MaxFilterBytes) + `"}`
	if _, err := ParseFieldFilter([]byte(long)); !errors.Is(err, ErrInvalid) {
		t.Errorf("oversized filter = %v", err)
	}
}

func TestFieldFilterCanonicalForm(t *testing.T) {
	t.Parallel()
	f, err := ParseFieldFilter([]byte(`{"data.b": {"nin": [1], "exists": true}, "data.a": "x"}`))
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(f)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"data.a":{"eq":"x"},"data.b":{"exists":true,"nin":[1]}}`; string(b) != want {
		t.Fatalf("canonical = %s, want %s", b, want)
	}
	f, err = ParseFieldFilter([]byte(`{"or": [{"type": {"prefix": "a."}}, {"data.n": {"lt": 3, "gte": 1}}], "not": {"data.e": {"regex": "^x"}}, "and": [{"id": "e"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if b, err = json.Marshal(f); err != nil {
		t.Fatal(err)
	}
	if want := `{"and":[{"id":{"eq":"e"}}],"not":{"data.e":{"regex":"^x"}},"or":[{"type":{"prefix":"a."}},{"data.n":{"gte":1,"lt":3}}]}`; string(b) != want {
		t.Fatalf("canonical = %s, want %s", b, want)
	}
}

// TestFieldFilterConditionsCountAcrossNesting: the condition limit holds
// for the whole filter, so nesting cannot multiply the work of a match.
func TestFieldFilterConditionsCountAcrossNesting(t *testing.T) {
	t.Parallel()
	var subs []string
	for i := range MaxFilterConditions + 1 {
		subs = append(subs, `{"data.k`+strings.Repeat("x", i)+`": 1}`)
	}
	raw := `{"or": [` + strings.Join(subs, ",") + `]}`
	if _, err := ParseFieldFilter([]byte(raw)); !errors.Is(err, ErrInvalid) {
		t.Fatalf("%d nested conditions = %v, want refused", len(subs), err)
	}
	raw = `{"or": [` + strings.Join(subs[:MaxFilterConditions], ",") + `]}`
	if _, err := ParseFieldFilter([]byte(raw)); err != nil {
		t.Fatalf("%d nested conditions = %v, want accepted", MaxFilterConditions, err)
	}
}

func FuzzParseFieldFilter(f *testing.F) {
	for _, s := range []string{
		`{"data.agent_id": "a1"}`, `{"data.status": {"in": ["x","y"]}}`, `{"data.n": {"ne": 1, "exists": true}}`,
		`{"data.items.0.sku": {"nin": [1.5, null, {"a": []}]}}`, `{"type": "a"}`, `{"data.a": {"gt": 1}}`, `null`, `[]`,
		`{"data.n": {"gte": 1, "lt": "z"}}`, `{"type": {"prefix": "a."}}`, `{"data.status": {"regex": "^(x|y)+$"}}`,
		`{"or": [{"data.n": 1}, {"not": {"type": "a.b"}}], "and": [{"id": {"exists": true}}]}`,
	} {
		f.Add([]byte(s))
	}
	doc := map[string]any{
		"type": "a.b", "id": "e",
		"data": map[string]any{"agent_id": "a1", "status": "x", "n": json.Number("1"), "items": []any{map[string]any{"sku": "s"}}},
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		ff, err := ParseFieldFilter(raw)
		if err != nil {
			var ve *ValidationError
			if !errors.As(err, &ve) || ve.Code != CodeInvalidFilter {
				t.Fatalf("error %v is not CodeInvalidFilter", err)
			}
			return
		}
		got := ff.Match(doc)
		canon, err := json.Marshal(ff)
		if err != nil {
			t.Fatalf("marshal: %v", err)
		}
		again, err := ParseFieldFilter(canon)
		if err != nil {
			t.Fatalf("canonical form %s does not parse: %v", canon, err)
		}
		if again.Match(doc) != got {
			t.Fatalf("canonical form %s matches differently from %s", canon, raw)
		}
		canon2, err := json.Marshal(again)
		if err != nil || string(canon2) != string(canon) {
			t.Fatalf("canonical form is not stable: %s then %s (%v)", canon, canon2, err)
		}
	})
}
