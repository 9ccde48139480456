package main

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The brand flags are checked when Herald starts, each problem named by
// its flag, and a logo file is read as the dashboard's logo.
func TestUIBrandFlags(t *testing.T) {
	t.Parallel()
	env := envOf(map[string]string{adminKeyEnv: testAdminKey})
	for args, want := range map[string]string{
		"--ui-accent-color red":                        "--ui-accent-color",
		"--ui-logo-url https://cdn.example/logo.png":   "--ui-logo-url",
		"--ui-logo-file logo.bmp":                      "--ui-logo-file",
		"--ui-logo-file logo.png --ui-logo-url /l.png": "give one",
		"--ui-title " + strings.Repeat("x", 81):        "--ui-title",
	} {
		_, err := parseServeFlags(strings.Fields(args), io.Discard, io.Discard, env)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want a problem naming %s", args, err, want)
		}
	}
	logo := filepath.Join(t.TempDir(), "logo.svg")
	if err := os.WriteFile(logo, []byte(`<svg xmlns="http://www.w3.org/2000/svg"/>`), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := parseServeFlags([]string{"--ui-title", "Acme Webhooks", "--ui-logo-file", logo, "--ui-accent-color", "#c0ffee"}, io.Discard, io.Discard, env)
	if err != nil {
		t.Fatal(err)
	}
	b, err := cfg.UIBrand.brand()
	if err != nil || b.Title != "Acme Webhooks" || b.LogoType != "image/svg+xml" || !strings.Contains(string(b.Logo), "<svg") || b.Accent != "#c0ffee" {
		t.Fatalf("brand %+v, %v", b, err)
	}
	cfg.UIBrand.LogoFile = filepath.Join(t.TempDir(), "missing.png")
	if _, err := cfg.UIBrand.brand(); err == nil || !strings.Contains(err.Error(), "--ui-logo-file") {
		t.Errorf("a missing logo file: %v", err)
	}
}
