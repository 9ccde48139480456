package deliveryapi

import (
	"encoding/json"
	"errors"
	"net/http"

	"github.com/heraldstreams/herald/delivery"
	"github.com/heraldstreams/herald/delivery/dispatch"
	"github.com/heraldstreams/herald/internal/httpjson"
	"github.com/heraldstreams/herald/store"
)

// maxEventTypeBody bounds a catalogue request body: room for a schema of
// MaxSchemaBytes with indentation, and the other fields.
const maxEventTypeBody = 4 * delivery.MaxSchemaBytes

// eventTypeRequest is the body of POST /v1/event-types.
type eventTypeRequest struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Schema      json.RawMessage `json:"schema,omitempty"`
	Deprecated  bool            `json:"deprecated,omitempty"`
}

// eventTypeJSON is a catalogue entry as the API shows it.
type eventTypeJSON struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Schema      json.RawMessage `json:"schema"`
	Deprecated  bool            `json:"deprecated"`
	CreatedAt   *string         `json:"created_at"`
	UpdatedAt   *string         `json:"updated_at"`
}

func eventTypeView(et *store.EventType) eventTypeJSON {
	v := eventTypeJSON{Name: et.Name, Description: et.Description, Schema: et.Schema, Deprecated: et.Deprecated,
		CreatedAt: formatTime(et.CreatedAt), UpdatedAt: formatTime(et.UpdatedAt)}
	if v.Schema == nil {
		v.Schema = json.RawMessage("null")
	}
	return v
}

// installationWide returns h behind the check that the credential has no
// tenant: the catalogue is shared by every tenant, so a tenant's
// credential reads it but does not change it (403 tenant_forbidden).
func (a *API) installationWide(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		tenant, err := tenantOf(r.Context())
		if err == nil && tenant != "" {
			err = &httpjson.Error{Status: http.StatusForbidden, Code: string(CodeTenantForbidden), Message: "the event type catalogue is installation-wide: only a credential without a tenant changes it"}
		}
		if err != nil {
			a.fail(w, r, err)
			return
		}
		h(w, r)
	}
}

func (a *API) createEventType(w http.ResponseWriter, r *http.Request) {
	var req eventTypeRequest
	if err := decodeBody(w, r, maxEventTypeBody, &req); err != nil {
		a.fail(w, r, err)
		return
	}
	et, err := a.e.CreateEventType(r.Context(), &dispatch.EventTypeParams{Name: req.Name, Description: req.Description, Schema: req.Schema, Deprecated: req.Deprecated})
	if err != nil {
		a.fail(w, r, err)
		return
	}
	w.Header().Set("Location", APIPrefix+"event-types/"+et.Name)
	writeJSON(w, http.StatusCreated, eventTypeView(et))
}

type listEventTypesJSON struct {
	Data       []eventTypeJSON `json:"data"`
	NextCursor *string         `json:"next_cursor"`
}

func (a *API) listEventTypes(w http.ResponseWriter, r *http.Request) {
	q, limit, err := listQuery(r)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	cursor := q.Get("cursor")
	if cursor != "" && delivery.ValidateEventType(cursor) != nil {
		a.fail(w, r, errBadCursor)
		return
	}
	ets, err := a.e.Store().EventTypeList(r.Context(), &store.EventTypeListParams{After: cursor, Limit: limit + 1})
	if err != nil {
		a.fail(w, r, err)
		return
	}
	var out listEventTypesJSON
	out.Data, out.NextCursor = pageOf(ets, limit, func(et *store.EventType) string { return et.Name }, eventTypeView)
	writeJSON(w, http.StatusOK, out)
}

func (a *API) getEventType(w http.ResponseWriter, r *http.Request) {
	if err := checkQuery(r); err != nil {
		a.fail(w, r, err)
		return
	}
	et, err := a.e.Store().EventTypeGet(r.Context(), pathID(r))
	if err != nil {
		a.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, eventTypeView(et))
}

// patchEventType changes description, schema and deprecated; null
// restores a field's default (no description, no schema, not
// deprecated). The name cannot change.
func (a *API) patchEventType(w http.ResponseWriter, r *http.Request) {
	var patch eventTypePatch
	if err := decodeBody(w, r, maxEventTypeBody, &patch); err != nil {
		a.fail(w, r, err)
		return
	}
	ctx, name := r.Context(), pathID(r)
	for range 3 {
		cur, err := a.e.Store().EventTypeGet(ctx, name)
		if err != nil {
			a.fail(w, r, err)
			return
		}
		p := dispatch.EventTypeParams{Name: cur.Name, Description: cur.Description, Schema: cur.Schema, Deprecated: cur.Deprecated}
		if err := applyEventTypePatch(&p, &patch); err != nil {
			a.fail(w, r, err)
			return
		}
		et, err := a.e.UpdateEventType(ctx, &p, cur.Version)
		if errors.Is(err, store.ErrEventTypeConflict) {
			continue
		}
		if err != nil {
			a.fail(w, r, err)
			return
		}
		writeJSON(w, http.StatusOK, eventTypeView(et))
		return
	}
	a.fail(w, r, store.ErrEventTypeConflict)
}

// eventTypePatch is the body of PATCH /v1/event-types/{name}: a field
// absent is kept, a field set to null takes its default.
type eventTypePatch struct {
	Description json.RawMessage `json:"description"`
	Schema      json.RawMessage `json:"schema"`
	Deprecated  json.RawMessage `json:"deprecated"`
}

// applyEventTypePatch lays a patch over the stored state p.
func applyEventTypePatch(p *dispatch.EventTypeParams, patch *eventTypePatch) error {
	if patch.Schema != nil {
		p.Schema = patch.Schema // null: no schema
	}
	if patch.Description != nil {
		p.Description = ""
		if !delivery.IsNull(patch.Description) && json.Unmarshal(patch.Description, &p.Description) != nil {
			return badRequest(CodeInvalidJSON, "description", "description must be a string")
		}
	}
	if patch.Deprecated != nil {
		p.Deprecated = false
		if !delivery.IsNull(patch.Deprecated) && json.Unmarshal(patch.Deprecated, &p.Deprecated) != nil {
			return badRequest(CodeInvalidJSON, "deprecated", "deprecated must be true or false")
		}
	}
	return nil
}

func (a *API) deleteEventType(w http.ResponseWriter, r *http.Request) {
	if err := a.e.Store().EventTypeDelete(r.Context(), pathID(r)); err != nil {
		a.fail(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
