package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// printObject writes every field of a JSON object answer as "name: value"
// lines, in the order Herald sent them, except the names in skip (which
// the caller shows its own way). A get command prints the resource with
// it, so a field Herald adds shows without a change here. Strings print
// as they are, null and "" as "-", a list of strings joined by ", ", and
// any other value as compact JSON.
func (c *apiClient) printObject(raw json.RawMessage, skip ...string) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return fmt.Errorf("the answer is not a JSON object")
	}
	var fields [][2]string
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return fmt.Errorf("the answer is not the expected JSON: %w", err)
		}
		name, _ := t.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return fmt.Errorf("the answer is not the expected JSON: %w", err)
		}
		if slices.Contains(skip, name) {
			continue
		}
		fields = append(fields, [2]string{strings.ReplaceAll(name, "_", " "), fieldValue(v)})
	}
	return c.printFields(fields)
}

// fieldValue is how printObject shows one JSON value.
func fieldValue(v json.RawMessage) string {
	var s string
	if json.Unmarshal(v, &s) == nil {
		return s
	}
	var list []string
	if json.Unmarshal(v, &list) == nil {
		return strings.Join(list, ", ")
	}
	if bytes.Equal(v, []byte("null")) {
		return ""
	}
	var b bytes.Buffer
	if json.Compact(&b, v) != nil {
		return string(v)
	}
	return b.String()
}
