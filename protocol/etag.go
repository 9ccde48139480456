package protocol

import (
	"strconv"
	"strings"
)

// ETag returns the entity tag of a read response (docs/protocol.md, Caching,
// cursors and ETags): the stream's internal ID, the start and end positions
// of the response, and ":c" when the response carries the closure signal, so
// a stream closed after a read never gets a 304 that hides the closure. The
// tag is quoted as HTTP requires. Stream IDs are unique for the life of the
// store, so a stream re-created at the same path never matches an old tag.
func ETag(streamID, start, end int64, closed bool) string {
	b := make([]byte, 0, 48)
	b = append(b, '"')
	b = strconv.AppendInt(b, streamID, 10)
	b = append(b, ':')
	b = strconv.AppendInt(b, start, 10)
	b = append(b, ':')
	b = strconv.AppendInt(b, end, 10)
	if closed {
		b = append(b, ':', 'c')
	}
	b = append(b, '"')
	return string(b)
}

// ETagMatches reports whether an If-None-Match header value matches etag:
// "*", or any entity tag of the comma-separated list, compared weakly (a
// W/ prefix is ignored, RFC 9110 13.1.2). A bare unquoted tag is accepted
// too, for clients that strip the quotes.
func ETagMatches(ifNoneMatch, etag string) bool {
	bare := strings.Trim(etag, `"`)
	for _, part := range strings.Split(ifNoneMatch, ",") {
		part = strings.TrimSpace(part)
		if part == "*" {
			return true
		}
		part = strings.TrimPrefix(part, "W/")
		if part == etag || part == bare {
			return true
		}
	}
	return false
}
