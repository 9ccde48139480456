package protocol

import (
	"bytes"
	"encoding/json"
	"errors"
	"unicode/utf8"
)

// Errors of JSON mode (docs/protocol.md, JSON mode). Each is a 400 Bad Request.
var (
	// ErrInvalidJSON: the body is not one valid UTF-8 JSON value.
	ErrInvalidJSON = errors.New("protocol: body is not valid JSON")
	// ErrEmptyJSONArray: an append body is the empty array, which carries
	// no message.
	ErrEmptyJSONArray = errors.New("protocol: an append must not be an empty JSON array")
)

// FrameJSON turns the body of a JSON-mode request into the framed form the
// store keeps: each message compacted and followed by '\n'. A top-level
// array is flattened exactly one level, each element becoming a message
// (docs/protocol.md, JSON mode); any other value is one message. An empty
// array is ErrEmptyJSONArray unless allowEmptyArray (a create may start
// empty; an append may not), in which case it frames to zero messages.
//
// Compacted JSON never contains a raw newline (newlines inside strings are
// escaped), so '\n' is an unambiguous message terminator.
func FrameJSON(body []byte, allowEmptyArray bool) (framed []byte, messages int, err error) {
	if !utf8.Valid(body) {
		return nil, 0, ErrInvalidJSON
	}
	var buf bytes.Buffer
	buf.Grow(len(body) + 1)
	// json.Compact validates as it goes and drops insignificant space,
	// including leading and trailing space.
	if err := json.Compact(&buf, body); err != nil {
		return nil, 0, ErrInvalidJSON
	}
	out := buf.Bytes()
	if len(out) == 0 {
		return nil, 0, ErrInvalidJSON
	}
	if out[0] != '[' {
		return append(out, '\n'), 1, nil
	}
	if len(out) == 2 { // "[]"
		if !allowEmptyArray {
			return nil, 0, ErrEmptyJSONArray
		}
		return nil, 0, nil
	}
	// Drop the outer brackets and turn each top-level comma into '\n'. The
	// input is valid compacted JSON, so tracking strings (with escapes) and
	// nesting depth is enough to find the top-level commas.
	inner := out[1 : len(out)-1]
	messages = 1
	depth, inString, escaped := 0, false, false
	for i, c := range inner {
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == '[' || c == '{':
			depth++
		case c == ']' || c == '}':
			depth--
		case c == ',' && depth == 0:
			inner[i] = '\n'
			messages++
		}
	}
	// inner shares out's array: shift it left over the '[' and end it with
	// the last terminator where the ']' was.
	n := copy(out, inner)
	out = append(out[:n], '\n')
	return out, messages, nil
}

// JSONArrayLen is the length of the JSON array that AppendJSONArray makes
// from framed data of length n.
func JSONArrayLen(n int) int {
	if n == 0 {
		return 2
	}
	return n + 1
}

// AppendJSONArray appends to dst the JSON array response body for framed
// data (messages each ending in '\n', as FrameJSON makes them): "[m1,m2]",
// or "[]" when framed is empty. It is the inverse of FrameJSON and runs at
// memory speed: one copy, with the separators patched in place.
func AppendJSONArray(dst, framed []byte) []byte {
	if len(framed) == 0 {
		return append(dst, '[', ']')
	}
	start := len(dst)
	dst = append(dst, '[')
	dst = append(dst, framed...)
	body := dst[start+1:]
	JoinJSONMessages(body)
	if body[len(body)-1] == ',' {
		body[len(body)-1] = ']'
	} else {
		// Framed data always ends in '\n'; close the array regardless so
		// the body stays well-formed.
		dst = append(dst, ']')
	}
	return dst
}

// JoinJSONMessages turns, in place, every '\n' of framed data (or of a
// piece of it) into ',': the separators of the JSON array the messages
// are sent as. The '\n' that ends the last message becomes a ',' too,
// which the caller makes the array's closing ']'. Framed messages are
// compacted JSON, where a '\n' is never inside a value, so a piece may
// be joined on its own, wherever it was cut.
func JoinJSONMessages(framed []byte) {
	for i := bytes.IndexByte(framed, '\n'); i >= 0; {
		framed[i] = ','
		j := bytes.IndexByte(framed[i+1:], '\n')
		if j < 0 {
			return
		}
		i += 1 + j
	}
}
