package main

import (
	"encoding/json"
	"net"
	"strings"
	"testing"
)

func TestCLIServerDown(t *testing.T) {
	t.Parallel()
	// An address where nothing listens: a port the system gave, closed.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + ln.Addr().String()
	if err := ln.Close(); err != nil {
		t.Fatal(err)
	}
	_, err = runCLI(t, map[string]string{"HERALD_URL": base}, "streams", "read", "/a")
	want := "cannot reach Herald at " + base + " (is it running? --url / HERALD_URL)"
	if err == nil || err.Error() != want || exitCode(err) != 1 {
		t.Fatalf("server down: %v, want %q", err, want)
	}
}

func TestCLIUnauthorizedNamesTheKeyFlag(t *testing.T) {
	t.Parallel()
	m := newMatrix(t)
	_, err := runCLI(t, map[string]string{"HERALD_URL": m.base}, "endpoints", "ls")
	if !hasCode(err, "UNAUTHENTICATED") || !strings.Contains(err.Error(), "--key") || !strings.Contains(err.Error(), "HERALD_KEY") ||
		strings.Contains(err.Error(), "Bearer") {
		t.Fatalf("no key: %v", err)
	}
	_, err = runCLI(t, map[string]string{"HERALD_URL": m.base, "HERALD_KEY": "hk_not_a_key"}, "endpoints", "ls")
	if !hasCode(err, "INVALID_KEY") || !strings.Contains(err.Error(), "hint: check the key given with --key or HERALD_KEY") {
		t.Fatalf("a wrong key: %v", err)
	}
}

// expectEveryField fails unless the table form of a get command shows a
// "name:" line for every field of the JSON form.
func expectEveryField(t *testing.T, env map[string]string, args ...string) {
	t.Helper()
	var fields map[string]json.RawMessage
	out := mustCLI(t, env, append(args, "--output", "json")...)
	if err := json.Unmarshal([]byte(out), &fields); err != nil || len(fields) == 0 {
		t.Fatalf("%v json: %q, %v", args, out, err)
	}
	table := mustCLI(t, env, args...)
	for name := range fields {
		if name == "secret" || name == "attempts" || name == "payload" {
			continue
		}
		if !strings.Contains(table, "\n"+strings.ReplaceAll(name, "_", " ")+":") && !strings.HasPrefix(table, strings.ReplaceAll(name, "_", " ")+":") {
			t.Errorf("%v does not show %s: %q", args, name, table)
		}
	}
}

func TestCLIGetShowsEveryField(t *testing.T) {
	t.Parallel()
	m := newMatrix(t)
	env := cliEnv(m)
	var ep endpointOut
	out := mustCLI(t, env, "endpoints", "create", "--webhook", m.receiver.URL, "--event-type", "order.*", "--description", "shop", "--output", "json")
	if err := json.Unmarshal([]byte(out), &ep); err != nil {
		t.Fatalf("create: %q, %v", out, err)
	}
	expectEveryField(t, env, "endpoints", "get", ep.ID)
	got := mustCLI(t, env, "endpoints", "get", ep.ID)
	expectOutput(t, "endpoints get", got, "event types:", "order.*", "description:", "shop", "status:", "active", m.receiver.URL)
	if strings.Contains(got, "ID  STATUS") {
		t.Fatalf("endpoints get prints the list row: %q", got)
	}

	var key keyOut
	out = mustCLI(t, env, "keys", "create", "--scope", "streams:read", "--description", "reader", "--output", "json")
	if err := json.Unmarshal([]byte(out), &key); err != nil {
		t.Fatalf("keys create: %q, %v", out, err)
	}
	expectEveryField(t, env, "keys", "get", key.ID)

	mustCLI(t, env, "subscriptions", "create", "/fields/*", "fields-sub", "--webhook", m.receiver.URL, "--description", "all of it")
	expectEveryField(t, env, "subscriptions", "get", "/fields/*", "fields-sub")
}

func TestCLIWebhookHintOnlyWhereItApplies(t *testing.T) {
	t.Parallel()
	m := newMatrix(t)
	env := cliEnv(m)
	const hint = "--webhook-allow-cidrs"
	for _, c := range []struct {
		url, says string
		hint      bool
	}{
		{"http://10.1.2.3/hook", "private", true},
		{"https://[::1]/hook", "loopback", true},
		{"ftp://hooks.example.com/in", "scheme", false},
		{"https://hooks.example.invalid/in", "does not resolve", false},
	} {
		_, err := runCLI(t, env, "endpoints", "create", "--webhook", c.url)
		if !hasCode(err, "URL_REFUSED") || !strings.Contains(err.Error(), c.says) || strings.Contains(err.Error(), hint) != c.hint {
			t.Errorf("%s: %v (hint wanted: %v)", c.url, err, c.hint)
		}
		_, err = runCLI(t, env, "subscriptions", "create", "/hint/*", "hint-sub", "--webhook", c.url)
		if !hasCode(err, "URL_REFUSED") || strings.Contains(err.Error(), hint) != c.hint {
			t.Errorf("subscription to %s: %v (hint wanted: %v)", c.url, err, c.hint)
		}
	}
}
