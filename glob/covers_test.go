package glob

import (
	"strings"
	"testing"
)

func TestCovers(t *testing.T) {
	t.Parallel()
	tests := []struct {
		p, q string
		want bool
	}{
		// A pattern covers itself, and "/**" covers everything.
		{"/a/b", "/a/b", true},
		{"/a/*", "/a/*", true},
		{"/a/**", "/a/**", true},
		{"/**", "/**", true},
		{"/**", "/a/*/b/**", true},
		{"/**", "/*", true},
		// A literal covers only itself.
		{"/a/b", "/a/c", false},
		{"/a/b", "/a/*", false},
		{"/a/b", "/a/b/c", false},
		{"/a/b", "/a", false},
		// `*` covers one segment, literal or wildcard, never `**`.
		{"/a/*", "/a/b", true},
		{"/a/*", "/a/*", true},
		{"/a/*", "/a/**", false},
		{"/a/*", "/a", false},
		{"/a/*", "/a/b/c", false},
		{"/*/b", "/a/b", true},
		{"/*/b", "/a/c", false},
		// `**` covers any rest, and what lies under its literal prefix.
		{"/a/**", "/a", true},
		{"/a/**", "/a/b", true},
		{"/a/**", "/a/*/b", true},
		{"/a/**", "/a/**/b", true},
		{"/a/**", "/a/b/**", true},
		{"/a/**", "/**", false},
		{"/a/**", "/*", false},
		{"/a/**", "/*/b", false},
		{"/a/**", "/ab", false},
		{"/a/**", "/b/**", false},
		{"/a/**", "/**/a", false},
		// `**` in the middle.
		{"/a/**/z", "/a/b/c/z", true},
		{"/a/**/z", "/a/z", true},
		{"/a/**/z", "/a/*/z", true},
		{"/a/**/z", "/a/**/z", true},
		{"/a/**/z", "/a/**/y/z", true},
		{"/a/**/z", "/a/**", false},
		{"/a/**/z", "/a/**/z/x", false},
		{"/**/z", "/a/**/z", true},
		{"/**/z", "/**/y/z", true},
		{"/**/z", "/**/z/**", false},
		{"/**/a/**", "/a/**/a", true},
		{"/**/a/**", "/*/*", false},
		// A tenant's namespace.
		{"/tenants/acme/**", "/tenants/acme/orders/*", true},
		{"/tenants/acme/**", "/tenants/*/orders", false},
		{"/tenants/acme/**", "/tenants/**", false},
		{"/tenants/acme/**", "/tenants/acme2/**", false},
		{"/tenants/acme/**", "/**/orders", false},
	}
	for _, tt := range tests {
		got := MustCompile(tt.p).Covers(MustCompile(tt.q))
		if got != tt.want {
			t.Errorf("%q covers %q = %v, want %v", tt.p, tt.q, got, tt.want)
		}
	}
}

// Many `**` cost time in proportion to the product of the patterns'
// lengths, not exponentially.
func TestCoversManyGlobstars(t *testing.T) {
	t.Parallel()
	p := MustCompile(strings.Repeat("/**/a", 200) + "/b")
	q := MustCompile(strings.Repeat("/a/**", 200) + "/c")
	if p.Covers(q) {
		t.Fatal("covered a pattern whose last segment differs")
	}
	if !MustCompile("/**").Covers(q) {
		t.Fatal("/** does not cover a long pattern")
	}
}

// instances returns paths q matches: each `*` and `**` filled in with
// each of fills (for `**`, also with zero, two and empty segments).
func instances(q *Pattern, fills []string) []string {
	paths := []string{""}
	for _, tok := range q.tokens {
		var next []string
		for _, base := range paths {
			switch tok.kind {
			case literal:
				next = append(next, base+"/"+tok.lit)
			case star:
				for _, f := range fills {
					next = append(next, base+"/"+f)
				}
			default:
				next = append(next, base, base+"/", base+"//x")
				for _, f := range fills {
					next = append(next, base+"/"+f, base+"/"+f+"/"+f)
				}
			}
			if len(next) > 2000 {
				return paths
			}
		}
		paths = next
	}
	for i, p := range paths {
		if p == "" {
			paths[i] = "/"
		}
	}
	return paths
}

// Covers is sound: when p covers q, every path q matches (tried with the
// literals of both patterns and a fresh segment in each wildcard) is
// matched by p. And every pattern covers itself.
func FuzzCovers(f *testing.F) {
	for _, s := range [][2]string{
		{"/a/**", "/a/*/b"}, {"/**/z", "/a/**/z"}, {"/a/*", "/a/**"}, {"/**/a/**", "/a/**/a"},
		{"/tenants/acme/**", "/tenants/*/x"}, {"/*/b", "/a/b"}, {"/a/**/z", "/a/**/z/x"},
	} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, ps, qs string) {
		p, err := Compile(ps)
		if err != nil {
			return
		}
		q, err := Compile(qs)
		if err != nil || len(q.tokens) > 8 {
			return
		}
		if !p.Covers(p) || !q.Covers(q) {
			t.Fatalf("a pattern does not cover itself: %q, %q", p, q)
		}
		if !p.Covers(q) {
			return
		}
		fills := []string{"fresh"}
		for _, tok := range append(append([]token(nil), p.tokens...), q.tokens...) {
			if tok.kind == literal {
				fills = append(fills, tok.lit)
			}
		}
		if len(fills) > 6 {
			fills = fills[:6]
		}
		for _, path := range instances(q, fills) {
			if q.Match(path) && !p.Match(path) {
				t.Fatalf("%q covers %q, yet %q matches only the latter", p, q, path)
			}
		}
	})
}
