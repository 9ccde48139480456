package streamrules

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/heraldstreams/herald/"

// impure are the standard packages a pure rules package must not import:
// they reach the disk, the network, a database or the log.
var impure = map[string]bool{"os": true, "os/exec": true, "net": true, "net/http": true, "database/sql": true,
	"io/fs": true, "log": true, "log/slog": true, "syscall": true}

// The wire format and the stream rules are the lowest layer: they import
// no storage, engine or HTTP package, and nothing that does I/O, so the
// store may call them and they can never call back up.
func TestRulesPackagesImportNothingAbove(t *testing.T) {
	t.Parallel()
	for dir, allowed := range map[string][]string{
		"../protocol":                  nil,
		".":                            {"protocol"},
		"../store/internal/claimrules": nil,
	} {
		for _, imp := range imports(t, dir) {
			if impure[imp] {
				t.Errorf("%s imports %s, which does I/O", dir, imp)
			}
			if own, ok := strings.CutPrefix(imp, module); ok && !slices.Contains(allowed, own) {
				t.Errorf("%s imports %s, a higher layer", dir, imp)
			}
		}
	}
}

// imports lists what the non-test Go files of dir import.
func imports(t *testing.T, dir string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil || len(files) == 0 {
		t.Fatalf("list %s: %v (%d files)", dir, err, len(files))
	}
	var out []string
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		f, err := parser.ParseFile(fset, name, src, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, spec := range f.Imports {
			p, err := strconv.Unquote(spec.Path.Value)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, p)
		}
	}
	return out
}
