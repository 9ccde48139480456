package ui

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"unicode"
)

// Brand is how the dashboard presents itself: the platform that embeds
// the tenant portal gives it its own name, logo and colour. The page
// reads it from brand.json and brand.css beside its files, so no inline
// script or style is needed under the strict CSP.
type Brand struct {
	// Title replaces "Herald" in the header and the window's title.
	Title string
	// LogoURL is an image shown before the title: a path on Herald's own
	// origin or a data: image, the only images the CSP lets the page show.
	LogoURL string
	// Logo, when set, is served as the logo (at logo, its LogoType),
	// LogoURL then naming it.
	Logo     []byte
	LogoType string
	// Accent is the accent colour, #rgb or #rrggbb.
	Accent string
}

// Limits of a Brand.
const (
	MaxTitleLen   = 80
	MaxLogoURLLen = 64 << 10
	MaxLogoBytes  = 256 << 10
)

var accentRe = regexp.MustCompile(`^#([0-9a-fA-F]{3}|[0-9a-fA-F]{6})$`)

// logoTypes are the image types a logo may be, by data: prefix and by
// file extension.
var logoTypes = map[string]string{".png": "image/png", ".jpg": "image/jpeg", ".jpeg": "image/jpeg", ".gif": "image/gif", ".webp": "image/webp", ".svg": "image/svg+xml"}

// CheckTitle reports whether s may be the dashboard's title.
func CheckTitle(s string) error {
	if len(s) > MaxTitleLen || strings.ContainsFunc(s, unicode.IsControl) {
		return fmt.Errorf("ui: the title must be at most %d bytes without control characters", MaxTitleLen)
	}
	return nil
}

// CheckAccent reports whether s is an accent colour (#rgb or #rrggbb).
func CheckAccent(s string) error {
	if s != "" && !accentRe.MatchString(s) {
		return fmt.Errorf("ui: the accent colour %q must be #rgb or #rrggbb", s)
	}
	return nil
}

// CheckLogoURL reports whether s is a logo the page may show under its
// CSP (img-src 'self' data:): a path on Herald's origin, or a base64
// data: URL of a PNG, JPEG, GIF, WebP or SVG image.
func CheckLogoURL(s string) error {
	switch {
	case s == "":
		return nil
	case len(s) > MaxLogoURLLen:
		return fmt.Errorf("ui: the logo URL is over %d bytes", MaxLogoURLLen)
	case strings.HasPrefix(s, "/") && !strings.HasPrefix(s, "//") && !strings.ContainsAny(s, "\\ \"'<>") && !strings.ContainsFunc(s, unicode.IsControl):
		return nil
	case strings.HasPrefix(s, "data:"):
		for _, ct := range logoTypes {
			if rest, ok := strings.CutPrefix(s, "data:"+ct+";base64,"); ok {
				if _, err := base64.StdEncoding.DecodeString(rest); err != nil {
					return fmt.Errorf("ui: the logo's data: URL is not base64")
				}
				return nil
			}
		}
		return fmt.Errorf("ui: the logo's data: URL must be a base64 PNG, JPEG, GIF, WebP or SVG image")
	}
	return fmt.Errorf("ui: the logo URL must be a path on Herald's own origin (/…) or a data: image: the dashboard's CSP shows no other image")
}

// LogoType is the content type of a logo file, by its name's extension.
func LogoType(name string) (string, error) {
	i := strings.LastIndexByte(name, '.')
	if ct, ok := logoTypes[strings.ToLower(name[max(i, 0):])]; ok && i >= 0 {
		return ct, nil
	}
	return "", fmt.Errorf("ui: the logo file %q must be .png, .jpg, .gif, .webp or .svg", name)
}

// check validates b.
func (b *Brand) check() error {
	for _, err := range []error{CheckTitle(b.Title), CheckAccent(b.Accent), CheckLogoURL(b.LogoURL)} {
		if err != nil {
			return err
		}
	}
	if len(b.Logo) > MaxLogoBytes {
		return fmt.Errorf("ui: the logo file is over %d bytes", MaxLogoBytes)
	}
	return nil
}

// brandFiles are the files of b: brand.json (title and logo), brand.css
// (the accent colour) and, with a logo file, logo.
func brandFiles(b Brand) (map[string]file, error) {
	if err := b.check(); err != nil {
		return nil, err
	}
	out := map[string]file{}
	logo := b.LogoURL
	if len(b.Logo) > 0 {
		out["logo"] = newFile(b.Logo, b.LogoType)
		logo = Prefix + "logo"
	}
	js, err := json.Marshal(struct {
		Title   string `json:"title"`
		LogoURL string `json:"logo_url"`
	}{b.Title, logo})
	if err != nil {
		return nil, err
	}
	out["brand.json"] = newFile(js, "application/json")
	css := "/* The installation's brand (--ui-accent-color). */\n"
	if b.Accent != "" {
		// A checked #rgb or #rrggbb: nothing else reaches the style sheet.
		css += ":root { --accent: " + b.Accent + "; }\n"
	}
	out["brand.css"] = newFile([]byte(css), "text/css; charset=utf-8")
	return out, nil
}

// newFile is a file to serve, with its ETag.
func newFile(body []byte, contentType string) file {
	sum := sha256.Sum256(body)
	return file{body: body, contentType: contentType, etag: `"` + base64.RawURLEncoding.EncodeToString(sum[:12]) + `"`}
}
