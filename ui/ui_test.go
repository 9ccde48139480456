package ui

import (
	"io/fs"
	"mime"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
)

func serve(t *testing.T, h http.Handler, path string, hdr map[string]string) *httptest.ResponseRecorder {
	t.Helper()
	r := httptest.NewRequest(http.MethodGet, path, nil)
	for k, v := range hdr {
		r.Header.Set(k, v)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

func TestFilesAreServedWithAStrictPolicy(t *testing.T) {
	t.Parallel()
	h, err := Handler(Config{})
	if err != nil {
		t.Fatal(err)
	}
	for path, ct := range map[string]string{Prefix: "text/html", Prefix + "app.js": "javascript", Prefix + "app.css": "text/css"} {
		w := serve(t, h, path, nil)
		if w.Code != http.StatusOK || !strings.Contains(w.Header().Get("Content-Type"), ct) {
			t.Fatalf("%s: %d %q", path, w.Code, w.Header().Get("Content-Type"))
		}
		csp := w.Header().Get("Content-Security-Policy")
		for _, want := range []string{"default-src 'self'", "script-src 'self';", "frame-ancestors 'none'", "object-src 'none'"} {
			if !strings.Contains(csp, want) {
				t.Errorf("%s: CSP %q lacks %q", path, csp, want)
			}
		}
		if strings.Contains(csp, "unsafe") {
			t.Errorf("%s: CSP allows unsafe sources: %q", path, csp)
		}
		if w.Header().Get("X-Frame-Options") != "DENY" || w.Header().Get("Cache-Control") != "no-cache" || w.Header().Get("ETag") == "" {
			t.Errorf("%s: headers %v", path, w.Header())
		}
		again := serve(t, h, path, map[string]string{"If-None-Match": w.Header().Get("ETag")})
		if again.Code != http.StatusNotModified || again.Body.Len() != 0 {
			t.Errorf("%s revalidated: %d", path, again.Code)
		}
	}
	if w := serve(t, h, Prefix+"missing.js", nil); w.Code != http.StatusNotFound || w.Header().Get("Cache-Control") != "no-store" {
		t.Errorf("a missing file: %d %v", w.Code, w.Header())
	}
}

func TestFrameAncestorsAllowEmbedding(t *testing.T) {
	t.Parallel()
	h, err := Handler(Config{FrameAncestors: []string{"https://platform.example", "'self'"}})
	if err != nil {
		t.Fatal(err)
	}
	w := serve(t, h, Prefix, nil)
	if csp := w.Header().Get("Content-Security-Policy"); !strings.HasSuffix(csp, "frame-ancestors https://platform.example 'self'") {
		t.Errorf("CSP %q", csp)
	}
	if w.Header().Get("X-Frame-Options") != "" {
		t.Errorf("X-Frame-Options %q would forbid the configured embedding", w.Header().Get("X-Frame-Options"))
	}
	for _, bad := range []string{"platform.example", "https://a.example/path", "https://a.example; script-src *", "javascript://x", "*"} {
		if _, err := Handler(Config{FrameAncestors: []string{bad}}); err == nil {
			t.Errorf("frame ancestor %q accepted", bad)
		}
	}
}

// The pages never parse API data as HTML, never run inline script, fetch
// nothing from elsewhere, and keep the key in sessionStorage only.
func TestPagesKeepTheirPromises(t *testing.T) {
	t.Parallel()
	forbidden := []*regexp.Regexp{
		regexp.MustCompile(`innerHTML|outerHTML|insertAdjacentHTML|document\.write|eval\(|new Function`),
		regexp.MustCompile(`localStorage|document\.cookie|console\.`),
		regexp.MustCompile(`(src|href)=["']?(https?:)?//|url\(["']?(https?:)?//|from ["'](https?:)?//|fetch\(["'](https?:)?//|@import`),
		regexp.MustCompile(`<script>|style="|onclick="`),
	}
	err := fs.WalkDir(static, "static", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		body, err := static.ReadFile(p)
		if err != nil {
			return err
		}
		text := string(body)
		for _, re := range forbidden {
			if m := re.FindString(text); m != "" {
				t.Errorf("%s contains %q", p, m)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// Every embedded file is served with its type from the dashboard's own
// table (see contentTypes), the one the MIME package gives too.
func TestContentTypes(t *testing.T) {
	t.Parallel()
	h, err := Handler(Config{})
	if err != nil {
		t.Fatal(err)
	}
	for ext, ct := range contentTypes {
		if builtin := mime.TypeByExtension(ext); builtin != ct {
			t.Errorf("%s: %q, the MIME package says %q", ext, ct, builtin)
		}
	}
	for _, c := range []struct{ path, ct string }{{"index.html", "text/html; charset=utf-8"}, {"app.css", "text/css; charset=utf-8"}, {"app.js", "text/javascript; charset=utf-8"}} {
		if f := h.(*handler).files[c.path]; f.contentType != c.ct {
			t.Errorf("%s served as %q, want %q", c.path, f.contentType, c.ct)
		}
	}
}
