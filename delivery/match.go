package delivery

import (
	"encoding/json"
	"fmt"
	"time"
)

// MaxStreamPatterns bounds the streams of one endpoint.
const MaxStreamPatterns = 100

// DefaultStreamPattern is the streams default: every stream.
const DefaultStreamPattern = "/**"

// StreamMatcher is a compiled stream glob pattern.
type StreamMatcher interface {
	Match(path string) bool
}

// StreamCompiler compiles one stream glob pattern (the glob package does
// this; delivery does not own the glob syntax). Its error explains what is
// wrong with the pattern.
type StreamCompiler func(pattern string) (StreamMatcher, error)

// FiltersParams are the inputs of CompileFilters.
type FiltersParams struct {
	// EventTypes are event-type patterns; nil means ["*"].
	EventTypes []string
	// Streams are stream glob patterns; nil means every stream.
	Streams []string
	// Filter is a field filter (see FieldFilter); empty means none.
	Filter json.RawMessage
	// CompileStream compiles Streams; required unless Streams is nil or
	// holds DefaultStreamPattern, which matches every stream by itself.
	CompileStream StreamCompiler
}

// Filters decide which events an endpoint receives: the event type must
// match one type pattern, the stream one stream pattern, and every field
// condition must hold.
type Filters struct {
	types   *TypeFilter
	streams []StreamMatcher // nil: every stream
	fields  *FieldFilter    // nil: no field condition
}

// CompileFilters validates and compiles an endpoint's filters. Errors are
// *ValidationError (CodeInvalidEventTypePattern, CodeInvalidStreamPattern,
// CodeInvalidFilter).
func CompileFilters(p *FiltersParams) (*Filters, error) {
	types := p.EventTypes
	if types == nil {
		types = []string{"*"}
	}
	tf, err := CompileTypeFilter(types)
	if err != nil {
		return nil, err
	}
	f := &Filters{types: tf}
	if p.Streams != nil {
		if len(p.Streams) == 0 {
			return nil, Invalid(CodeInvalidStreamPattern, "streams", "at least one pattern is needed (%q for every stream)", DefaultStreamPattern)
		}
		if len(p.Streams) > MaxStreamPatterns {
			return nil, Invalid(CodeInvalidStreamPattern, "streams", "%d patterns, over the limit of %d", len(p.Streams), MaxStreamPatterns)
		}
		everyStream := false
		for i, pat := range p.Streams {
			if pat == DefaultStreamPattern {
				everyStream = true
				continue
			}
			if p.CompileStream == nil {
				return nil, fmt.Errorf("delivery: CompileFilters: stream pattern %q given without a StreamCompiler", pat)
			}
			m, err := p.CompileStream(pat)
			if err != nil {
				return nil, &ValidationError{
					Code: CodeInvalidStreamPattern, Field: fmt.Sprintf("streams[%d]", i),
					Message: fmt.Sprintf("%q: %v", pat, err), Err: err,
				}
			}
			f.streams = append(f.streams, m)
		}
		if everyStream {
			f.streams = nil // nothing else can widen the match
		}
	}
	ff, err := ParseFieldFilter(p.Filter)
	if err != nil {
		return nil, err
	}
	f.fields = ff
	return f, nil
}

// Target is one event on one stream, prepared for matching against many
// endpoints: its data is decoded at most once. Not safe for concurrent use.
type Target struct {
	Event  *Event
	Stream string

	doc     map[string]any
	decoded bool
}

// NewTarget prepares ev, appended to stream, for matching.
func NewTarget(ev *Event, stream string) *Target {
	return &Target{Event: ev, Stream: stream}
}

// Doc returns the event as a decoded JSON object for field filters. Data
// that is not valid JSON counts as absent.
func (t *Target) Doc() map[string]any {
	if t.decoded {
		return t.doc
	}
	t.decoded = true
	t.doc = map[string]any{
		"type":      t.Event.Type,
		"timestamp": t.Event.Timestamp.UTC().Format(time.RFC3339Nano),
	}
	if t.Event.ID != "" {
		t.doc["id"] = t.Event.ID
	}
	if len(t.Event.Data) > 0 {
		if v, err := decodeJSON(t.Event.Data); err == nil {
			t.doc["data"] = v
		}
	}
	return t.doc
}

// Match reports whether the endpoint with these filters receives t.
func (f *Filters) Match(t *Target) bool {
	if !f.types.Match(t.Event.Type) {
		return false
	}
	if f.streams != nil {
		matched := false
		for _, m := range f.streams {
			if m.Match(t.Stream) {
				matched = true
				break
			}
		}
		if !matched {
			return false
		}
	}
	if f.fields == nil {
		return true
	}
	return f.fields.Match(t.Doc())
}
