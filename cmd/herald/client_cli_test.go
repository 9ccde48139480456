package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/heraldstreams/herald/delivery"
	"github.com/heraldstreams/herald/subscription"
)

// cliEnv points the client commands at m with the admin key.
func cliEnv(m *matrix) map[string]string {
	return map[string]string{"HERALD_URL": m.base, "HERALD_KEY": testAdminKey}
}

// mustCLI runs a command that must succeed and returns its output.
func mustCLI(t *testing.T, env map[string]string, args ...string) string {
	t.Helper()
	out, err := runCLI(t, env, args...)
	if err != nil {
		t.Fatalf("%v: %v (output %q)", args, err, out)
	}
	return out
}

// expectOutput fails unless out contains every one of want.
func expectOutput(t *testing.T, args, out string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(out, w) {
			t.Fatalf("%s: output %q lacks %q", args, out, w)
		}
	}
}

// syncBuffer is an output that a running command writes while the test
// reads it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// background runs a command until the test stops it; stop interrupts it
// and returns its error.
type background struct {
	out, errOut syncBuffer
	cancel      context.CancelFunc
	done        chan error
}

func startCLI(t *testing.T, env map[string]string, args ...string) *background {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	b := &background{cancel: cancel, done: make(chan error, 1)}
	go func() {
		b.done <- run(ctx, args, strings.NewReader(""), &b.out, &b.errOut, func(k string) (string, bool) { v, ok := env[k]; return v, ok })
	}()
	t.Cleanup(func() { b.stop() })
	return b
}

// stop interrupts the command and waits for it; a second call returns
// nil.
func (b *background) stop() error {
	b.cancel()
	err, ok := <-b.done
	if ok {
		close(b.done)
	}
	return err
}

// waitFor waits until the command has written want to w (or fails the
// test after a generous bound, or when the command ends first).
func (b *background) waitFor(t *testing.T, w *syncBuffer, want string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !strings.Contains(w.String(), want) {
		select {
		case err := <-b.done:
			t.Fatalf("the command ended (%v) before writing %q; output %q, errors %q", err, want, b.out.String(), b.errOut.String())
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %q; output %q, errors %q", want, b.out.String(), b.errOut.String())
		}
	}
}

func TestStreamsCommand(t *testing.T) {
	t.Parallel()
	m := newMatrix(t)
	env := cliEnv(m)
	out := mustCLI(t, env, "streams", "create", "/cli/s", "--content-type", "application/json", "--ttl", "1h")
	expectOutput(t, "create", out, "created /cli/s")
	out = mustCLI(t, env, "streams", "create", "/cli/s", "--content-type", "application/json", "--ttl", "1h", "--output", "json")
	var created streamOut
	if err := json.Unmarshal([]byte(out), &created); err != nil || created.Created == nil || *created.Created || created.Path != "/cli/s" {
		t.Fatalf("create again, json: %q, %v", out, err)
	}
	// Data as an argument, then from standard input; the content type
	// is the stream's.
	expectOutput(t, "append", mustCLI(t, env, "streams", "append", "/cli/s", `{"step":1}`), "appended", "/cli/s")
	if out, err := runCLIInput(t, env, `{"step":2,"name":"two"}`, "streams", "append", "/cli/s", "-"); err != nil || !strings.Contains(out, "appended") {
		t.Fatalf("append from stdin: %q, %v", out, err)
	}
	out = mustCLI(t, env, "streams", "read", "/cli/s")
	expectOutput(t, "read", out, `"step": 1`, `"name": "two"`)
	out = mustCLI(t, env, "streams", "read", "/cli/s", "--output", "json")
	var read streamOut
	if err := json.Unmarshal([]byte(out), &read); err != nil || read.Messages == nil || len(*read.Messages) != 2 || read.NextOffset == "" {
		t.Fatalf("read, json: %q, %v", out, err)
	}
	// ls: by prefix, with the tail a read gives.
	mustCLI(t, env, "streams", "create", "/cli-other/x")
	out = mustCLI(t, env, "streams", "ls", "--prefix", "/cli/")
	expectOutput(t, "ls", out, "/cli/s", "application/json", read.NextOffset)
	if strings.Contains(out, "/cli-other/x") {
		t.Fatalf("ls --prefix /cli/ lists /cli-other/x: %q", out)
	}
	var listed []streamItem
	if err := json.Unmarshal([]byte(mustCLI(t, env, "streams", "ls", "--output", "json")), &listed); err != nil || len(listed) < 2 {
		t.Fatalf("ls, json: %+v, %v", listed, err)
	}
	// From an offset: only what came after.
	out = mustCLI(t, env, "streams", "read", "/cli/s", "--offset", read.NextOffset, "--output", "json")
	var rest streamOut
	if err := json.Unmarshal([]byte(out), &rest); err != nil || rest.Messages == nil || len(*rest.Messages) != 0 {
		t.Fatalf("read from the tail: %q, %v", out, err)
	}

	// A text stream reads back as its bytes.
	mustCLI(t, env, "streams", "create", "/cli/text", "--content-type", "text/plain")
	mustCLI(t, env, "streams", "append", "/cli/text", "hello ")
	mustCLI(t, env, "streams", "append", "/cli/text", "world")
	if out := mustCLI(t, env, "streams", "read", "/cli/text"); out != "hello world" {
		t.Fatalf("read text: %q", out)
	}

	// tail prints what arrives until it is interrupted.
	tail := startCLI(t, env, "streams", "tail", "/cli/s", "--offset", "-1")
	tail.waitFor(t, &tail.out, `"step": 1`)
	mustCLI(t, env, "streams", "append", "/cli/s", `{"step":3}`)
	tail.waitFor(t, &tail.out, `"step": 3`)
	if err := tail.stop(); err != nil {
		t.Fatalf("tail ended with %v", err)
	}

	expectOutput(t, "rm", mustCLI(t, env, "streams", "rm", "/cli/s"), "deleted /cli/s")
	_, err := runCLI(t, env, "streams", "read", "/cli/s")
	var ae *apiError
	if !errors.As(err, &ae) || !strings.Contains(ae.Status, "404") || exitCode(err) != 1 {
		t.Fatalf("read after rm: %v", err)
	}
}

func TestSubscriptionsAndConsumersCommands(t *testing.T) {
	t.Parallel()
	m := newMatrix(t)
	env := cliEnv(m)
	for _, p := range []string{"/subs/a", "/subs/b", "/subs/c"} {
		mustCLI(t, env, "streams", "create", p, "--content-type", "text/plain")
	}
	out := mustCLI(t, env, "subscriptions", "create", "/subs/*", "cli-sub", "--webhook", m.receiver.URL, "--description", "from the cli")
	expectOutput(t, "subscriptions create", out, "webhook secret: whsec_", "cli-sub", "/subs/*")
	out = mustCLI(t, env, "subscriptions", "ls")
	expectOutput(t, "subscriptions ls", out, "cli-sub", "from the cli")
	if strings.Contains(out, "whsec_") {
		t.Fatalf("ls shows a secret: %q", out)
	}
	var subs []subscription.Subscription
	out = mustCLI(t, env, "subscriptions", "ls", "/subs/*", "--output", "json")
	if err := json.Unmarshal([]byte(out), &subs); err != nil || len(subs) != 1 || subs[0].SubscriptionID != "cli-sub" {
		t.Fatalf("ls json: %q, %v", out, err)
	}
	expectOutput(t, "subscriptions get", mustCLI(t, env, "subscriptions", "get", "/**", "cli-sub"), m.receiver.URL)

	// The stream that matched when the subscription was made has a
	// consumer, idle.
	consumerID := "cli-sub:%2Fsubs%2Fa"
	out = mustCLI(t, env, "consumers", "ls", "cli-sub")
	expectOutput(t, "consumers ls", out, consumerID, "IDLE", "/subs/a=")
	var consumers []subscription.ConsumerInfo
	out = mustCLI(t, env, "consumers", "ls", "cli-sub", "--output", "json")
	if err := json.Unmarshal([]byte(out), &consumers); err != nil || len(consumers) != 3 || consumers[0].ConsumerID != consumerID {
		t.Fatalf("consumers ls json: %q, %v", out, err)
	}
	// The API pages by id; ls follows the pages.
	var page subscription.ConsumerList
	m.admin(t, "GET", "/_herald/v1/subscriptions/cli-sub/consumers?limit=2", "", 200, &page)
	if len(page.Data) != 2 || page.NextCursor == nil || *page.NextCursor != page.Data[1].ConsumerID {
		t.Fatalf("first page: %+v", page)
	}
	m.admin(t, "GET", "/_herald/v1/subscriptions/cli-sub/consumers?limit=2&cursor="+url.QueryEscape(*page.NextCursor), "", 200, &page)
	if len(page.Data) != 1 || page.NextCursor != nil || page.Data[0].ConsumerID != "cli-sub:%2Fsubs%2Fc" {
		t.Fatalf("last page: %+v", page)
	}
	m.admin(t, "GET", "/_herald/v1/subscriptions/cli-sub/consumers?limit=0", "", 400, nil)
	m.admin(t, "GET", "/_herald/v1/subscriptions/cli-sub/consumers?state=IDLE", "", 400, nil)
	out = mustCLI(t, env, "consumers", "get", consumerID)
	expectOutput(t, "consumers get", out, "epoch:", "/subs/a", "ACKED", "next deadline:")
	// The id as a person writes it: the command encodes the path.
	expectOutput(t, "consumers get, path unencoded", mustCLI(t, env, "consumers", "get", "cli-sub:/subs/a"), consumerID, "/subs/a")
	if _, err := runCLI(t, env, "consumers", "get", "cli-sub:%2Fsubs%2Fnone"); !hasCode(err, "CONSUMER_NOT_FOUND") {
		t.Fatalf("get an unknown consumer: %v", err)
	}

	expectOutput(t, "subscriptions rm", mustCLI(t, env, "subscriptions", "rm", "/subs/*", "cli-sub"), "deleted subscription cli-sub")
	if _, err := runCLI(t, env, "consumers", "ls", "cli-sub"); !hasCode(err, "SUBSCRIPTION_NOT_FOUND") {
		t.Fatalf("consumers of a deleted subscription: %v", err)
	}
	if _, err := runCLI(t, env, "subscriptions", "get", "/**", "cli-sub"); !hasCode(err, "SUBSCRIPTION_NOT_FOUND") {
		t.Fatalf("get a deleted subscription: %v", err)
	}
}

func TestEndpointsEventsDeliveriesCommands(t *testing.T) {
	t.Parallel()
	m := newMatrix(t)
	env := cliEnv(m)
	out := mustCLI(t, env, "endpoints", "create", "--webhook", m.receiver.URL, "--event-type", "order.*", "--description", "shop", "--output", "json")
	var ep endpointOut
	if err := json.Unmarshal([]byte(out), &ep); err != nil || ep.ID == "" || !strings.HasPrefix(ep.Secret, "whsec_") {
		t.Fatalf("create: %q, %v", out, err)
	}
	out = mustCLI(t, env, "endpoints", "ls")
	expectOutput(t, "endpoints ls", out, ep.ID, "order.*", "shop")
	if strings.Contains(out, ep.Secret) {
		t.Fatalf("ls shows the secret: %q", out)
	}
	expectOutput(t, "endpoints get", mustCLI(t, env, "endpoints", "get", ep.ID), ep.ID, "active")
	expectOutput(t, "endpoints update", mustCLI(t, env, "endpoints", "update", ep.ID, "--description", "changed"), "changed", "order.*")
	expectOutput(t, "endpoints pause", mustCLI(t, env, "endpoints", "pause", ep.ID), "paused")
	expectOutput(t, "endpoints resume", mustCLI(t, env, "endpoints", "resume", ep.ID), "active")
	out = mustCLI(t, env, "endpoints", "rotate-secret", ep.ID)
	expectOutput(t, "endpoints rotate-secret", out, "signing secret: whsec_")
	if strings.Contains(out, ep.Secret) {
		t.Fatalf("rotate-secret shows the old secret: %q", out)
	}
	expectOutput(t, "endpoints test", mustCLI(t, env, "endpoints", "test", ep.ID), "delivered", "204")

	out = mustCLI(t, env, "events", "publish", "--type", "order.paid", "--data", `{"total":42}`, "--id", "ord-1", "--stream", "/shop/orders")
	expectOutput(t, "events publish", out, "published ord-1 to /shop/orders")
	expectOutput(t, "events publish again", mustCLI(t, env, "events", "publish", "--type", "order.paid", "--data", `{"total":42}`, "--id", "ord-1", "--stream", "/shop/orders"), "published before")

	// The delivery is made and sent in the background.
	var dlv []deliveryOut
	for deadline := time.Now().Add(20 * time.Second); len(dlv) == 0 || dlv[0].Status != "delivered"; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no delivered delivery: %+v", dlv)
		}
		out = mustCLI(t, env, "deliveries", "ls", "--endpoint", ep.ID, "--event-type", "order.paid", "--output", "json")
		if err := json.Unmarshal([]byte(out), &dlv); err != nil {
			t.Fatalf("deliveries ls json: %q, %v", out, err)
		}
	}
	expectOutput(t, "deliveries ls", mustCLI(t, env, "deliveries", "ls", "--endpoint", ep.ID, "--status", "delivered"), dlv[0].ID, "ord-1")
	if out := mustCLI(t, env, "deliveries", "ls", "--endpoint", ep.ID, "--status", "exhausted"); strings.Contains(out, dlv[0].ID) {
		t.Fatalf("--status exhausted lists a delivered delivery: %q", out)
	}
	expectOutput(t, "deliveries get", mustCLI(t, env, "deliveries", "get", dlv[0].ID), "attempts:", "204", `"total": 42`)
	expectOutput(t, "deliveries retry", mustCLI(t, env, "deliveries", "retry", dlv[0].ID), dlv[0].ID, "pending")
	expectOutput(t, "deliveries replay", mustCLI(t, env, "deliveries", "replay", "--endpoint", ep.ID, "--since", "2000-01-01T00:00:00Z"), "queued ")
	// A replay queues events that have no pending delivery: wait until the
	// retry and the first replay are sent.
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		var pending []deliveryOut
		out = mustCLI(t, env, "deliveries", "ls", "--endpoint", ep.ID, "--status", "pending", "--output", "json")
		if err := json.Unmarshal([]byte(out), &pending); err != nil {
			t.Fatalf("deliveries ls json: %q, %v", out, err)
		}
		if len(pending) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("deliveries still pending: %+v", pending)
		}
	}
	var replayed struct{ Queued int }
	out = mustCLI(t, env, "deliveries", "replay", "--endpoint", ep.ID, "--offset", "-1", "--stream", "/shop/orders", "--output", "json")
	if err := json.Unmarshal([]byte(out), &replayed); err != nil || replayed.Queued != 1 {
		t.Fatalf("replay json: %q, %v", out, err)
	}

	// Requeueing dead letters: none here, and the job says so once done.
	expectOutput(t, "deliveries replay --status", mustCLI(t, env, "deliveries", "replay", "--endpoint", ep.ID, "--status", "exhausted",
		"--until", "2100-01-01T00:00:00Z"), " done: queued 0 deliveries of 0 events")

	expectOutput(t, "endpoints rm", mustCLI(t, env, "endpoints", "rm", ep.ID), "deleted endpoint "+ep.ID)
	if _, err := runCLI(t, env, "endpoints", "get", ep.ID); err == nil || !strings.Contains(err.Error(), "404") {
		t.Fatalf("get after rm: %v", err)
	}
	// A refused URL says what to do.
	if _, err := runCLI(t, env, "endpoints", "create", "--webhook", "http://10.1.2.3/hook"); !hasCode(err, "URL_REFUSED") || !strings.Contains(err.Error(), "--webhook-allow-cidrs") {
		t.Fatalf("refused URL: %v", err)
	}
}

func TestListenCommand(t *testing.T) {
	t.Parallel()
	m := newMatrix(t)
	env := cliEnv(m)

	// Events: a temporary endpoint, each delivery printed as verified.
	l := startCLI(t, env, "listen", "--event-type", "cli.*")
	l.waitFor(t, &l.errOut, "press Ctrl-C")
	mustCLI(t, env, "events", "publish", "--type", "cli.hello", "--data", `{"n":1}`, "--id", "hello-1")
	l.waitFor(t, &l.out, "event hello-1 cli.hello — signature verified (Standard Webhooks)")
	expectOutput(t, "listen", l.out.String(), `"n": 1`)
	if err := l.stop(); err != nil {
		t.Fatalf("listen ended with %v", err)
	}
	if out := mustCLI(t, env, "endpoints", "ls"); strings.Contains(out, "herald listen") {
		t.Fatalf("the temporary endpoint is still there: %q", out)
	}

	// Wakes: a temporary subscription, each wake printed as verified,
	// in the JSON form.
	l = startCLI(t, env, "listen", "--pattern", "/wakes/*", "--output", "json")
	l.waitFor(t, &l.errOut, "press Ctrl-C")
	mustCLI(t, env, "streams", "create", "/wakes/a", "--content-type", "text/plain")
	mustCLI(t, env, "streams", "append", "/wakes/a", "hello")
	l.waitFor(t, &l.out, "\n")
	var rec listenRecord
	line, _, _ := strings.Cut(l.out.String(), "\n")
	if err := json.Unmarshal([]byte(line), &rec); err != nil || rec.Kind != "wake" || !rec.Verified || !strings.HasSuffix(rec.ID, ":%2Fwakes%2Fa") {
		t.Fatalf("wake record %q: %v", line, err)
	}
	if err := l.stop(); err != nil {
		t.Fatalf("listen ended with %v", err)
	}
	if out := mustCLI(t, env, "subscriptions", "ls"); strings.Contains(out, "herald-listen") {
		t.Fatalf("the temporary subscription is still there: %q", out)
	}
}

func TestListenHintWithoutLoopback(t *testing.T) {
	t.Parallel()
	a := startHerald(t) // loopback webhooks refused
	env := map[string]string{"HERALD_URL": "http://" + a.ln.Addr().String(), "HERALD_KEY": testAdminKey}
	for _, args := range [][]string{{"listen"}, {"listen", "--pattern", "/x/*"}} {
		_, err := runCLI(t, env, args...)
		if err == nil || !strings.Contains(err.Error(), "--webhook-allow-cidrs 127.0.0.0/8") || exitCode(err) != 1 {
			t.Fatalf("%v: %v", args, err)
		}
	}
}

func TestVerifyCommand(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	body := filepath.Join(dir, "body")
	payload := []byte(`{"id":"evt-1","type":"order.paid","data":{}}`)
	if err := os.WriteFile(body, payload, 0o600); err != nil {
		t.Fatal(err)
	}
	secret, err := delivery.GenerateSecret(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	signed, err := delivery.Sign(&delivery.SignParams{MessageID: "evt-1", Timestamp: time.Now(), Body: payload, Secrets: []string{secret}})
	if err != nil {
		t.Fatal(err)
	}
	std := []string{"verify", "--secret", secret, "--body", body,
		"--header", "webhook-id: " + signed.ID, "--header", "webhook-timestamp: " + signed.Timestamp, "--header", "webhook-signature: " + signed.Signature}
	expectOutput(t, "verify", mustCLI(t, nil, std...), "valid Standard Webhooks signature")
	// The body from standard input.
	stdinArgs := append(append([]string{}, std[:3]...), append([]string{"--body", "-"}, std[5:]...)...)
	if out, err := runCLIInput(t, nil, string(payload), stdinArgs...); err != nil || !strings.Contains(out, "valid") {
		t.Fatalf("verify from stdin: %q, %v", out, err)
	}
	// A tampered body, another secret: refused with the reason, exit 1.
	if _, err := runCLIInput(t, nil, `{"id":"evt-1","type":"order.paid","data":{"x":1}}`, stdinArgs...); !errors.Is(err, errSignature) || exitCode(err) != 1 {
		t.Fatalf("tampered body: %v", err)
	}
	other, err := delivery.GenerateSecret(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	wrong := append([]string{}, std...)
	wrong[2] = other
	if _, err := runCLI(t, nil, wrong...); !errors.Is(err, errSignature) || !strings.Contains(err.Error(), "does not match") ||
		strings.Contains(err.Error(), "client:") {
		t.Fatalf("another secret: %v", err)
	}

	// A wake's signature.
	wakeSig := subscription.SignatureHeaderValue(secret, payload, time.Now())
	wake := []string{"verify", "--secret", secret, "--body", body, "--header", "Webhook-Signature: " + wakeSig}
	expectOutput(t, "verify a wake", mustCLI(t, nil, wake...), "valid wake signature")
	if _, err := runCLIInput(t, nil, string(payload)+" ", "verify", "--secret", secret, "--body", "-", "--header", "Webhook-Signature: "+wakeSig); !errors.Is(err, errSignature) {
		t.Fatalf("tampered wake: %v", err)
	}
	stale := subscription.SignatureHeaderValue(secret, payload, time.Now().Add(-time.Hour))
	if _, err := runCLI(t, nil, "verify", "--secret", secret, "--body", body, "--header", "Webhook-Signature: "+stale); !errors.Is(err, errSignature) {
		t.Fatalf("an hour-old wake signature: %v", err)
	}
}

func TestClientCommandsUsage(t *testing.T) {
	t.Parallel()
	env := map[string]string{"HERALD_URL": "http://127.0.0.1:1"}
	for _, args := range [][]string{
		{"streams"},
		{"streams", "ls", "extra"},
		{"streams", "create"},
		{"streams", "create", "no-slash"},
		{"streams", "create", "/a", "--ttl", "1500ms"},
		{"streams", "read", "/a", "/b"},
		{"subscriptions", "create", "/a/*", "id"},
		{"subscriptions", "get", "/a/*"},
		{"consumers", "get", "no-colon"},
		{"consumers", "get", "sub:a/b"},
		{"endpoints", "create"},
		{"endpoints", "update", "ep_1"},
		{"endpoints", "frobnicate"},
		{"events", "publish", "--type", "t"},
		{"events", "publish", "--type", "t", "--data", "{not json"},
		{"deliveries", "ls"},
		{"deliveries", "replay", "--endpoint", "ep_1"},
		{"listen", "--pattern", "/a/*", "--event-type", "x"},
		{"listen", "extra"},
		{"verify", "--secret", "s"},
		{"verify", "--secret", "s", "--body", "-", "--header", "no colon"},
		{"streams", "read", "/a", "--output", "yaml"},
		{"streams", "read", "/a", "--url", "ftp://x"},
	} {
		_, err := runCLI(t, env, args...)
		if !errors.Is(err, errUsage) || exitCode(err) != 2 {
			t.Errorf("%v: %v, want a usage error", args, err)
		}
	}
	for _, cmd := range []string{"streams", "subscriptions", "consumers", "endpoints", "events", "deliveries", "listen", "verify", "keys"} {
		out, err := runCLI(t, env, cmd, "help")
		if err != nil || !strings.Contains(out, "Usage:") || !strings.Contains(out, "herald "+cmd) {
			t.Errorf("%s help: %q, %v", cmd, out, err)
		}
	}
	out, err := runCLI(t, env, "help")
	if err != nil || !strings.Contains(out, "herald streams") || !strings.Contains(out, "herald verify") {
		t.Errorf("help: %q, %v", out, err)
	}
	// Herald not there: an error, not a usage error.
	if _, err := runCLI(t, env, "streams", "read", "/a"); err == nil || exitCode(err) != 1 {
		t.Errorf("no Herald: %v", err)
	}
}

func TestReservedSubscriptionsCommands(t *testing.T) {
	t.Parallel()
	m := newMatrix(t)
	env := cliEnv(m)
	mustCLI(t, env, "streams", "create", "/ds/events/a", "--content-type", "text/plain")
	out := mustCLI(t, env, "subscriptions", "ds-create", "cli-ds", "--type", "webhook", "--pattern", "ds/events/*", "--webhook", m.receiver.URL,
		"--lease-ttl-ms", "5000", "--description", "from the cli")
	expectOutput(t, "ds-create", out, "subscription cli-ds: webhook "+m.receiver.URL, "signed by ds_", "/__ds/jwks.json", "lease: 5000 ms", "ds/events/a", "glob")
	expectOutput(t, "ds-link", mustCLI(t, env, "subscriptions", "ds-link", "cli-ds", "ds/manual/x", "ds/events/a"), "ds/manual/x", "explicit")
	out = mustCLI(t, env, "subscriptions", "ds-unlink", "cli-ds", "ds/manual/x")
	if strings.Contains(out, "ds/manual/x") {
		t.Fatalf("ds-unlink left the link: %q", out)
	}
	// The pattern still links the stream that was explicit too.
	expectOutput(t, "ds-unlink of a globbed stream", mustCLI(t, env, "subscriptions", "ds-unlink", "cli-ds", "ds/events/a"), "ds/events/a", "glob")
	var v subscription.DSSubscriptionView
	out = mustCLI(t, env, "subscriptions", "ds-get", "cli-ds", "--output", "json")
	if err := json.Unmarshal([]byte(out), &v); err != nil || v.ID != "cli-ds" || v.Type != "webhook" || v.Description != "from the cli" {
		t.Fatalf("ds-get json: %q, %v", out, err)
	}
	if _, err := runCLI(t, env, "subscriptions", "ds-create", "cli-ds", "--type", "pull-wake", "--pattern", "ds/events/*", "--wake-stream", "ds/wake"); !hasCode(err, "SUBSCRIPTION_EXISTS") {
		t.Fatalf("ds-create with another configuration: %v", err)
	}
	expectOutput(t, "ds-rotate-key", mustCLI(t, env, "subscriptions", "ds-rotate-key"), "webhook signing key ds_", "2 keys are published")
	expectOutput(t, "ds-rm", mustCLI(t, env, "subscriptions", "ds-rm", "cli-ds"), "deleted subscription cli-ds")
	if _, err := runCLI(t, env, "subscriptions", "ds-get", "cli-ds"); !hasCode(err, "SUBSCRIPTION_NOT_FOUND") {
		t.Fatalf("ds-get of a deleted subscription: %v", err)
	}
}
