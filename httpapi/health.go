package httpapi

import (
	"errors"
	"net/http"

	"github.com/heraldstreams/herald/store"
)

// healthz answers 200 while the process serves: it needs nothing else.
func (s *Server) healthz(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, statusBody{Status: "ok"})
}

func (s *Server) readyz(w http.ResponseWriter, r *http.Request) {
	switch {
	case s.shuttingDown.Load():
		writeJSON(w, http.StatusServiceUnavailable, statusBody{Status: "unavailable", Reason: "shutting down"})
	case !s.ready.Load():
		writeJSON(w, http.StatusServiceUnavailable, statusBody{Status: "unavailable", Reason: "not ready"})
	case s.storeDown.Load() != nil:
		writeJSON(w, http.StatusServiceUnavailable, statusBody{Status: "unavailable", Reason: *s.storeDown.Load()})
	default:
		writeJSON(w, http.StatusOK, statusBody{Status: "ok"})
	}
}

// SetStoreHealth sets what the store's last heartbeat said (package
// replica): readyz reports not ready, with the reason, from a failed one
// until one goes through. The reason names no host or address (readyz
// is public); the log has the error.
func (s *Server) SetStoreHealth(err error) {
	switch {
	case err == nil:
		s.storeDown.Store(nil)
	case errors.Is(err, store.ErrUnavailable):
		s.storeDown.Store(&reasonUnreachable)
	default:
		s.storeDown.Store(&reasonHeartbeat)
	}
}

// The reasons readyz gives for a store that failed its heartbeat.
var (
	reasonUnreachable = "the database cannot be reached"
	reasonHeartbeat   = "the store failed its heartbeat"
)

// statusBody is the body of the health endpoints.
type statusBody struct {
	Status string `json:"status"`
	// Reason says why readyz is not ready.
	Reason string `json:"reason,omitempty"`
}
