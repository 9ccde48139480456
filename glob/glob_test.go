package glob

import (
	"errors"
	"strings"
	"testing"
)

// The pattern rules of docs/subscriptions.md, Patterns, with examples.
func TestMatchSeedExamples(t *testing.T) {
	t.Parallel()
	tests := []struct {
		pattern string
		match   []string
		noMatch []string
	}{
		{"/agents/*", []string{"/agents/task-1"}, []string{"/agents/foo/bar"}},
		{"/agents/**", []string{"/agents/task-1", "/agents/foo/bar/baz"}, []string{"/other/path"}},
		{"/agents/*/inbox", []string{"/agents/worker-1/inbox"}, []string{"/agents/worker-1/outbox"}},
		// `*` and `%2A` are equivalent.
		{"/agents/%2A", []string{"/agents/task-1"}, []string{"/agents/foo/bar"}},
		{"/agents/%2a/inbox", []string{"/agents/worker-1/inbox"}, []string{"/agents/worker-1/outbox"}},
		{"/agents/%2A%2A", []string{"/agents/task-1", "/agents/foo/bar/baz"}, []string{"/other/path"}},
	}
	for _, tt := range tests {
		p, err := Compile(tt.pattern)
		if err != nil {
			t.Fatalf("Compile(%q): %v", tt.pattern, err)
		}
		for _, path := range tt.match {
			if !p.Match(path) {
				t.Errorf("%q should match %q", tt.pattern, path)
			}
		}
		for _, path := range tt.noMatch {
			if p.Match(path) {
				t.Errorf("%q should not match %q", tt.pattern, path)
			}
		}
	}
}

func TestMatch(t *testing.T) {
	t.Parallel()
	tests := []struct {
		pattern, path string
		want          bool
	}{
		// Literal segments match exactly.
		{"/a/b", "/a/b", true},
		{"/a/b", "/a/B", false},
		{"/a/b", "/a/b/c", false},
		{"/a/b", "/a", false},
		{"/a/b", "/a/bc", false},
		// `*` is exactly one non-empty segment.
		{"/*", "/x", true},
		{"/*", "/", false},
		{"/*", "/x/y", false},
		{"/a/*", "/a/", false},
		{"/a/*/c", "/a/b/c", true},
		{"/a/*/c", "/a/c", false},
		{"/a/*/c", "/a/b/b/c", false},
		// `**` is zero or more segments.
		{"/a/**", "/a", true},
		{"/a/**", "/a/", true},
		{"/a/**", "/ab", false},
		{"/**", "/", true},
		{"/**", "/anything/at/all", true},
		{"/a/**/z", "/a/z", true},
		{"/a/**/z", "/a/b/c/z", true},
		{"/a/**/z", "/a/b/c/z/y", false},
		{"/a/**/b/**/c", "/a/b/c", true},
		{"/a/**/b/**/c", "/a/x/b/y/b/z/c", true},
		{"/a/**/b/**/c", "/a/x/c/b", false},
		{"/**/*", "/", false},
		{"/**/*", "/x", true},
		{"/*/**", "/x", true},
		{"/**/x/*", "/q/x/x/y", true},
		// Paths that are not absolute match nothing.
		{"/**", "", false},
		{"/**", "a/b", false},
		// Percent-escapes other than %2A are literal text.
		{"/a%20b", "/a%20b", true},
		{"/a%20b", "/a b", false},
	}
	for _, tt := range tests {
		p, err := Compile(tt.pattern)
		if err != nil {
			t.Fatalf("Compile(%q): %v", tt.pattern, err)
		}
		if got := p.Match(tt.path); got != tt.want {
			t.Errorf("Compile(%q).Match(%q) = %v, want %v", tt.pattern, tt.path, got, tt.want)
		}
		if got := refMatch(tokensOf(t, tt.pattern), tt.path); got != tt.want {
			t.Errorf("reference matcher disagrees with the table on %q, %q", tt.pattern, tt.path)
		}
	}
}

func TestCompileErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		pattern string
		want    error
	}{
		{"", ErrNoLeadingSlash},
		{"agents/*", ErrNoLeadingSlash},
		{"*", ErrNoLeadingSlash},
		{"/", ErrEmptySegment},
		{"//", ErrEmptySegment},
		{"/agents//x", ErrEmptySegment},
		{"/agents/", ErrEmptySegment},
		{"/agents/..", ErrDotSegment},
		{"/../etc", ErrDotSegment},
		{"/a/./b", ErrDotSegment},
		{"/a\x00b", ErrControlByte},
		{"/a\nb", ErrControlByte},
		{"/a\x7fb", ErrControlByte},
		{"/a\xffb", ErrInvalidUTF8},
		{"/a**", ErrPartialWildcard},
		{"/**a", ErrPartialWildcard},
		{"/a*", ErrPartialWildcard},
		{"/*a", ErrPartialWildcard},
		{"/***", ErrPartialWildcard},
		{"/a/%2Ab", ErrPartialWildcard},
		{"/a/%2A%2A%2A", ErrPartialWildcard},
		{"/" + strings.Repeat("a", MaxPatternLength), ErrTooLong},
	}
	for _, tt := range tests {
		p, err := Compile(tt.pattern)
		if err == nil {
			t.Errorf("Compile(%q) = %v, want error %v", tt.pattern, p, tt.want)
			continue
		}
		if !errors.Is(err, tt.want) {
			t.Errorf("Compile(%q) error = %v, want %v", tt.pattern, err, tt.want)
		}
		if !errors.Is(err, ErrInvalidPattern) {
			t.Errorf("Compile(%q) error %v is not ErrInvalidPattern", tt.pattern, err)
		}
		var perr *Error
		if !errors.As(err, &perr) || perr.Pattern != tt.pattern {
			t.Errorf("Compile(%q) error %#v does not carry the pattern", tt.pattern, err)
		}
		if !strings.Contains(err.Error(), "glob:") {
			t.Errorf("error message %q lacks the package prefix", err)
		}
	}
}

func TestString(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, want string }{
		{"/agents/*", "/agents/*"},
		{"/agents/%2A", "/agents/*"},
		{"/agents/%2a/inbox", "/agents/*/inbox"},
		{"/agents/%2A%2a", "/agents/**"},
		{"/a/**/**/b", "/a/**/b"},
		{"/**/**", "/**"},
		{"/a%20b/*", "/a%20b/*"},
	}
	for _, tt := range tests {
		p := MustCompile(tt.in)
		if got := p.String(); got != tt.want {
			t.Errorf("Compile(%q).String() = %q, want %q", tt.in, got, tt.want)
		}
		again := MustCompile(p.String())
		if again.String() != p.String() {
			t.Errorf("canonical form of %q is not stable: %q then %q", tt.in, p, again)
		}
	}
}

func TestPrefixAndLiteral(t *testing.T) {
	t.Parallel()
	tests := []struct {
		pattern, prefix string
		literal         bool
	}{
		{"/agents/*", "/agents/", false},
		{"/agents/**", "/agents", false},
		{"/agents/*/inbox", "/agents/", false},
		{"/**", "/", false},
		{"/*", "/", false},
		{"/a/b", "/a/b", true},
	}
	for _, tt := range tests {
		p := MustCompile(tt.pattern)
		if got := p.Prefix(); got != tt.prefix {
			t.Errorf("Compile(%q).Prefix() = %q, want %q", tt.pattern, got, tt.prefix)
		}
		if got := p.Literal(); got != tt.literal {
			t.Errorf("Compile(%q).Literal() = %v, want %v", tt.pattern, got, tt.literal)
		}
	}
}

func TestMustCompilePanics(t *testing.T) {
	t.Parallel()
	defer func() {
		if recover() == nil {
			t.Error("MustCompile of an invalid pattern did not panic")
		}
	}()
	MustCompile("no-slash")
}

// A pattern with many `**` still matches quickly (no exponential
// backtracking): this would not finish with a naive recursive matcher.
func TestMatchManyGlobstars(t *testing.T) {
	t.Parallel()
	p := MustCompile(strings.Repeat("/**/a", 40) + "/b")
	path := strings.Repeat("/a", 200)
	if p.Match(path) {
		t.Fatalf("matched a path without the final segment")
	}
	if !p.Match(path + "/b") {
		t.Fatalf("did not match a path that matches")
	}
}

// refMatch is a deliberately simple recursive matcher, the executable form
// of the rules, used to check Match.
func refMatch(pat []string, path string) bool {
	if !strings.HasPrefix(path, "/") {
		return false
	}
	var rec func(p, s []string) bool
	rec = func(p, s []string) bool {
		if len(p) == 0 {
			return len(s) == 0
		}
		switch p[0] {
		case "**":
			for i := 0; i <= len(s); i++ {
				if rec(p[1:], s[i:]) {
					return true
				}
			}
			return false
		case "*":
			return len(s) > 0 && s[0] != "" && rec(p[1:], s[1:])
		default:
			return len(s) > 0 && s[0] == p[0] && rec(p[1:], s[1:])
		}
	}
	return rec(pat, strings.Split(path[1:], "/"))
}

// tokensOf splits a valid pattern into segments the way
// docs/subscriptions.md describes them, independently of Compile: %2A in any
// case is '*'.
func tokensOf(t testing.TB, pattern string) []string {
	t.Helper()
	r := strings.NewReplacer("%2A", "*", "%2a", "*")
	return strings.Split(r.Replace(pattern)[1:], "/")
}

func FuzzCompile(f *testing.F) {
	for _, s := range []string{"/agents/*", "/agents/**", "/agents/*/inbox", "/a/%2A%2a", "/", "//", "/a**", "/..", "/a\x00", "x", "/**/**/x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, pattern string) {
		p, err := Compile(pattern)
		if err != nil {
			if !errors.Is(err, ErrInvalidPattern) {
				t.Fatalf("Compile(%q) error %v is not ErrInvalidPattern", pattern, err)
			}
			return
		}
		again, err := Compile(p.String())
		if err != nil {
			t.Fatalf("canonical form %q of %q does not compile: %v", p, pattern, err)
		}
		if again.String() != p.String() {
			t.Fatalf("canonical form not stable: %q -> %q -> %q", pattern, p, again)
		}
		if !strings.HasPrefix(p.String(), p.Prefix()) {
			t.Fatalf("Prefix %q is not a prefix of %q", p.Prefix(), p)
		}
		if p.Literal() && !p.Match(p.String()) {
			t.Fatalf("literal pattern %q does not match itself", p)
		}
	})
}

func FuzzMatch(f *testing.F) {
	f.Add("/agents/*", "/agents/task-1")
	f.Add("/agents/**", "/agents/foo/bar/baz")
	f.Add("/agents/*/inbox", "/agents/worker-1/outbox")
	f.Add("/a/**/b/**/c", "/a/x/b/y/b/z/c")
	f.Add("/**/*", "/")
	f.Add("/a/%2A", "/a/")
	f.Fuzz(func(t *testing.T, pattern, path string) {
		p, err := Compile(pattern)
		if err != nil {
			return
		}
		// Bound the reference matcher's exponential worst case.
		if strings.Count(p.String(), "**") > 3 || len(pattern) > 64 || len(path) > 128 {
			return
		}
		got := p.Match(path)
		want := refMatch(tokensOf(t, pattern), path)
		if got != want {
			t.Fatalf("Compile(%q).Match(%q) = %v, reference says %v", pattern, path, got, want)
		}
		if got && !strings.HasPrefix(path, p.Prefix()) {
			t.Fatalf("%q matched %q which lacks the prefix %q", pattern, path, p.Prefix())
		}
	})
}
