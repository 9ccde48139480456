// Package httpjson writes Herald's JSON responses: one writer for every
// answer of Herald's API, and one error body for every error it answers
// with:
//
//	{"error": {"code": "STREAM_NOT_FOUND", "message": "...", "field": "..."}}
//
// where code is the stable, machine-readable JSON code of the condition,
// message says what was wrong in words, and field, present only when the
// error is about one input, names it. Error is the one error type of
// every route, and its Write the one writer of error answers. (The
// callback API's answers are the Durable Streams subscription protocol's
// own shape, written with Write.)
package httpjson

import (
	"bytes"
	"encoding/json"
	"net/http"
)

// Body is the JSON body of every error response.
type Body struct {
	Error Detail `json:"error"`
}

// Detail is what an error body says.
type Detail struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	// Field names the input the error is about; "" (left out) for none.
	Field string `json:"field,omitempty"`
	// CurrentHolder and Generation are the Durable Streams protocol's
	// fields of a claim refused because another worker holds the lease
	// (ALREADY_CLAIMED); left out otherwise.
	CurrentHolder string `json:"current_holder,omitempty"`
	Generation    *int64 `json:"generation,omitempty"`
}

// Header values of every JSON response. net/http never modifies header
// value slices, so they can be shared.
var (
	valJSON    = []string{"application/json"}
	valNoStore = []string{"no-store"}
)

// internalBody is the body of a response that could not be encoded.
var internalBody = []byte(`{"error":{"code":"INTERNAL","message":"internal error"}}`)

// Write writes v as a JSON response with status. The JSON is not
// HTML-escaped ("<" stays "<"): it is served as application/json with
// nosniff, never as a page. Should v not encode (Herald's response types
// always do), the client gets a 500 with the INTERNAL error body.
func Write(w http.ResponseWriter, status int, v any) {
	body, err := Encode(v)
	if err != nil {
		status, body = http.StatusInternalServerError, internalBody
	}
	h := w.Header()
	h["Content-Type"] = valJSON
	h["Cache-Control"] = valNoStore
	w.WriteHeader(status)
	_, _ = w.Write(body) // a failed write means the client is gone
}

// Encode is the JSON of v as Write writes it.
func Encode(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte{'\n'}), nil
}
