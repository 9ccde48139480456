package delivery

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// The event type catalogue lists the installation's event types, each
// with a description, an optional JSON Schema of its events' data and a
// deprecation flag. These are its rules; the engine reads and writes the
// catalogue in the store and calls them.
//
// When the catalogue is enforced, an event published through the API must
// be of a catalogued type and its data must pass the type's schema, and
// an endpoint's event_types must each name a catalogued type or, for
// "prefix.*", cover at least one.

// Catalogue limits and codes.
const (
	// MaxSchemaBytes bounds an event type's schema (compact JSON).
	MaxSchemaBytes = 64 << 10
	// schemaURL names a schema while it compiles: a $ref that leaves it
	// resolves under this host and is refused, like every remote one.
	schemaURL = "https://herald.invalid/event-type.json"

	// CodeInvalidSchema: an event type's schema is not a JSON Schema
	// Herald can compile (invalid, or a $ref that leaves the schema).
	CodeInvalidSchema Code = "INVALID_SCHEMA"
	// CodeSchemaTooLarge: an event type's schema is over MaxSchemaBytes.
	CodeSchemaTooLarge Code = "SCHEMA_TOO_LARGE"
	// CodeUnknownEventType: the catalogue is enforced and has no such
	// type (or no type a pattern covers).
	CodeUnknownEventType Code = "UNKNOWN_EVENT_TYPE"
	// CodeEventDataInvalid: the catalogue is enforced and the event's
	// data fails its type's schema.
	CodeEventDataInvalid Code = "EVENT_DATA_INVALID"
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
		return nil, Invalid(CodeSchemaTooLarge, "schema", "the schema is %d bytes, over the limit of %d", len(raw), MaxSchemaBytes)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, Invalid(CodeInvalidSchema, "schema", "the schema is not JSON: %v", err)
	}
	if _, ok := doc.(map[string]any); !ok {
		if _, ok := doc.(bool); !ok {
			return nil, Invalid(CodeInvalidSchema, "schema", "a schema is a JSON object (or true or false)")
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
		return nil, Invalid(CodeInvalidSchema, "schema"+at, "not a valid JSON Schema at %q: %s", at, msg)
	case errors.As(err, &load):
		return nil, Invalid(CodeInvalidSchema, "schema", "%q: a schema may refer only to itself (a $ref or $schema naming anything else is refused)", load.URL)
	}
	return nil, Invalid(CodeInvalidSchema, "schema", "%s", strings.ReplaceAll(err.Error(), schemaURL, "schema"))
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

// CheckEventTypeEntry checks a catalogue entry (its name, description and
// schema) and returns the schema as it is stored: compact JSON, or nil
// when it has none (nil, empty or "null"). Errors are *ValidationError
// whose Field is "name", "description" or within "schema".
func CheckEventTypeEntry(name, description string, schema json.RawMessage) ([]byte, error) {
	if err := ValidateEventType(name); err != nil {
		var ve *ValidationError
		if errors.As(err, &ve) {
			ve.Field = "name"
		}
		return nil, err
	}
	if !utf8.ValidString(description) || len(description) > MaxDescriptionLen {
		return nil, Invalid(CodeInvalidDescription, "description", "must be UTF-8 of at most %d bytes", MaxDescriptionLen)
	}
	if len(schema) == 0 || IsNull(schema) {
		return nil, nil
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, schema); err != nil {
		return nil, Invalid(CodeInvalidSchema, "schema", "the schema is not JSON: %v", err)
	}
	if _, err := CompileSchema(compact.Bytes()); err != nil {
		return nil, err
	}
	return compact.Bytes(), nil
}

// CheckEventData checks an event's data (nil or empty: JSON null) against
// its type's compiled schema. Errors are *ValidationError: CodeInvalidEvent
// when the data is not JSON, or CodeEventDataInvalid whose Field locates
// the first failing value ("data/items/0/sku").
func CheckEventData(sch *jsonschema.Schema, eventType string, data json.RawMessage) error {
	if len(data) == 0 {
		data = json.RawMessage("null")
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		return Invalid(CodeInvalidEvent, "data", "data is not JSON: %v", err)
	}
	var ve *jsonschema.ValidationError
	if err := sch.Validate(inst); errors.As(err, &ve) {
		at, msg := firstProblem(ve)
		return Invalid(CodeEventDataInvalid, "data"+at, "data%s fails the schema of %s: %s", at, eventType, msg)
	} else if err != nil {
		return fmt.Errorf("delivery: validating an event: %w", err)
	}
	return nil
}

// UnknownEventType is the error of an event whose type the enforced
// catalogue does not list.
func UnknownEventType(eventType string) *ValidationError {
	return Invalid(CodeUnknownEventType, "type", "%q is not in the event type catalogue", eventType)
}

// Catalogue answers the two questions the endpoint check asks of the
// stored catalogue.
type Catalogue interface {
	// Has reports whether the catalogue lists the type name.
	Has(name string) (bool, error)
	// HasPrefix reports whether it lists a type starting with prefix.
	HasPrefix(prefix string) (bool, error)
}

// CheckEndpointEventTypes checks an endpoint's event_types against the
// enforced catalogue: an exact type must be catalogued, and a "prefix.*"
// pattern must cover at least one catalogued type ("*" covers all).
// Patterns in kept (those the endpoint had) are not checked again, so a
// type removed from the catalogue does not block other changes to the
// endpoint. Errors: *ValidationError with CodeUnknownEventType and Field
// "event_types[i]", or the catalogue's.
func CheckEndpointEventTypes(cat Catalogue, patterns, kept []string) error {
	for i, p := range patterns {
		if p == "*" || slices.Contains(kept, p) {
			continue
		}
		field := fmt.Sprintf("event_types[%d]", i)
		if prefix, ok := strings.CutSuffix(p, "*"); ok {
			found, err := cat.HasPrefix(prefix)
			if err != nil {
				return err
			}
			if !found {
				return Invalid(CodeUnknownEventType, field, "%q covers no type of the event type catalogue", p)
			}
			continue
		}
		found, err := cat.Has(p)
		if err != nil {
			return err
		}
		if !found {
			return Invalid(CodeUnknownEventType, field, "%q is not in the event type catalogue", p)
		}
	}
	return nil
}
