package httpapi

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
)

func TestInvalidPathsNeverReachTheStore(t *testing.T) {
	t.Parallel()
	s := newTestServer(&fakeStore{t: t}, Config{})
	for _, target := range []string{
		"/", "/v1/a/../b", "/v1/..", "/v1/./a", "/v1//a", "/v1/a/", "/v1/%2e%2e/b", "/v1/a%2Fb", "/v1/a%2fb",
		"/v1/a%00b", "/v1/a%0Ab", "/v1/a%7F", "/v1/%ff", "/" + strings.Repeat("a", maxPathBytes),
	} {
		for _, method := range []string{"PUT", "POST", "GET", "DELETE"} {
			expectError(t, do(s, method, target, nil, nil), http.StatusBadRequest, "INVALID_PATH")
		}
	}
}

func TestValidStreamPaths(t *testing.T) {
	t.Parallel()
	for _, p := range []string{"/a", "/v1/stream/x-1", "/agents/task-1/events", "/a.b/c..d/...", "/ünicode/ok", "/a b"} {
		if err := validateStreamPath(p, ""); err != nil {
			t.Errorf("validateStreamPath(%q) = %v", p, err)
		}
	}
}

func FuzzValidateStreamPath(f *testing.F) {
	for _, s := range []string{"/v1/stream/x", "/a/../b", "/a//b", "/a%2Fb", "/a\x00b", "/_herald/x", "/..", "/a/./b", "/%ff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, target string) {
		u, err := url.Parse(target)
		if err != nil {
			return
		}
		if validateStreamPath(u.Path, u.RawPath) != nil {
			return
		}
		// An accepted path is absolute, and no segment climbs or is empty.
		if !strings.HasPrefix(u.Path, "/") || len(u.Path) > maxPathBytes {
			t.Fatalf("accepted %q", u.Path)
		}
		for _, seg := range strings.Split(u.Path[1:], "/") {
			if seg == "" || seg == "." || seg == ".." {
				t.Fatalf("accepted %q with segment %q", u.Path, seg)
			}
		}
		if strings.ContainsFunc(u.Path, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
			t.Fatalf("accepted control character in %q", u.Path)
		}
		if strings.Contains(strings.ToLower(u.RawPath), "%2f") {
			t.Fatalf("accepted encoded slash in %q", u.RawPath)
		}
	})
}
