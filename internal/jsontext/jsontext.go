// Package jsontext writes the small JSON values Herald encodes on hot
// paths (token claims, consumer memberships) without reflection.
package jsontext

import "encoding/json"

// AppendString appends s as a JSON string, encoded as encoding/json
// encodes it: as is between quotes when it is printable ASCII without
// quotes, backslashes or HTML characters (stream paths and consumer ids
// nearly always are), through encoding/json otherwise.
func AppendString(dst []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			q, err := json.Marshal(s)
			if err != nil {
				panic(err) // a string always encodes
			}
			return append(dst, q...)
		}
	}
	dst = append(dst, '"')
	dst = append(dst, s...)
	return append(dst, '"')
}

// AppendArray appends a JSON array of n elements, each written by elem.
func AppendArray(dst []byte, n int, elem func(dst []byte, i int) []byte) []byte {
	dst = append(dst, '[')
	for i := range n {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = elem(dst, i)
	}
	return append(dst, ']')
}
