package main

import (
	"flag"
	"os"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite docs/configuration.md from the flag definitions")

// TestConfigurationReference: docs/configuration.md is exactly what the
// flag definitions make, so a new or changed flag without its reference
// fails here (go test ./cmd/herald -run TestConfigurationReference
// -update rewrites it).
func TestConfigurationReference(t *testing.T) {
	t.Parallel()
	const path = "../../docs/configuration.md"
	want := configurationReference()
	if *update {
		if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != want {
		t.Fatalf("%s is not what the flag definitions make; run: go test ./cmd/herald -run TestConfigurationReference -update", path)
	}
	for _, name := range []string{"addr", "data-dir", "store", "admin-key-file", "delivery-timeout"} {
		if !strings.Contains(want, "| `--"+name+"` | `"+envName(name)+"` |") {
			t.Errorf("the reference has no row for --%s", name)
		}
	}
}
