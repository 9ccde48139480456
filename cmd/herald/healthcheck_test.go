package main

import (
	"bytes"
	"context"
	"io"
	"regexp"
	"testing"

	"github.com/heraldstreams/herald/internal/testcert"
)

// herald healthcheck finds the local Herald from the serve environment
// (address, TLS, allowed hosts) and fails when none answers.
func TestHealthcheck(t *testing.T) {
	t.Parallel()
	pair := testcert.Write(t, t.TempDir(), "herald")
	env := map[string]string{
		adminKeyEnv:            testAdminKey,
		"HERALD_ADDR":          "0.0.0.0:0",
		"HERALD_TLS_CERT_FILE": pair.CertFile,
		"HERALD_TLS_KEY_FILE":  pair.KeyFile,
		"HERALD_ALLOWED_HOSTS": "herald.example",
		"HERALD_DATA_DIR":      t.TempDir(),
	}
	b := startCLI(t, env, "serve")
	b.waitFor(t, &b.errOut, "herald listening")
	port := regexp.MustCompile(`addr=\S+:(\d+) `).FindStringSubmatch(b.errOut.String())[1]
	env["HERALD_ADDR"] = "0.0.0.0:" + port
	var out bytes.Buffer
	if err := run(context.Background(), []string{"healthcheck"}, nil, &out, io.Discard, envOf(env)); err != nil || out.String() != "healthy\n" {
		t.Fatalf("healthcheck: %v %q", err, out.String())
	}
	// Another Host is refused by --allowed-hosts: the check must fail.
	env["HERALD_ALLOWED_HOSTS"] = "other.example"
	if err := run(context.Background(), []string{"healthcheck"}, nil, io.Discard, io.Discard, envOf(env)); err == nil {
		t.Fatal("healthy with a Host Herald refuses")
	}
	if err := b.stop(); err != nil {
		t.Fatal(err)
	}
	env["HERALD_ALLOWED_HOSTS"] = "herald.example"
	if err := run(context.Background(), []string{"healthcheck", "--timeout", "2s"}, nil, io.Discard, io.Discard, envOf(env)); err == nil {
		t.Fatal("healthy with Herald stopped")
	}
}
