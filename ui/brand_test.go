package ui

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// The brand's title, logo and accent colour are served as brand.json and
// brand.css (and a logo file as logo), under the same strict headers.
func TestBrandIsServedAsFiles(t *testing.T) {
	t.Parallel()
	png := []byte("\x89PNG\r\n\x1a\nlogo")
	h, err := Handler(Config{Brand: Brand{Title: "Acme Webhooks", Accent: "#c0ffee", Logo: png, LogoType: "image/png"}})
	if err != nil {
		t.Fatal(err)
	}
	w := serve(t, h, Prefix+"brand.json", nil)
	var b struct {
		Title   string `json:"title"`
		LogoURL string `json:"logo_url"`
	}
	if err := json.Unmarshal(w.Body.Bytes(), &b); err != nil || w.Code != http.StatusOK || b.Title != "Acme Webhooks" || b.LogoURL != Prefix+"logo" {
		t.Fatalf("brand.json: %d %s (%v)", w.Code, w.Body, err)
	}
	if w := serve(t, h, Prefix+"brand.css", nil); !strings.Contains(w.Body.String(), "--accent: #c0ffee;") || !strings.HasPrefix(w.Header().Get("Content-Type"), "text/css") {
		t.Fatalf("brand.css: %q %q", w.Header().Get("Content-Type"), w.Body)
	}
	w = serve(t, h, Prefix+"logo", nil)
	if w.Body.String() != string(png) || w.Header().Get("Content-Type") != "image/png" || w.Header().Get("X-Content-Type-Options") != "nosniff" ||
		!strings.Contains(w.Header().Get("Content-Security-Policy"), "default-src 'self'") {
		t.Fatalf("logo: %v", w.Header())
	}
	// Without a brand: Herald's own, and no logo file.
	h, err = Handler(Config{})
	if err != nil {
		t.Fatal(err)
	}
	if w := serve(t, h, Prefix+"brand.json", nil); w.Body.String() != `{"title":"","logo_url":""}` {
		t.Errorf("default brand.json: %s", w.Body)
	}
	if w := serve(t, h, Prefix+"brand.css", nil); strings.Contains(w.Body.String(), "--accent") {
		t.Errorf("default brand.css sets a colour: %s", w.Body)
	}
	if w := serve(t, h, Prefix+"logo", nil); w.Code != http.StatusNotFound {
		t.Errorf("a logo without a logo file: %d", w.Code)
	}
}

// Only what the CSP lets the page show, and nothing that could break out
// of the style sheet or the header, is accepted.
func TestBrandIsChecked(t *testing.T) {
	t.Parallel()
	for _, b := range []Brand{
		{Accent: "red"}, {Accent: "#12345"}, {Accent: "#fff; } body { display: none"},
		{LogoURL: "https://cdn.example/logo.png"}, {LogoURL: "//cdn.example/logo.png"}, {LogoURL: "javascript:alert(1)"},
		{LogoURL: "data:text/html;base64,PGgxPg=="}, {LogoURL: "data:image/png;base64,not base64!"}, {LogoURL: `/logo.png" onerror="x`},
		{Title: strings.Repeat("x", MaxTitleLen+1)}, {Title: "line\nbreak"},
		{Logo: make([]byte, MaxLogoBytes+1), LogoType: "image/png"},
	} {
		if _, err := Handler(Config{Brand: b}); err == nil {
			t.Errorf("brand %+.60v accepted", b)
		}
	}
	for _, b := range []Brand{
		{Accent: "#0a0"}, {Accent: "#00AA00"}, {LogoURL: "/static/logo.svg"}, {LogoURL: "data:image/svg+xml;base64,PHN2Zy8+"}, {Title: "Acme · Webhooks"},
	} {
		if _, err := Handler(Config{Brand: b}); err != nil {
			t.Errorf("brand %+v refused: %v", b, err)
		}
	}
	for name, ok := range map[string]bool{"logo.png": true, "a/b/logo.SVG": true, "logo.jpeg": true, "logo.bmp": false, "logo": false, "png": false} {
		if _, err := LogoType(name); (err == nil) != ok {
			t.Errorf("LogoType(%q): %v", name, err)
		}
	}
}
