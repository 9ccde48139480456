package dispatch

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/text/language"
	"golang.org/x/text/message"

	"github.com/heraldstreams/herald/delivery"
	"github.com/heraldstreams/herald/store"
)

// The event type catalogue lists the installation's event types, each
// with a description, an optional JSON Schema of its events' data and a
// deprecation flag. It is installation-wide: every tenant reads the same
// catalogue, and only a credential without a tenant changes it.
//
// With EngineConfig.EnforceEventTypes the catalogue is enforced: an event
// published through the API must be of a catalogued type and its data
// must pass the type's schema, and an endpoint's event_types must each
// name a catalogued type or, for "prefix.*", cover at least one. Events
// appended straight to a stream are not checked (the stream protocol
// knows no event types).

// Catalogue limits and codes.
const (
	// MaxSchemaBytes bounds an event type's schema (compact JSON).
	MaxSchemaBytes = 64 << 10
	// schemaURL names a schema while it compiles: a $ref that leaves it
	// resolves under this host and is refused, like every remote one.
	schemaURL = "https://herald.invalid/event-type.json"

	// CodeInvalidSchema: an event type's schema is not a JSON Schema
	// Herald can compile (invalid, or a $ref that leaves the schema).
	CodeInvalidSchema delivery.Code = "INVALID_SCHEMA"
	// CodeSchemaTooLarge: an event type's schema is over MaxSchemaBytes.
	CodeSchemaTooLarge delivery.Code = "SCHEMA_TOO_LARGE"
	// CodeUnknownEventType: the catalogue is enforced and has no such
	// type (or no type a pattern covers).
	CodeUnknownEventType delivery.Code = "UNKNOWN_EVENT_TYPE"
	// CodeEventDataInvalid: the catalogue is enforced and the event's
	// data fails its type's schema.
	CodeEventDataInvalid delivery.Code = "EVENT_DATA_INVALID"
)

// errorPrinter renders the schema library's messages.
var errorPrinter = message.NewPrinter(language.English)

// refusingLoader is the schema compiler's loader: Herald compiles a schema
// from itself alone, so a $ref to anything else (a URL, a file) fails
// rather than making Herald fetch or read it.
type refusingLoader struct{}

func (refusingLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("%s: Herald loads no schema but the event type's own", url)
}

// CompileSchema compiles a JSON Schema (any draft the library knows; the
// latest, 2020-12, when it names none). Errors are *ValidationError:
// CodeSchemaTooLarge, or CodeInvalidSchema whose Field locates the
// mistake within the schema ("schema/properties/total/type").
func CompileSchema(raw []byte) (*jsonschema.Schema, error) {
	if len(raw) > MaxSchemaBytes {
		return nil, delivery.Invalid(CodeSchemaTooLarge, "schema", "the schema is %d bytes, over the limit of %d", len(raw), MaxSchemaBytes)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, delivery.Invalid(CodeInvalidSchema, "schema", "the schema is not JSON: %v", err)
	}
	if _, ok := doc.(map[string]any); !ok {
		if _, ok := doc.(bool); !ok {
			return nil, delivery.Invalid(CodeInvalidSchema, "schema", "a schema is a JSON object (or true or false)")
		}
	}
	c := jsonschema.NewCompiler()
	c.UseLoader(refusingLoader{})
	if err := c.AddResource(schemaURL, doc); err != nil {
		return nil, fmt.Errorf("delivery: adding a schema: %w", err)
	}
	sch, err := c.Compile(schemaURL)
	if err == nil {
		return sch, nil
	}
	var bad *jsonschema.SchemaValidationError
	var ve *jsonschema.ValidationError
	var load *jsonschema.LoadURLError
	switch {
	case errors.As(err, &bad) && errors.As(bad.Err, &ve):
		at, msg := firstProblem(ve)
		return nil, delivery.Invalid(CodeInvalidSchema, "schema"+at, "not a valid JSON Schema at %q: %s", at, msg)
	case errors.As(err, &load):
		return nil, delivery.Invalid(CodeInvalidSchema, "schema", "%q: a schema may refer only to itself (a $ref or $schema naming anything else is refused)", load.URL)
	}
	return nil, delivery.Invalid(CodeInvalidSchema, "schema", "%s", strings.ReplaceAll(err.Error(), schemaURL, "schema"))
}

// firstProblem returns the instance location (a JSON pointer, "" for the
// root) and the message of the first deepest error of a validation.
func firstProblem(ve *jsonschema.ValidationError) (at, msg string) {
	for len(ve.Causes) > 0 {
		ve = ve.Causes[0]
	}
	for _, tok := range ve.InstanceLocation {
		at += "/" + strings.ReplaceAll(strings.ReplaceAll(tok, "~", "~0"), "/", "~1")
	}
	return at, ve.ErrorKind.LocalizedString(errorPrinter)
}

// compiledType is a catalogued type as the engine checks events against
// it.
type compiledType struct {
	schemaJSON []byte
	schema     *jsonschema.Schema // nil: no schema
}

// typeCache keeps compiled schemas by type name, so that a schema is
// compiled once, not at every event. An entry whose stored schema changed
// (on this replica or another) is compiled again; the cache is emptied
// when it holds more than maxCachedTypes entries.
type typeCache struct {
	mu    sync.Mutex
	types map[string]*compiledType // guarded by mu
}

// maxCachedTypes bounds the compiled schemas kept.
const maxCachedTypes = 4096

func (c *typeCache) compiled(et *store.EventType) (*compiledType, error) {
	c.mu.Lock()
	ct, ok := c.types[et.Name]
	c.mu.Unlock()
	if ok && bytes.Equal(ct.schemaJSON, et.Schema) {
		return ct, nil
	}
	ct = &compiledType{schemaJSON: et.Schema}
	if et.Schema != nil {
		sch, err := CompileSchema(et.Schema)
		if err != nil {
			return nil, fmt.Errorf("delivery: the stored schema of %s: %w", et.Name, err)
		}
		ct.schema = sch
	}
	c.mu.Lock()
	if c.types == nil || len(c.types) >= maxCachedTypes {
		c.types = make(map[string]*compiledType)
	}
	c.types[et.Name] = ct
	c.mu.Unlock()
	return ct, nil
}

// EventTypeParams are the inputs of CreateEventType and the result of a
// PATCH laid over a stored type for UpdateEventType.
type EventTypeParams struct {
	Name        string
	Description string
	// Schema is a JSON Schema of the events' data; nil or "null": none.
	Schema     json.RawMessage
	Deprecated bool
}

// validateEventType checks a catalogue entry and returns it as stored:
// the schema compiled (then kept compact) or nil.
func validateEventType(p *EventTypeParams) (store.EventType, error) {
	et := store.EventType{Name: p.Name, Description: p.Description, Deprecated: p.Deprecated}
	if err := delivery.ValidateEventType(p.Name); err != nil {
		var ve *delivery.ValidationError
		if errors.As(err, &ve) {
			ve.Field = "name"
		}
		return et, err
	}
	if !utf8.ValidString(p.Description) || len(p.Description) > delivery.MaxDescriptionLen {
		return et, delivery.Invalid(delivery.CodeInvalidDescription, "description", "must be UTF-8 of at most %d bytes", delivery.MaxDescriptionLen)
	}
	if len(p.Schema) == 0 || delivery.IsNull(p.Schema) {
		return et, nil
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, p.Schema); err != nil {
		return et, delivery.Invalid(CodeInvalidSchema, "schema", "the schema is not JSON: %v", err)
	}
	if _, err := CompileSchema(compact.Bytes()); err != nil {
		return et, err
	}
	et.Schema = compact.Bytes()
	return et, nil
}

// CreateEventType validates (compiling its schema) and stores a new
// catalogue entry. Errors: *ValidationError, store.ErrEventTypeExists.
func (e *Engine) CreateEventType(ctx context.Context, p *EventTypeParams) (*store.EventType, error) {
	et, err := validateEventType(p)
	if err != nil {
		return nil, err
	}
	return e.st.EventTypeCreate(ctx, &store.EventTypeCreateParams{EventType: et, Now: e.now()})
}

// UpdateEventType validates and stores the whole new state of a
// catalogue entry read at expectVersion. Errors: *ValidationError,
// store.ErrEventTypeNotFound, store.ErrEventTypeConflict.
func (e *Engine) UpdateEventType(ctx context.Context, p *EventTypeParams, expectVersion int64) (*store.EventType, error) {
	et, err := validateEventType(p)
	if err != nil {
		return nil, err
	}
	return e.st.EventTypeUpdate(ctx, &store.EventTypeUpdateParams{EventType: et, ExpectVersion: expectVersion, Now: e.now()})
}

// checkEvent checks an event against the catalogue when it is enforced,
// and reports whether its type is deprecated. Errors: *ValidationError
// with CodeUnknownEventType, or CodeEventDataInvalid whose Field locates
// the first failing value ("data/items/0/sku").
func (e *Engine) checkEvent(ctx context.Context, ev *delivery.Event) (deprecated bool, err error) {
	if !e.cfg.EnforceEventTypes {
		return false, nil
	}
	et, err := e.st.EventTypeGet(ctx, ev.Type)
	if errors.Is(err, store.ErrEventTypeNotFound) {
		return false, delivery.Invalid(CodeUnknownEventType, "type", "%q is not in the event type catalogue", ev.Type)
	}
	if err != nil {
		return false, err
	}
	ct, err := e.types.compiled(et)
	if err != nil || ct.schema == nil {
		return et.Deprecated, err
	}
	data := ev.Data
	if len(data) == 0 {
		data = json.RawMessage("null")
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		return false, delivery.Invalid(delivery.CodeInvalidEvent, "data", "data is not JSON: %v", err)
	}
	var ve *jsonschema.ValidationError
	if err := ct.schema.Validate(inst); errors.As(err, &ve) {
		at, msg := firstProblem(ve)
		return false, delivery.Invalid(CodeEventDataInvalid, "data"+at, "data%s fails the schema of %s: %s", at, ev.Type, msg)
	} else if err != nil {
		return false, fmt.Errorf("delivery: validating an event: %w", err)
	}
	return et.Deprecated, nil
}

// checkEndpointTypes checks an endpoint's event_types against the
// catalogue when it is enforced: an exact type must be catalogued, and a
// "prefix.*" pattern must cover at least one catalogued type. Patterns in
// kept (those the endpoint had) are not checked again, so a type removed
// from the catalogue does not block other changes to the endpoint.
func (e *Engine) checkEndpointTypes(ctx context.Context, patterns, kept []string) error {
	if !e.cfg.EnforceEventTypes {
		return nil
	}
	for i, p := range patterns {
		if p == "*" || slices.Contains(kept, p) {
			continue
		}
		field := fmt.Sprintf("event_types[%d]", i)
		if prefix, ok := strings.CutSuffix(p, "*"); ok {
			// Names are listed in byte order, so the first after the
			// prefix is one of its types if it has any.
			first, err := e.st.EventTypeList(ctx, &store.EventTypeListParams{After: prefix, Limit: 1})
			if err != nil {
				return err
			}
			if len(first) == 0 || !strings.HasPrefix(first[0].Name, prefix) {
				return delivery.Invalid(CodeUnknownEventType, field, "%q covers no type of the event type catalogue", p)
			}
			continue
		}
		if _, err := e.st.EventTypeGet(ctx, p); errors.Is(err, store.ErrEventTypeNotFound) {
			return delivery.Invalid(CodeUnknownEventType, field, "%q is not in the event type catalogue", p)
		} else if err != nil {
			return err
		}
	}
	return nil
}
