package api

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
)

// TestDocumentIsValidOpenAPI31 loads the document with every $ref
// resolved and checks it against the rules of OpenAPI 3.1: its objects'
// required fields and values, its schemas (JSON Schema 2020-12), and its
// examples against their schemas (validated by default).
func TestDocumentIsValidOpenAPI31(t *testing.T) {
	t.Parallel()
	doc, err := openapi3.NewLoader().LoadFromData(OpenAPI())
	if err != nil {
		t.Fatalf("loading the document: %v", err)
	}
	if v := doc.OpenAPI; v != "3.1.0" {
		t.Fatalf("openapi version %q, want 3.1.0", v)
	}
	if !doc.IsOpenAPI31OrLater() || doc.IsOpenAPI32OrLater() {
		t.Fatal("the document is not read as OpenAPI 3.1")
	}
	if err := doc.Validate(context.Background()); err != nil {
		t.Fatalf("the document breaks OpenAPI 3.1: %v", err)
	}
}

// TestEveryOperationDeclaresItsAccess: each operation names who may call
// it, in its security requirement and in x-herald-scope (a scope) or
// x-herald-access (public, callback-token, or credential: any valid
// credential whatever its scopes), and the two agree.
func TestEveryOperationDeclaresItsAccess(t *testing.T) {
	t.Parallel()
	var doc struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(OpenAPI(), &doc); err != nil {
		t.Fatal(err)
	}
	n := 0
	for path, item := range doc.Paths {
		for method, raw := range item {
			if method == "parameters" {
				continue
			}
			n++
			var op struct {
				Scope    string                `json:"x-herald-scope"`
				Access   string                `json:"x-herald-access"`
				Security []map[string][]string `json:"security"`
			}
			if err := json.Unmarshal(raw, &op); err != nil {
				t.Fatalf("%s %s: %v", method, path, err)
			}
			name := strings.ToUpper(method) + " " + path
			switch {
			case op.Scope != "" && op.Access == "":
				found := false
				for _, req := range op.Security {
					roles, ok := req["apiKey"]
					found = found || ok && len(roles) == 1 && roles[0] == op.Scope
				}
				if !found {
					t.Errorf("%s: x-herald-scope %q without the security requirement apiKey: [%q]", name, op.Scope, op.Scope)
				}
			case op.Access == "public" && op.Scope == "":
				if op.Security == nil || len(op.Security) != 0 {
					t.Errorf("%s: public, but its security is %v, not []", name, op.Security)
				}
			case op.Access == "callback-token" && op.Scope == "":
				if len(op.Security) != 1 || op.Security[0]["callbackToken"] == nil {
					t.Errorf("%s: callback-token, but its security is %v", name, op.Security)
				}
			case op.Access == "credential" && op.Scope == "":
				// [{apiKey: []}]: the scheme, and no scope.
				anyKey := len(op.Security) == 1 && len(op.Security[0]) == 1
				if anyKey {
					roles, ok := op.Security[0]["apiKey"]
					anyKey = ok && roles != nil && len(roles) == 0
				}
				if !anyKey {
					t.Errorf("%s: credential, but its security is %v, not [{apiKey: []}]", name, op.Security)
				}
			default:
				t.Errorf("%s: give exactly one of x-herald-scope and x-herald-access (public, callback-token or credential)", name)
			}
		}
	}
	if n < 20 {
		t.Fatalf("the document has %d operations", n)
	}
}
