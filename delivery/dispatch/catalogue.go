package dispatch

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/heraldstreams/herald/delivery"
	"github.com/heraldstreams/herald/store"
)

// The event type catalogue is installation-wide: every tenant reads the
// same catalogue, and only a credential without a tenant changes it. Its
// rules (names, schemas, the checks of events and endpoints) are in
// package delivery; here the engine keeps it in the store.
//
// With EngineConfig.EnforceEventTypes the catalogue is enforced. Events
// appended straight to a stream are not checked (the stream protocol
// knows no event types).

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
		sch, err := delivery.CompileSchema(et.Schema)
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
	schema, err := delivery.CheckEventTypeEntry(p.Name, p.Description, p.Schema)
	et.Schema = schema
	return et, err
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
// (see delivery.UnknownEventType and delivery.CheckEventData).
func (e *Engine) checkEvent(ctx context.Context, ev *delivery.Event) (deprecated bool, err error) {
	if !e.cfg.EnforceEventTypes {
		return false, nil
	}
	et, err := e.st.EventTypeGet(ctx, ev.Type)
	if errors.Is(err, store.ErrEventTypeNotFound) {
		return false, delivery.UnknownEventType(ev.Type)
	}
	if err != nil {
		return false, err
	}
	ct, err := e.types.compiled(et)
	if err != nil || ct.schema == nil {
		return et.Deprecated, err
	}
	if err := delivery.CheckEventData(ct.schema, ev.Type, ev.Data); err != nil {
		return false, err
	}
	return et.Deprecated, nil
}

// storedCatalogue answers delivery.CheckEndpointEventTypes from the store.
type storedCatalogue struct {
	ctx context.Context
	st  EngineStore
}

func (c storedCatalogue) Has(name string) (bool, error) {
	_, err := c.st.EventTypeGet(c.ctx, name)
	if errors.Is(err, store.ErrEventTypeNotFound) {
		return false, nil
	}
	return err == nil, err
}

func (c storedCatalogue) HasPrefix(prefix string) (bool, error) {
	// Names are listed in byte order, so the first after the prefix is
	// one of its types if it has any.
	first, err := c.st.EventTypeList(c.ctx, &store.EventTypeListParams{After: prefix, Limit: 1})
	if err != nil {
		return false, err
	}
	return len(first) > 0 && strings.HasPrefix(first[0].Name, prefix), nil
}

// checkEndpointTypes checks an endpoint's event_types against the
// catalogue when it is enforced (delivery.CheckEndpointEventTypes).
func (e *Engine) checkEndpointTypes(ctx context.Context, patterns, kept []string) error {
	if !e.cfg.EnforceEventTypes {
		return nil
	}
	return delivery.CheckEndpointEventTypes(storedCatalogue{ctx: ctx, st: e.st}, patterns, kept)
}
