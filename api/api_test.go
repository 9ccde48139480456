package api

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"
)

// TestDocumentIsValidOpenAPI31 checks the document against the OpenAPI
// 3.1 specification's schema, and that its model builds with every $ref
// resolved.
func TestDocumentIsValidOpenAPI31(t *testing.T) {
	t.Parallel()
	doc, err := libopenapi.NewDocument(OpenAPI())
	if err != nil {
		t.Fatal(err)
	}
	if v := doc.GetVersion(); v != "3.1.0" {
		t.Fatalf("openapi version %q, want 3.1.0", v)
	}
	model, err := doc.BuildV3Model()
	if err != nil {
		t.Fatalf("building the model: %v", err)
	}
	if model.Index != nil {
		for _, e := range model.Index.GetReferenceIndexErrors() {
			t.Errorf("reference: %v", e)
		}
	}
	v, errs := validator.NewValidator(doc)
	if len(errs) > 0 {
		t.Fatalf("validator: %v", errs)
	}
	if ok, verrs := v.ValidateDocument(); !ok {
		for _, e := range verrs {
			t.Errorf("%s: %s", e.Message, e.Reason)
			for _, f := range e.SchemaValidationErrors {
				t.Errorf("  at %s (%s, line %d): %s", f.FieldPath, f.KeywordLocation, f.Line, f.Reason)
			}
		}
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
