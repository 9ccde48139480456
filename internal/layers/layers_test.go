package layers

import (
	"encoding/json"
	"errors"
	"io"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/heraldstreams/herald/"

// rulesPackages are the pure rules packages: no I/O, no storage, no
// sender, no telemetry. A new rules package gets a row here.
var rulesPackages = []string{
	module + "glob",
	module + "protocol",
	module + "streamrules",
	module + "store/internal/claimrules",
	module + "delivery",
	module + "subscription",
}

// forbiddenDirect are the standard packages a rules package may not
// import itself (fmt and others import os; that is not the rules' I/O).
var forbiddenDirect = []string{"os", "net", "database/sql", "io/fs", "log/slog"}

// forbiddenAnywhere are import path prefixes a rules package may not
// depend on, directly or through another package.
var forbiddenAnywhere = []string{
	module + "store",
	module + "webhook",
	module + "internal/telemetry",
	module + "internal/privfile",
	"github.com/prometheus/",
	"go.opentelemetry.io/",
}

type listedPackage struct {
	ImportPath string
	Imports    []string
	Standard   bool
}

// listPackages runs go list on the rules packages and every package they
// depend on.
func listPackages(t *testing.T) map[string]*listedPackage {
	t.Helper()
	args := append([]string{"list", "-deps", "-json=ImportPath,Imports,Standard"}, rulesPackages...)
	out, err := exec.Command("go", args...).Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("go list: %v\n%s", err, ee.Stderr)
		}
		t.Fatalf("go list: %v", err)
	}
	pkgs := map[string]*listedPackage{}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for {
		var p listedPackage
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("go list output: %v", err)
		}
		pkgs[p.ImportPath] = &p
	}
	return pkgs
}

func hasPrefix(path string, prefixes []string) bool {
	for _, p := range prefixes {
		if path == strings.TrimSuffix(p, "/") || strings.HasPrefix(path, strings.TrimSuffix(p, "/")+"/") {
			return true
		}
	}
	return false
}

// TestRulesPackagesDoNoIO fails naming the offending import, and the
// chain of imports that leads to it, when a rules package imports a
// forbidden package.
func TestRulesPackagesDoNoIO(t *testing.T) {
	t.Parallel()
	pkgs := listPackages(t)
	for _, root := range rulesPackages {
		p, ok := pkgs[root]
		if !ok {
			t.Errorf("%s: not found by go list", root)
			continue
		}
		for _, imp := range p.Imports {
			if slices.Contains(forbiddenDirect, imp) {
				t.Errorf("%s imports %s: a rules package does no I/O; move the code that needs it to the engine or the API package", root, imp)
			}
		}
		// Walk the dependencies breadth first, remembering how each was
		// reached, so the message shows the chain.
		via := map[string]string{root: ""}
		queue := []string{root}
		for len(queue) > 0 {
			cur := queue[0]
			queue = queue[1:]
			dep, ok := pkgs[cur]
			if !ok || dep.Standard {
				continue
			}
			for _, imp := range dep.Imports {
				if _, seen := via[imp]; seen {
					continue
				}
				via[imp] = cur
				if hasPrefix(imp, forbiddenAnywhere) {
					chain := []string{imp}
					for at := cur; at != ""; at = via[at] {
						chain = append(chain, at)
					}
					slices.Reverse(chain)
					t.Errorf("%s depends on %s (%s): a rules package knows no storage, sender or telemetry; move the code that needs it to the engine or the API package",
						root, imp, strings.Join(chain, " → "))
					continue
				}
				queue = append(queue, imp)
			}
		}
	}
}

// TestLayersCheckCatchesAnOffence runs the walk's prefix rule on paths,
// so a typo in the table cannot make the test pass by matching nothing.
func TestLayersCheckCatchesAnOffence(t *testing.T) {
	t.Parallel()
	for path, want := range map[string]bool{
		module + "store":                        true,
		module + "store/sqlite":                 true,
		module + "storefront":                   false,
		module + "webhook":                      true,
		module + "internal/telemetry":           true,
		"github.com/prometheus/client_golang/x": true,
		"go.opentelemetry.io/otel/trace":        true,
		module + "glob":                         false,
	} {
		if got := hasPrefix(path, forbiddenAnywhere); got != want {
			t.Errorf("forbidden(%s) = %v, want %v", path, got, want)
		}
	}
}
