package store

import (
	"context"
	"errors"
	"time"
)

// EventTypeStore is the part of the contract that keeps the event type
// catalogue: the installation's event types, each with a description, an
// optional JSON Schema of its events' data and a deprecation flag. The
// store keeps what it is given; the delivery package validates names and
// compiles schemas. Every Store implements it.
type EventTypeStore interface {
	// EventTypeCreate stores a new event type. ErrEventTypeExists when
	// the name is taken.
	EventTypeCreate(ctx context.Context, params *EventTypeCreateParams) (*EventType, error)
	// EventTypeGet returns one event type, or ErrEventTypeNotFound.
	EventTypeGet(ctx context.Context, name string) (*EventType, error)
	// EventTypeList returns event types ordered by name (byte order),
	// after params.After, at most params.Limit (0: all).
	EventTypeList(ctx context.Context, params *EventTypeListParams) ([]EventType, error)
	// EventTypeUpdate replaces an event type's description, schema and
	// deprecation when its Version is still params.ExpectVersion, and
	// returns it stored. ErrEventTypeNotFound, ErrEventTypeConflict.
	EventTypeUpdate(ctx context.Context, params *EventTypeUpdateParams) (*EventType, error)
	// EventTypeDelete removes an event type. ErrEventTypeNotFound when
	// absent.
	EventTypeDelete(ctx context.Context, name string) error
}

// Errors of EventTypeStore.
var (
	ErrEventTypeNotFound = errors.New("store: event type not found")
	ErrEventTypeExists   = errors.New("store: event type exists")
	ErrEventTypeConflict = errors.New("store: event type changed since it was read")
)

// EventType is one entry of the event type catalogue.
type EventType struct {
	Name        string
	Description string
	// Schema is a JSON Schema of the events' data, nil when none.
	Schema     []byte
	Deprecated bool
	CreatedAt  time.Time
	UpdatedAt  time.Time
	// Version increases with every change.
	Version int64
}

// EventTypeCreateParams are the inputs of EventTypeCreate.
type EventTypeCreateParams struct {
	EventType EventType // the times and Version are set by the store
	Now       time.Time
}

// EventTypeListParams are the inputs of EventTypeList.
type EventTypeListParams struct {
	After string
	Limit int
}

// EventTypeUpdateParams are the inputs of EventTypeUpdate.
type EventTypeUpdateParams struct {
	EventType     EventType // Name says which; CreatedAt and Version are ignored
	ExpectVersion int64
	Now           time.Time
}
