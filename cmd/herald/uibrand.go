package main

import (
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/heraldstreams/herald/ui"
)

// uiBrandConfig is how the dashboard presents itself: the platform that
// shows tenants their portal gives it its own name, logo and colour.
type uiBrandConfig struct {
	Title    string
	LogoURL  string
	LogoFile string
	Accent   string
}

func (c *uiBrandConfig) addFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.Title, "ui-title", "", "name the dashboard and the tenant portal show in their header and window title (default: Herald)")
	fs.StringVar(&c.LogoURL, "ui-logo-url", "", "logo shown before the title: a path on Herald's own origin (/…) or a data:image/…;base64, URL, the only images the dashboard's Content-Security-Policy allows")
	fs.StringVar(&c.LogoFile, "ui-logo-file", "", "logo file (.png, .jpg, .gif, .webp or .svg, at most 256 KiB) served by Herald as the dashboard's logo, instead of --ui-logo-url")
	fs.StringVar(&c.Accent, "ui-accent-color", "", "accent colour of the dashboard and the tenant portal (links, buttons, the current view), #rgb or #rrggbb (default: #0b5cad)")
}

// problems checks the flags (the logo file is read by brand).
func (c *uiBrandConfig) problems() []string {
	var out []string
	for _, p := range []struct {
		flag string
		err  error
	}{{"--ui-title", ui.CheckTitle(c.Title)}, {"--ui-logo-url", ui.CheckLogoURL(c.LogoURL)}, {"--ui-accent-color", ui.CheckAccent(c.Accent)}} {
		if p.err != nil {
			out = append(out, p.flag+": "+strings.TrimPrefix(p.err.Error(), "ui: "))
		}
	}
	if c.LogoFile != "" {
		if c.LogoURL != "" {
			out = append(out, "--ui-logo-file and --ui-logo-url both name a logo: give one")
		}
		if _, err := ui.LogoType(c.LogoFile); err != nil {
			out = append(out, "--ui-logo-file: "+strings.TrimPrefix(err.Error(), "ui: "))
		}
	}
	return out
}

// brand is the dashboard's ui.Brand, with the logo file read.
func (c *uiBrandConfig) brand() (ui.Brand, error) {
	b := ui.Brand{Title: c.Title, LogoURL: c.LogoURL, Accent: c.Accent}
	if c.LogoFile == "" {
		return b, nil
	}
	ct, err := ui.LogoType(c.LogoFile)
	if err != nil {
		return b, err
	}
	if b.Logo, err = os.ReadFile(c.LogoFile); err != nil {
		return b, fmt.Errorf("--ui-logo-file: %w", err)
	}
	b.LogoType = ct
	return b, nil
}
