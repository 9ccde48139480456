// Package glob compiles and matches the stream-path patterns of webhook
// subscriptions (docs/subscriptions.md, Patterns):
//
//   - a pattern starts with '/' and is a list of '/'-separated segments;
//   - `*` matches exactly one non-empty path segment;
//   - `**` matches zero or more path segments, recursively;
//   - any other segment is literal and matches a segment byte for byte;
//   - `%2A` (either case) is the same as `*`, because patterns travel in URL
//     paths where clients may percent-encode the asterisk;
//   - a literal `*` inside a segment is not supported: `a*`, `***` and
//     `a**` are invalid patterns, not literals.
//
// Matching is linear in practice and O(segments(pattern) × segments(path))
// in the worst case: no backtracking blow-up whatever the number of `**`.
package glob

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// MaxPatternLength is the longest pattern Compile accepts, in bytes.
const MaxPatternLength = 4096

// Errors of Compile. Every error Compile returns is a *Error that wraps one
// of them, and errors.Is(err, ErrInvalidPattern) holds for all of them.
var (
	// ErrInvalidPattern matches every error Compile returns.
	ErrInvalidPattern = errors.New("glob: invalid pattern")
	// ErrNoLeadingSlash: the pattern does not start with '/'.
	ErrNoLeadingSlash = errors.New("glob: pattern must start with '/'")
	// ErrEmptySegment: the pattern has "//", ends with '/', or is just "/".
	ErrEmptySegment = errors.New("glob: pattern has an empty segment")
	// ErrDotSegment: a segment is "." or "..".
	ErrDotSegment = errors.New("glob: '.' and '..' segments are not allowed")
	// ErrControlByte: the pattern holds NUL or another control byte.
	ErrControlByte = errors.New("glob: pattern contains a control byte")
	// ErrInvalidUTF8: the pattern is not valid UTF-8.
	ErrInvalidUTF8 = errors.New("glob: pattern is not valid UTF-8")
	// ErrPartialWildcard: '*' appears in a segment that is neither `*` nor
	// `**` (literal '*' in stream names is not supported).
	ErrPartialWildcard = errors.New("glob: '*' and '**' must be whole segments")
	// ErrTooLong: the pattern is longer than MaxPatternLength.
	ErrTooLong = errors.New("glob: pattern is too long")
)

// Error is the error Compile returns: the pattern and why it is invalid.
type Error struct {
	Pattern string
	// Err is one of the sentinel errors of this package.
	Err error
}

func (e *Error) Error() string {
	return fmt.Sprintf("%v (pattern %q)", e.Err, e.Pattern)
}

// Unwrap returns the sentinel error.
func (e *Error) Unwrap() error { return e.Err }

// Is makes errors.Is(err, ErrInvalidPattern) true for every *Error.
func (e *Error) Is(target error) bool { return target == ErrInvalidPattern }

type kind uint8

const (
	literal  kind = iota
	star          // `*`: exactly one non-empty segment
	globstar      // `**`: zero or more segments
)

type token struct {
	kind kind
	lit  string
}

// Pattern is a compiled pattern. It is immutable and safe for concurrent
// use.
type Pattern struct {
	tokens    []token
	canonical string
}

// Compile parses a pattern. The pattern is taken as it appears in the URL
// path after the HTTP layer's decoding; `%2A` is recognized whether or not
// that decoding already turned it into `*`. Other percent-escapes are
// literal text.
func Compile(pattern string) (*Pattern, error) {
	fail := func(err error) (*Pattern, error) {
		return nil, &Error{Pattern: pattern, Err: err}
	}
	if len(pattern) > MaxPatternLength {
		return fail(ErrTooLong)
	}
	if !utf8.ValidString(pattern) {
		return fail(ErrInvalidUTF8)
	}
	for i := 0; i < len(pattern); i++ {
		if c := pattern[i]; c < 0x20 || c == 0x7f {
			return fail(ErrControlByte)
		}
	}
	if !strings.HasPrefix(pattern, "/") {
		return fail(ErrNoLeadingSlash)
	}
	var tokens []token
	for seg := range strings.SplitSeq(pattern[1:], "/") {
		seg = replaceEncodedStar(seg)
		switch {
		case seg == "":
			return fail(ErrEmptySegment)
		case seg == "." || seg == "..":
			return fail(ErrDotSegment)
		case seg == "*":
			tokens = append(tokens, token{kind: star})
		case seg == "**":
			// "**/**" means the same as "**": keep one, so equal patterns
			// have one canonical form.
			if n := len(tokens); n == 0 || tokens[n-1].kind != globstar {
				tokens = append(tokens, token{kind: globstar})
			}
		case strings.Contains(seg, "*"):
			return fail(ErrPartialWildcard)
		default:
			tokens = append(tokens, token{kind: literal, lit: seg})
		}
	}
	return &Pattern{tokens: tokens, canonical: render(tokens)}, nil
}

// MustCompile is Compile for patterns known to be valid, such as constants
// in code; it panics on an invalid pattern.
func MustCompile(pattern string) *Pattern {
	p, err := Compile(pattern)
	if err != nil {
		panic(err)
	}
	return p
}

// replaceEncodedStar turns every %2A or %2a in seg into '*'.
func replaceEncodedStar(seg string) string {
	if !strings.Contains(seg, "%") {
		return seg
	}
	var b strings.Builder
	for i := 0; i < len(seg); i++ {
		if seg[i] == '%' && i+2 < len(seg) && seg[i+1] == '2' && (seg[i+2] == 'A' || seg[i+2] == 'a') {
			b.WriteByte('*')
			i += 2
			continue
		}
		b.WriteByte(seg[i])
	}
	return b.String()
}

func render(tokens []token) string {
	var b strings.Builder
	for _, t := range tokens {
		b.WriteByte('/')
		switch t.kind {
		case star:
			b.WriteByte('*')
		case globstar:
			b.WriteString("**")
		default:
			b.WriteString(t.lit)
		}
	}
	return b.String()
}

// String returns the canonical form of the pattern: `%2A` written as `*`
// and runs of `**` segments collapsed into one. Compiling it gives an equal
// pattern, and two patterns that differ only in those ways have the same
// String.
func (p *Pattern) String() string { return p.canonical }

// Match reports whether the stream path matches the pattern. A path that
// does not start with '/' matches nothing. Empty segments in the path ("//",
// a trailing '/') are only matched by `**`.
func (p *Pattern) Match(path string) bool {
	if !strings.HasPrefix(path, "/") {
		return false
	}
	segs := strings.Split(path[1:], "/")
	toks := p.tokens

	// Classic wildcard matching over segments: `**` is the only token that
	// spans a variable number of segments, so on a mismatch it is enough to
	// retry from the most recent `**`, letting it swallow one more segment.
	pi, si := 0, 0
	starPi, starSi := -1, 0
	for si < len(segs) {
		if pi < len(toks) && toks[pi].kind == globstar {
			starPi, starSi = pi, si
			pi++
			continue
		}
		if pi < len(toks) && matchOne(toks[pi], segs[si]) {
			pi++
			si++
			continue
		}
		if starPi < 0 {
			return false
		}
		starSi++
		pi, si = starPi+1, starSi
	}
	for pi < len(toks) && toks[pi].kind == globstar {
		pi++
	}
	return pi == len(toks)
}

func matchOne(t token, seg string) bool {
	if t.kind == star {
		return seg != ""
	}
	return t.lit == seg
}

// Prefix returns the literal beginning of the pattern: every path the
// pattern matches starts with it. Stores use it to narrow a scan for
// matching streams (a LIKE 'prefix%' or a range query) before calling
// Match. It is "/" when the pattern starts with a wildcard.
func (p *Pattern) Prefix() string {
	var b strings.Builder
	for _, t := range p.tokens {
		switch t.kind {
		case literal:
			b.WriteByte('/')
			b.WriteString(t.lit)
		case star:
			// The wildcard segment is preceded by a '/'.
			b.WriteByte('/')
			return b.String()
		default:
			// `**` may match zero segments: no '/' is guaranteed.
			if b.Len() == 0 {
				return "/"
			}
			return b.String()
		}
	}
	return b.String()
}

// Literal reports whether the pattern has no wildcard, in which case it
// matches exactly one path: String().
func (p *Pattern) Literal() bool {
	for _, t := range p.tokens {
		if t.kind != literal {
			return false
		}
	}
	return true
}
