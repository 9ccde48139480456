package main

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/heraldstreams/herald/auth"
)

// brokerHerald is a Herald with access control on, its flags and a
// loopback allow list (the brokers of the tests are on loopback).
func brokerHerald(t *testing.T, flags ...string) *matrix {
	t.Helper()
	a := startHerald(t, append([]string{"--webhook-allow-cidrs", "127.0.0.0/8"}, flags...)...)
	return &matrix{t: t, app: a, base: "http://" + a.ln.Addr().String()}
}

// With --delivery-tenant-brokers a tenant's key configures a broker
// endpoint of its own tenant, whose credentials it never reads back.
func TestTenantBrokersFlag(t *testing.T) {
	t.Parallel()
	m := brokerHerald(t, "--delivery-tenant-brokers")
	key := m.key(t, []auth.Scope{auth.ScopeEndpointsRead, auth.ScopeEndpointsWrite}, "acme")
	status, body := m.call(t, "POST", "/_herald/v1/endpoints", map[string]string{"Authorization": "Bearer " + key, "Content-Type": "application/json"},
		`{"type":"kafka","config":{"brokers":["127.0.0.1:9092"],"sasl":{"mechanism":"PLAIN","username":"acme","password":"s3cret"}}}`)
	if status != http.StatusCreated || !strings.Contains(body, `"tenant":"acme"`) || strings.Contains(body, "s3cret") ||
		!strings.Contains(body, `"password":"***"`) {
		t.Fatalf("create: %d %s", status, body)
	}
}

// A built-in destination at an address the policy refuses stops Herald
// at start, naming the flag's problem.
func TestBuiltinDestinationAddressRefused(t *testing.T) {
	t.Parallel()
	cfg, err := parseServeFlags([]string{"--addr", "127.0.0.1:0", "--data-dir", t.TempDir(), "--kafka-brokers", "127.0.0.1:9092"},
		io.Discard, io.Discard, envOf(map[string]string{adminKeyEnv: testAdminKey}))
	if err != nil {
		t.Fatal(err)
	}
	a, err := newApp(t.Context(), cfg, slog.New(slog.DiscardHandler), nil)
	if err == nil {
		_ = a.stop(context.Background())
		t.Fatal("Herald started with a refused broker address")
	}
	if !strings.Contains(err.Error(), "built-in kafka destination") || !strings.Contains(err.Error(), "loopback") {
		t.Fatalf("error = %v", err)
	}
}

// herald endpoints create --type kafka --config - makes a broker
// endpoint from the config on standard input; ls and get show it, its
// password masked.
func TestEndpointsCreateBrokerCommand(t *testing.T) {
	t.Parallel()
	m := newMatrix(t)
	env := cliEnv(m)
	out, err := runCLIInput(t, env, `{"brokers":["127.0.0.1:9092"],"topic":"{tenant}.{type}","sasl":{"mechanism":"SCRAM-SHA-256","username":"u","password":"s3cret"}}`,
		"endpoints", "create", "--type", "kafka", "--config", "-", "--event-type", "order.*", "--output", "json")
	var ep endpointOut
	if err != nil || json.Unmarshal([]byte(out), &ep) != nil || ep.Type != "kafka" || strings.Contains(out, "s3cret") || !strings.Contains(out, `"password": "***"`) {
		t.Fatalf("create: %q, %v", out, err)
	}
	expectOutput(t, "endpoints ls", mustCLI(t, env, "endpoints", "ls"), ep.ID, "kafka", "order.*")
	expectOutput(t, "endpoints get", mustCLI(t, env, "endpoints", "get", ep.ID), "{tenant}.{type}", "SCRAM-SHA-256")
	if _, err := runCLI(t, env, "endpoints", "create", "--type", "kafka", "--config", "{"); err == nil || !strings.Contains(err.Error(), "--config is not JSON") {
		t.Fatalf("a config that is not JSON: %v", err)
	}
	if _, err := runCLI(t, env, "endpoints", "create", "--type", "kafka", "--config", `{"brokers":["10.9.9.9:9092"]}`); !hasCode(err, "URL_REFUSED") {
		t.Fatalf("a refused broker: %v", err)
	}
}

// --kafka-tls turns TLS on for the built-in Kafka destination, which may
// then reach a public address; without it, a public broker is refused.
func TestBuiltinKafkaTLS(t *testing.T) {
	t.Parallel()
	c := brokersConfig{KafkaBrokers: "93.184.216.34:9093", KafkaTopicPrefix: "herald", KafkaTLS: true}
	bs, err := c.builtins()
	if err != nil || !strings.Contains(string(bs[0].Config), `"tls":{}`) {
		t.Fatalf("builtins = %s, %v", bs[0].Config, err)
	}
	c.KafkaTLS = false
	if bs, err = c.builtins(); err != nil || strings.Contains(string(bs[0].Config), "tls") {
		t.Fatalf("builtins without TLS = %s, %v", bs[0].Config, err)
	}
}
