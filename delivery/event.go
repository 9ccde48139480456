// Package delivery holds the pure rules of Herald's event delivery
// (docs/delivery.md): the event envelope, endpoint configuration and its
// validation, event-type and field filters, the retry schedule and
// Retry-After, the circuit breaker, and Standard Webhooks signing. Nothing
// here does I/O or reads a clock: time comes in as a parameter, and
// decisions come out as data for the engine to apply.
package delivery

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"time"
	"unicode/utf8"
)

// DefaultMaxEventBytes caps the size of one event as published.
const DefaultMaxEventBytes = 256 << 10

// Limits of event fields.
const (
	maxEventIDLen   = 255
	maxEventTypeLen = 255
)

// Event is the envelope of every delivered event, and the exact JSON body
// POSTed to endpoints: {"id","type","timestamp","data"}.
type Event struct {
	// ID is stable across retries and is the webhook-id header: receivers
	// deduplicate on it. Optional on publish; the engine assigns one.
	ID string `json:"id,omitempty"`
	// Type is dot-separated ("scenario.activated"); endpoints filter on it.
	Type string `json:"type"`
	// Timestamp is when the event happened (RFC 3339 on the wire).
	Timestamp time.Time `json:"timestamp"`
	// Data is any JSON value, null when absent.
	Data json.RawMessage `json:"data"`
}

// ParseEventParams are the inputs of ParseEvent.
type ParseEventParams struct {
	// Now is the timestamp of an event published without one.
	Now time.Time
	// MaxBytes caps the raw event; 0 means DefaultMaxEventBytes.
	MaxBytes int
}

// ParseEvent parses and validates a published event. The object must have
// "type" (see ValidateEventType) and may have "id" (see ValidateEventID),
// "timestamp" (RFC 3339; Now in UTC when absent or null) and "data" (any
// JSON; null when absent). Any other field is refused with
// CodeUnknownField, so a typo ("tpye") is an error rather than an event
// nobody receives. The data is compacted. Errors are *ValidationError.
func ParseEvent(raw []byte, p *ParseEventParams) (*Event, error) {
	maxBytes := p.MaxBytes
	if maxBytes <= 0 {
		maxBytes = DefaultMaxEventBytes
	}
	if len(raw) > maxBytes {
		return nil, Invalid(CodeEventTooLarge, "", "event is %d bytes, over the limit of %d", len(raw), maxBytes)
	}
	if !utf8.Valid(raw) {
		return nil, Invalid(CodeInvalidEvent, "", "event is not valid UTF-8")
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil || fields == nil {
		return nil, &ValidationError{Code: CodeInvalidEvent, Message: "event must be a JSON object", Err: err}
	}
	keys := make([]string, 0, len(fields))
	for k := range fields {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		switch k {
		case "id", "type", "timestamp", "data":
		default:
			return nil, Invalid(CodeUnknownField, k, "unknown event field; an event has id, type, timestamp and data (put everything else in data)")
		}
	}

	ev := &Event{}
	if v, ok := fields["id"]; ok && !IsNull(v) {
		if err := json.Unmarshal(v, &ev.ID); err != nil {
			return nil, &ValidationError{Code: CodeInvalidEventID, Field: "id", Message: "id must be a string", Err: err}
		}
		if err := ValidateEventID(ev.ID); err != nil {
			return nil, err
		}
	}
	v, ok := fields["type"]
	if !ok || IsNull(v) {
		return nil, Invalid(CodeInvalidEventType, "type", "type is required")
	}
	if err := json.Unmarshal(v, &ev.Type); err != nil {
		return nil, &ValidationError{Code: CodeInvalidEventType, Field: "type", Message: "type must be a string", Err: err}
	}
	if err := ValidateEventType(ev.Type); err != nil {
		return nil, err
	}
	ev.Timestamp = p.Now.UTC()
	if v, ok := fields["timestamp"]; ok && !IsNull(v) {
		var s string
		if err := json.Unmarshal(v, &s); err != nil {
			return nil, &ValidationError{Code: CodeInvalidParameter, Field: "timestamp", Message: "timestamp must be an RFC 3339 string", Err: err}
		}
		ts, err := time.Parse(time.RFC3339, s)
		if err != nil {
			return nil, &ValidationError{Code: CodeInvalidParameter, Field: "timestamp", Message: "timestamp must be RFC 3339, like 2026-01-02T15:04:05Z", Err: err}
		}
		ev.Timestamp = ts
	}
	ev.Data = json.RawMessage("null")
	if v, ok := fields["data"]; ok {
		var buf bytes.Buffer
		if err := json.Compact(&buf, v); err != nil {
			return nil, &ValidationError{Code: CodeInvalidEvent, Field: "data", Message: "data is not valid JSON", Err: err}
		}
		ev.Data = buf.Bytes()
	}
	return ev, nil
}

// Body is the JSON POSTed to endpoints: the envelope, compact, without
// HTML escaping (so data arrives byte for byte as published, compacted).
func (e *Event) Body() ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(e); err != nil {
		return nil, fmt.Errorf("delivery: encoding event %q: %w", e.ID, err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte{'\n'}), nil
}

func IsNull(v json.RawMessage) bool { return string(bytes.TrimSpace(v)) == "null" }

// ValidateEventID checks an event id: 1 to 255 bytes of printable ASCII
// without spaces, because it travels as the webhook-id header and inside
// the signed content.
func ValidateEventID(id string) error {
	if id == "" {
		return Invalid(CodeInvalidEventID, "id", "id must not be empty (omit it to get one assigned)")
	}
	if len(id) > maxEventIDLen {
		return Invalid(CodeInvalidEventID, "id", "id is %d bytes, over the limit of %d", len(id), maxEventIDLen)
	}
	for i := 0; i < len(id); i++ {
		if id[i] <= ' ' || id[i] > '~' {
			return Invalid(CodeInvalidEventID, "id", "id has character %q at %d; use printable ASCII without spaces", id[i], i)
		}
	}
	return nil
}

// ValidateEventType checks an event type: 1 to 255 bytes of dot-separated
// non-empty segments of letters, digits, '_', '-' and ':'. '*' is reserved
// for patterns.
func ValidateEventType(t string) error {
	if t == "" {
		return Invalid(CodeInvalidEventType, "type", "type must not be empty")
	}
	if len(t) > maxEventTypeLen {
		return Invalid(CodeInvalidEventType, "type", "type is %d bytes, over the limit of %d", len(t), maxEventTypeLen)
	}
	if msg := typeSegmentsProblem(t); msg != "" {
		return Invalid(CodeInvalidEventType, "type", "%q: %s", t, msg)
	}
	return nil
}

// typeSegmentsProblem returns what is wrong with a dot-separated type, or "".
func typeSegmentsProblem(t string) string {
	segStart := 0
	for i := 0; i <= len(t); i++ {
		if i == len(t) || t[i] == '.' {
			if i == segStart {
				return "empty segment (leading, trailing or double dot)"
			}
			segStart = i + 1
			continue
		}
		if !typeChar(t[i]) {
			if t[i] >= utf8.RuneSelf {
				return "non-ASCII character; use letters, digits, '_', '-', ':' and '.'"
			}
			return "character " + strconv.QuoteRune(rune(t[i])) + " is not allowed; use letters, digits, '_', '-', ':' and '.'"
		}
	}
	return ""
}

func typeChar(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == ':'
}
