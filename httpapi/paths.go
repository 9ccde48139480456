package httpapi

import (
	"net/http"
	"net/url"
	pathpkg "path"
	"strings"
	"unicode/utf8"

	"github.com/heraldstreams/herald/internal/httpjson"
	"github.com/heraldstreams/herald/subscription"
)

// maxPathBytes bounds a stream path (docs/protocol.md,
// Streams and paths).
const maxPathBytes = 1024

// isReserved reports whether path lies under a prefix where no stream
// lives.
func isReserved(path string) bool {
	return strings.HasPrefix(path, HeraldPrefix) || strings.HasPrefix(path, CallbackPrefix) ||
		path == strings.TrimSuffix(HeraldPrefix, "/") || path == strings.TrimSuffix(CallbackPrefix, "/")
}

// isDS reports whether path lies under the reserved subscription API's
// prefix, {root}/__ds (the prefix itself included): no stream lives
// there.
func (s *Server) isDS(path string) bool {
	return strings.HasPrefix(path, s.dsPrefix) || path == strings.TrimSuffix(s.dsPrefix, "/")
}

// errOutsideRoot is the answer for a stream path outside the stream
// root: no stream lives there.
func errOutsideRoot(root subscription.Root) error {
	return &httpjson.Error{Status: http.StatusNotFound, Code: "STREAM_NOT_FOUND", Message: "streams live under " + root.Prefix()}
}

// canonicalReserved reports whether the escaped path of a request for a
// reserved path (every route under /_herald/ and /callback/) is the one
// spelling of its route: no percent-encoded byte that needs no encoding
// (a letter, a digit, "-._~", or "!$&'()*+,;=:@"), every escape in
// upper case, and an encoded slash only inside a consumer id (the last
// segment of a callback or consumer route, which holds its stream path
// encoded). "/%5fherald/" decodes to "/_herald/" and "/_herald/v1/%6beys"
// to "/_herald/v1/keys", but a proxy or log that watches the literal
// spelling would miss them, so such spellings are refused rather than
// served.
func (s *Server) canonicalReserved(u *url.URL) bool {
	raw := u.EscapedPath()
	if !strings.Contains(raw, "%") {
		return true
	}
	if !strings.HasPrefix(raw, HeraldPrefix) && !strings.HasPrefix(raw, CallbackPrefix) && !strings.HasPrefix(raw, s.dsPrefix) {
		return false // the prefix itself is encoded
	}
	slashesFrom := len(raw) // where an encoded slash may start
	for _, p := range consumerIDPrefixes {
		if strings.HasPrefix(raw, p) && !strings.Contains(raw[len(p):], "/") {
			slashesFrom = len(p)
		}
	}
	// The last segment of {root}/__ds/subscriptions/{id}/streams/{path}
	// holds a stream path, encoded.
	if rest, ok := strings.CutPrefix(raw, s.dsPrefix+"subscriptions/"); ok {
		if id, tail, ok := strings.Cut(rest, "/"); ok && !strings.Contains(id, "%") {
			if p, ok := strings.CutPrefix(tail, "streams/"); ok && !strings.Contains(p, "/") {
				slashesFrom = len(raw) - len(p)
			}
		}
	}
	for i := 0; i < len(raw); i++ {
		if raw[i] != '%' {
			continue
		}
		if i+2 >= len(raw) || !isUpperHex(raw[i+1]) || !isUpperHex(raw[i+2]) {
			return false
		}
		b := unhex(raw[i+1])<<4 | unhex(raw[i+2])
		if b == '/' && i < slashesFrom || b != '/' && b < 0x80 && !needsEscape(b) {
			return false
		}
	}
	return true
}

// consumerIDPrefixes are the routes whose last segment is a consumer id
// ("{subscription_id}:{url-encoded stream path}"), read escaped.
var consumerIDPrefixes = []string{CallbackPrefix, consumersPrefix}

func isUpperHex(c byte) bool { return '0' <= c && c <= '9' || 'A' <= c && c <= 'F' }

func unhex(c byte) byte {
	if c <= '9' {
		return c - '0'
	}
	return c - 'A' + 10
}

// needsEscape reports whether an ASCII byte must be percent-encoded in a
// path segment: whether an escape of it is the only spelling it has.
func needsEscape(b byte) bool {
	if 'a' <= b && b <= 'z' || 'A' <= b && b <= 'Z' || '0' <= b && b <= '9' {
		return false
	}
	return !strings.ContainsRune("-._~!$&'()*+,;=:@", rune(b))
}

// isClean reports whether path has no "." or ".." segment and no repeated
// slash: whether net/http's mux would route it as it is rather than
// redirect to a cleaned form.
func isClean(path string) bool {
	clean := pathpkg.Clean(path)
	if strings.HasSuffix(path, "/") && clean != "/" {
		clean += "/"
	}
	return clean == path
}

// validateStreamPath checks a request's decoded path (and its escaped form,
// "" when it has none) as a stream path: absolute, valid UTF-8, at most
// maxPathBytes, with no empty, "." or ".." segment (no path
// traversal), no control character and no encoded slash (which would make
// one segment look like two once decoded).
func validateStreamPath(path, rawPath string) error {
	if len(path) < 2 || path[0] != '/' || len(path) > maxPathBytes || !utf8.ValidString(path) {
		return errInvalidPath
	}
	if rawPath != "" && (strings.Contains(rawPath, "%2F") || strings.Contains(rawPath, "%2f")) {
		return errInvalidPath
	}
	for i := 0; i < len(path); i++ {
		if c := path[i]; c < 0x20 || c == 0x7f {
			return errInvalidPath
		}
	}
	for seg := range strings.SplitSeq(path[1:], "/") {
		if seg == "" || seg == "." || seg == ".." {
			return errInvalidPath
		}
	}
	return nil
}

// hasSegment reports whether path has a segment equal to seg.
func hasSegment(path, seg string) bool {
	if !strings.Contains(path, seg) {
		return false
	}
	for s := range strings.SplitSeq(path, "/") {
		if s == seg {
			return true
		}
	}
	return false
}
