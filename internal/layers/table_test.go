package layers

import (
	"encoding/json"
	"errors"
	"io"
	"os/exec"
	"strings"
	"testing"
)

// layerOf places every package of the module in a layer (docs/architecture.md,
// Layers). A package may import packages of its own layer or lower ones,
// never higher: the wire formats and rules know nothing of storage, the
// store knows nothing of engines, the engines nothing of HTTP. A new
// package gets a row here, or the test fails.
var layerOf = map[string]int{
	// 0: leaf utilities and pure rules, no I/O of their own.
	"internal/jsontext":         0,
	"internal/privfile":         0,
	"internal/secretbox":        0,
	"internal/telemetry":        0,
	"internal/audit":            0,
	"internal/httpjson":         0,
	"internal/testcert":         0,
	"internal/testenv":          0,
	"internal/testbin":          0,
	"internal/doccheck":         0,
	"internal/layers":           0,
	"internal/claimbook":        0,
	"internal/idlemem":          0,
	"glob":                      0,
	"protocol":                  0,
	"streamrules":               0,
	"store/internal/claimrules": 0,
	"delivery":                  0,
	"subscription":              0,
	"api":                       0,
	"ui":                        0,
	"client":                    0,
	// 1: the storage contract.
	"store": 1,
	// 2: the storage implementations and their suite.
	"store/internal/commitmetrics": 2,
	"store/sqlstore":               2,
	"store/sqlite":                 2,
	"store/postgres":               2,
	"store/storetest":              2,
	// 3: services the engines and routes share.
	"webhook":          3,
	"auth":             3,
	"stats":            3,
	"internal/service": 3,
	// The broker publishers beside the webhook sender, and the brokers
	// their tests run.
	"bus":                 3,
	"bus/natsbus":         3,
	"bus/kafkabus":        3,
	"internal/brokertest": 3,
	// 4: the engines, and the helpers of their tests.
	"delivery/dispatch":              4,
	"delivery/internal/deliverytest": 4,
	"subscription/wake":              4,
	"reaper":                         4,
	"replica":                        4,
	"internal/testhttp":              4,
	// 5: the HTTP handlers of the features, and the error table.
	"delivery/deliveryapi": 5,
	"httpapi/apierr":       5,
	"internal/routetest":   5,
	// 6: the router.
	"httpapi": 6,
	// 7: programs and the tests of the real binary.
	"cmd/herald":        7,
	"cmd/herald-bench":  7,
	"examples/consumer": 7,
	"e2e":               7,
}

type modulePackage struct {
	ImportPath string
	Imports    []string
}

// optionalTags are the build tags of code left out of a plain build (the
// in-process brokers of internal/brokertest and herald-bench): listed
// with them, that code is placed in a layer and checked too.
const optionalTags = "brokers"

// modulePackages lists every package of the module with its imports.
func modulePackages(t *testing.T) []modulePackage {
	t.Helper()
	out, err := exec.Command("go", "list", "-tags", optionalTags, "-json=ImportPath,Imports", module+"...").Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("go list: %v\n%s", err, ee.Stderr)
		}
		t.Fatalf("go list: %v", err)
	}
	var pkgs []modulePackage
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for {
		var p modulePackage
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("go list output: %v", err)
		}
		pkgs = append(pkgs, p)
	}
	return pkgs
}

// TestNoImportRunsUpward fails naming the import when a package imports
// one of a higher layer, and when a package has no layer.
func TestNoImportRunsUpward(t *testing.T) {
	t.Parallel()
	pkgs := modulePackages(t)
	if len(pkgs) < 20 {
		t.Fatalf("go list found only %d packages", len(pkgs))
	}
	for _, p := range pkgs {
		from := strings.TrimPrefix(p.ImportPath, module)
		fromLayer, ok := layerOf[from]
		if !ok {
			t.Errorf("%s has no layer: give it a row in layerOf", from)
			continue
		}
		for _, imp := range p.Imports {
			to, own := strings.CutPrefix(imp, module)
			if !own {
				continue
			}
			if toLayer, ok := layerOf[to]; ok && toLayer > fromLayer {
				t.Errorf("%s (layer %d) imports %s (layer %d): an import may not run to a higher layer", from, fromLayer, to, toLayer)
			}
		}
	}
}
