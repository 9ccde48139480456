package httpapi

import (
	"encoding/json"
	"net/http"
	"testing"
)

// With access control off, whoami answers for the anonymous principal,
// which may do anything.
func TestWhoamiWithAccessControlOff(t *testing.T) {
	t.Parallel()
	s := newTestServer(&fakeStore{t: t}, Config{})
	w := do(s, http.MethodGet, "/_herald/v1/whoami", nil, nil)
	if w.Code != http.StatusOK || w.Header().Get("Cache-Control") != "no-store" {
		t.Fatalf("%d %v", w.Code, w.Header())
	}
	var b whoamiBody
	if err := json.Unmarshal(w.Body.Bytes(), &b); err != nil {
		t.Fatal(err)
	}
	if b.ID != "anonymous" || !b.Admin || b.AuthEnabled || len(b.Scopes) != 1 || b.Paths == nil {
		t.Errorf("whoami: %+v", b)
	}
}
