package doccheck

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// root is the repository's top directory, seen from this package.
const root = "../.."

// documents are the Markdown files whose links are checked: the README,
// the changelog and everything in docs/.
func documents(t *testing.T) []string {
	t.Helper()
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	if len(docs) == 0 {
		t.Fatal("no docs/*.md found")
	}
	return append([]string{filepath.Join(root, "README.md"), filepath.Join(root, "CHANGELOG.md")}, docs...)
}

// TestDocumentLinks: every relative link of README.md, CHANGELOG.md and
// docs/*.md points at a file or directory of the repository, and every
// #fragment into a Markdown file at one of its headings.
func TestDocumentLinks(t *testing.T) {
	t.Parallel()
	top, err := filepath.Abs(root)
	if err != nil {
		t.Fatal(err)
	}
	anchors := make(map[string]map[string]bool) // by absolute path
	anchorsOf := func(path string) (map[string]bool, error) {
		if a, ok := anchors[path]; ok {
			return a, nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		anchors[path] = Anchors(string(b))
		return anchors[path], nil
	}
	checked := 0
	for _, doc := range documents(t) {
		b, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		abs, err := filepath.Abs(doc)
		if err != nil {
			t.Fatal(err)
		}
		name, _ := filepath.Rel(top, abs)
		for _, l := range Links(string(b)) {
			if !l.Relative() {
				continue
			}
			checked++
			path, fragment := l.Split()
			target := abs
			if path != "" {
				if strings.HasPrefix(path, "/") {
					t.Errorf("%s:%d: %s: use a path relative to the document, not from the root", name, l.Line, l.Target)
					continue
				}
				target = filepath.Join(filepath.Dir(abs), filepath.FromSlash(path))
			}
			if rel, err := filepath.Rel(top, target); err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
				t.Errorf("%s:%d: %s points outside the repository", name, l.Line, l.Target)
				continue
			}
			info, err := os.Stat(target)
			if err != nil {
				t.Errorf("%s:%d: %s: no such file", name, l.Line, l.Target)
				continue
			}
			if fragment == "" {
				continue
			}
			if info.IsDir() || !strings.HasSuffix(target, ".md") {
				continue // a line anchor of a source file, say: not checked
			}
			a, err := anchorsOf(target)
			if err != nil {
				t.Fatal(err)
			}
			if !a[fragment] {
				t.Errorf("%s:%d: %s: no heading with the anchor #%s", name, l.Line, l.Target, fragment)
			}
		}
	}
	if checked == 0 {
		t.Fatal("no relative links found: the link extraction is broken")
	}
	t.Logf("%d relative links checked", checked)
}

func TestLinks(t *testing.T) {
	t.Parallel()
	md := strings.Join([]string{
		"See [the spec](docs/protocol.md#offsets) and [site](https://example.com).",
		"Inline code `[not](a-link.md)` is skipped; ![img](ui/logo.png \"Logo\") is not.",
		"```sh",
		"echo [x](in-a-fence.md)",
		"```",
		"[ref]: CHANGELOG.md",
		"[local](#security)",
	}, "\n")
	var got []string
	for _, l := range Links(md) {
		got = append(got, l.Target)
	}
	want := []string{"docs/protocol.md#offsets", "https://example.com", "ui/logo.png", "CHANGELOG.md", "#security"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Links = %q, want %q", got, want)
	}
	for target, relative := range map[string]bool{
		"docs/a.md": true, "#x": true, "../a.md": true,
		"https://x.org": false, "mailto:a@b.c": false, "//cdn.example/x": false,
	} {
		if got := (Link{Target: target}).Relative(); got != relative {
			t.Errorf("Relative(%q) = %v, want %v", target, got, relative)
		}
	}
	if p, f := (Link{Target: "a.md?x=1#sec"}).Split(); p != "a.md" || f != "sec" {
		t.Errorf("Split = %q, %q", p, f)
	}
}

func TestAnchors(t *testing.T) {
	t.Parallel()
	md := strings.Join([]string{
		"# Herald",
		"## The API description (OpenAPI)",
		"### Running with PostgreSQL",
		"## Idle consumers: memory",
		"## `herald_http_requests_total` and [links](x.md)",
		"## Metrics",
		"### Metrics",
		"```",
		"# not a heading",
		"```",
	}, "\n")
	want := map[string]bool{
		"herald":                               true,
		"the-api-description-openapi":          true,
		"running-with-postgresql":              true,
		"idle-consumers-memory":                true,
		"herald_http_requests_total-and-links": true,
		"metrics":                              true,
		"metrics-1":                            true,
	}
	if got := Anchors(md); !reflect.DeepEqual(got, want) {
		t.Fatalf("Anchors = %v, want %v", got, want)
	}
}
