package httpjson

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
)

// An error body has one shape: code and message, and field only when the
// error names an input; HEAD gets the headers alone, the condition's
// headers included.
func TestErrorWrite(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		method string
		d      Detail
		want   string
	}{
		{"GET", Detail{Code: "NOT_FOUND", Message: "no <such> route"}, `{"error":{"code":"NOT_FOUND","message":"no <such> route"}}`},
		{"POST", Detail{Code: "INVALID_JSON", Message: "bad", Field: "url"}, `{"error":{"code":"INVALID_JSON","message":"bad","field":"url"}}`},
		{"HEAD", Detail{Code: "NOT_FOUND", Message: "gone"}, ``},
	} {
		w := httptest.NewRecorder()
		w.Header().Set("Content-Length", "12")
		w.Header().Set("ETag", `"x"`)
		e := &Error{Status: http.StatusNotFound, Code: c.d.Code, Message: c.d.Message, Field: c.d.Field,
			Header: func(h http.Header) { h.Set("Retry-After", "1") }}
		e.Write(w, httptest.NewRequest(c.method, "/", nil))
		h := w.Header()
		if w.Code != http.StatusNotFound || w.Body.String() != c.want || h.Get("Content-Type") != "application/json" ||
			h.Get("Cache-Control") != "no-store" || h.Get("Content-Length") != "" || h.Get("ETag") != "" || h.Get("Retry-After") != "1" {
			t.Errorf("%s %+v: %d %v %q, want %q", c.method, c.d, w.Code, h, w.Body, c.want)
		}
	}
}

// A value that does not encode is answered with the INTERNAL error body.
func TestWrite(t *testing.T) {
	t.Parallel()
	w := httptest.NewRecorder()
	Write(w, http.StatusOK, map[string]string{"a": "<b>"})
	if w.Code != http.StatusOK || w.Body.String() != `{"a":"<b>"}` || w.Header().Get("Content-Type") != "application/json" {
		t.Errorf("Write: %d %v %q", w.Code, w.Header(), w.Body)
	}
	w = httptest.NewRecorder()
	Write(w, http.StatusOK, func() {})
	if w.Code != http.StatusInternalServerError || w.Body.String() != `{"error":{"code":"INTERNAL","message":"internal error"}}` {
		t.Errorf("Write of a func: %d %q", w.Code, w.Body)
	}
}

func TestCheckQuery(t *testing.T) {
	t.Parallel()
	ok := httptest.NewRequest(http.MethodGet, "/x?limit=5&cursor=c", nil)
	if err := CheckQuery(ok, "limit", "cursor"); err != nil {
		t.Fatalf("known parameters refused: %v", err)
	}
	bad := httptest.NewRequest(http.MethodGet, "/x?limit=5&limt=6", nil)
	err := CheckQuery(bad, "limit")
	var he *Error
	if !errors.As(err, &he) || he.Status != http.StatusBadRequest || he.Code != "UNKNOWN_PARAMETER" || he.Field != "limt" {
		t.Fatalf("misspelt parameter: %#v", err)
	}
}
