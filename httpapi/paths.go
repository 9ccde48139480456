package httpapi

import (
	"net/url"
	pathpkg "path"
	"strings"
	"unicode/utf8"
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

// literalPath reports whether a request's path is spelled without any
// percent-encoding, as every reserved route is: "/%5fherald/" decodes to
// "/_herald/" and "/_herald/v1/%6beys" to "/_herald/v1/keys", but a proxy
// that guards the literal spelling lets them through, so such spellings
// are refused rather than served. A decoded path holding a byte that needs
// escaping (a space, non-ASCII) has no literal spelling either.
func literalPath(u *url.URL) bool {
	return !strings.Contains(u.EscapedPath(), "%")
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
