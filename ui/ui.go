// Package ui is Herald's web dashboard: the operators' views and the
// tenants' portal, plain HTML, CSS and JavaScript modules embedded in the
// binary and served at Prefix. The pages fetch nothing from elsewhere;
// they call Herald's API on their own origin with the API key the user
// signs in with, which they keep in sessionStorage only.
package ui

import (
	"embed"
	"fmt"
	"io/fs"
	"net/http"
	"path"
	"strings"
)

// Prefix is where the dashboard is served.
const Prefix = "/_herald/ui/"

//go:embed static
var static embed.FS

// Config configures the dashboard's handler.
type Config struct {
	// FrameAncestors are the origins whose pages may embed the dashboard
	// in a frame (the tenant portal inside a platform's own pages). None:
	// no page may frame it.
	FrameAncestors []string
	// Brand is the dashboard's title, logo and accent colour.
	Brand Brand
}

// contentTypes are the types of the dashboard's files, by extension: a
// table of its own rather than mime.TypeByExtension, whose first call
// loads the system's MIME database, which the process then keeps (440 KB
// of an idle server's 2 MB of heap, for three extensions). Handler
// refuses an embedded file of another extension.
var contentTypes = map[string]string{
	".html": "text/html; charset=utf-8",
	".css":  "text/css; charset=utf-8",
	".js":   "text/javascript; charset=utf-8",
}

// file is one embedded file, ready to serve.
type file struct {
	body        []byte
	contentType string
	etag        string
}

// Handler serves the dashboard's files under Prefix with a strict
// Content-Security-Policy (scripts, styles and connections to Herald's own
// origin only, no inline script), the framing rule of cfg and
// revalidated caching (an ETag per file).
func Handler(cfg Config) (http.Handler, error) {
	files := map[string]file{}
	err := fs.WalkDir(static, "static", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		body, err := static.ReadFile(p)
		if err != nil {
			return err
		}
		ct := contentTypes[path.Ext(p)]
		if ct == "" {
			return fmt.Errorf("ui: no content type for %s", p)
		}
		files[strings.TrimPrefix(p, "static/")] = newFile(body, ct)
		return nil
	})
	if err != nil {
		return nil, err
	}
	brand, err := brandFiles(cfg.Brand)
	if err != nil {
		return nil, err
	}
	for name, f := range brand {
		files[name] = f
	}
	for _, a := range cfg.FrameAncestors {
		if err := CheckFrameAncestor(a); err != nil {
			return nil, err
		}
	}
	frame := "'none'"
	if len(cfg.FrameAncestors) > 0 {
		frame = strings.Join(cfg.FrameAncestors, " ")
	}
	csp := "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
		"object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors " + frame
	return &handler{files: files, csp: csp, deny: len(cfg.FrameAncestors) == 0}, nil
}

// CheckFrameAncestor reports whether s may stand in frame-ancestors: an
// origin (scheme://host[:port], a leading *. wildcard allowed) or 'self'.
func CheckFrameAncestor(s string) error {
	if s == "'self'" {
		return nil
	}
	scheme, host, ok := strings.Cut(s, "://")
	if !ok || (scheme != "https" && scheme != "http") || host == "" {
		return fmt.Errorf("ui: frame ancestor %q must be an origin like https://app.example or 'self'", s)
	}
	for i, c := range host {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '-' || c == ':' || (c == '*' && i == 0)
		if !ok {
			return fmt.Errorf("ui: frame ancestor %q must be an origin like https://app.example (no path)", s)
		}
	}
	return nil
}

type handler struct {
	files map[string]file
	csp   string
	deny  bool
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	hdr := w.Header()
	hdr.Set("Content-Security-Policy", h.csp)
	if h.deny {
		hdr.Set("X-Frame-Options", "DENY")
	}
	hdr.Set("Referrer-Policy", "no-referrer")
	// Every file is what its Content-Type says (a logo is an image).
	hdr.Set("X-Content-Type-Options", "nosniff")
	// The dashboard's own pages are read by Herald's origin only.
	hdr.Set("Cross-Origin-Resource-Policy", "same-origin")
	name := strings.TrimPrefix(r.URL.Path, Prefix)
	if name == "" {
		name = "index.html"
	}
	f, ok := h.files[name]
	if !ok {
		hdr.Set("Content-Type", "text/plain; charset=utf-8")
		hdr.Set("Cache-Control", "no-store")
		w.WriteHeader(http.StatusNotFound)
		_, _ = fmt.Fprintf(w, "no such file in Herald's dashboard; open %s\n", Prefix) // the client may be gone
		return
	}
	// Revalidated on every use, so a new binary's files are picked up at
	// once; unchanged ones cost a 304.
	hdr.Set("Cache-Control", "no-cache")
	hdr.Set("ETag", f.etag)
	if match := r.Header.Get("If-None-Match"); match != "" && strings.Contains(match, f.etag) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	hdr.Set("Content-Type", f.contentType)
	if r.Method == http.MethodHead {
		w.WriteHeader(http.StatusOK)
		return
	}
	_, _ = w.Write(f.body) // the client may be gone
}
