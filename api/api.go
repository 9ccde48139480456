// Package api holds the OpenAPI 3.1 description of Herald's own HTTP API
// (openapi.json beside this file): the management API under
// /_herald/v1/, the subscription and callback routes, and the health,
// readiness and metrics routes. The document is embedded in the binary
// and served at GET /_herald/v1/openapi.json.
package api

import (
	"bytes"
	_ "embed" // the document
	"net/http"
)

// Path is where Herald serves the document.
const Path = "/_herald/v1/openapi.json"

//go:embed openapi.json
var document []byte

// OpenAPI returns the document, a copy the caller may change.
func OpenAPI() []byte { return bytes.Clone(document) }

// Handler serves the document as it is embedded, as application/json.
func Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Type", "application/json")
		h.Set("Cache-Control", "no-cache")
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(document) // a failed write means the client is gone
	})
}
