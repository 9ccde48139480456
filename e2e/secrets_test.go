package e2e

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/heraldstreams/herald/client"
)

// hookRecorder is a webhook receiver that keeps the requests it got.
type hookRecorder struct {
	mu   sync.Mutex
	reqs []recordedHook
}

type recordedHook struct {
	header http.Header
	body   []byte
}

func newHookRecorder(t *testing.T) (*hookRecorder, string) {
	rec := &hookRecorder{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, "read", http.StatusBadRequest)
			return
		}
		rec.mu.Lock()
		rec.reqs = append(rec.reqs, recordedHook{header: r.Header.Clone(), body: body})
		rec.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(srv.Close)
	return rec, srv.URL
}

func (rec *hookRecorder) last(t *testing.T) recordedHook {
	t.Helper()
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.reqs) == 0 {
		t.Fatal("the receiver got no request")
	}
	return rec.reqs[len(rec.reqs)-1]
}

var jsonHeader = map[string]string{"Content-Type": "application/json"}

// apiJSON sends a request to the /_herald/v1 API, checks its status and
// decodes its body into out (when not nil).
func apiJSON(t *testing.T, method, url, body string, want int, out any) string {
	t.Helper()
	resp, got := do(t, method, url, jsonHeader, body)
	if resp.StatusCode != want {
		t.Fatalf("%s %s: %d %s, want %d", method, url, resp.StatusCode, got, want)
	}
	if out != nil {
		if err := json.Unmarshal([]byte(got), out); err != nil {
			t.Fatalf("%s %s: %v in %s", method, url, err, got)
		}
	}
	return got
}

// checkTestEvent sends a test event to the endpoint and checks that the
// receiver got it signed with secret and carrying the header.
func checkTestEvent(t *testing.T, base, id string, rec *hookRecorder, secret, header, value string) {
	t.Helper()
	var res struct{ OK bool }
	apiJSON(t, "POST", base+"/_herald/v1/endpoints/"+id+"/test", "", http.StatusOK, &res)
	if !res.OK {
		t.Fatal("test event not delivered")
	}
	got := rec.last(t)
	if err := client.VerifyStandardWebhook(secret, got.header, got.body, time.Now()); err != nil {
		t.Fatalf("test event signature with the endpoint's secret: %v", err)
	}
	if got.header.Get(header) != value {
		t.Fatalf("test event header %s = %q, want %q", header, got.header.Get(header), value)
	}
}

// findSecrets returns the secrets whose bytes appear in the database
// files of dataDir.
func findSecrets(t *testing.T, dataDir string, secrets map[string]string) []string {
	t.Helper()
	var found []string
	for _, name := range []string{"herald.db", "herald.db-wal"} {
		data, err := os.ReadFile(filepath.Join(dataDir, name))
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		for what, secret := range secrets {
			if bytes.Contains(data, []byte(secret)) {
				found = append(found, name+" holds the "+what)
			}
		}
	}
	return found
}

// runHerald runs the binary to its end (a command that must not serve)
// and returns its output and exit code.
func runHerald(t *testing.T, env []string, args ...string) (string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, heraldBinary(t), args...)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return string(out), 0
	case errors.As(err, &exit):
		return string(out), exit.ExitCode()
	}
	t.Fatalf("herald %v: %v\n%s", args, err, out)
	return "", 0
}

// TestSecretsAreNotInTheDatabaseFiles writes every kind of secret through
// the real binary's API (an endpoint's signing secret, its previous one
// after a rotation, a custom header value, a subscription's webhook
// secret, and the callback token key of an older Herald's key file) and
// checks that none of them is in the bytes of the database or its WAL,
// while Herald runs and after it stopped, and that they all still work
// after a restart.
func TestSecretsAreNotInTheDatabaseFiles(t *testing.T) {
	t.Parallel()
	rec, hook := newHookRecorder(t)
	dataDir := filepath.Join(t.TempDir(), "data")
	if err := os.Mkdir(dataDir, 0o700); err != nil {
		t.Fatal(err)
	}
	// An older Herald kept the callback token keys in this file.
	tokenKey := []byte("e2e-token-key-secret-0123456789ab")
	tokenKeyB64 := base64.RawURLEncoding.EncodeToString(tokenKey)
	legacy := filepath.Join(dataDir, "token-keys")
	if err := os.WriteFile(legacy, []byte("ktest:"+tokenKeyB64+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}

	s := startHerald(t, dataDir, "--webhook-allow-cidrs", "127.0.0.0/8")
	headerValue := "Bearer e2e-receiver-credential-7f3a"
	var created struct{ ID, Secret string }
	apiJSON(t, "POST", s.base+"/_herald/v1/endpoints",
		`{"url":"`+hook+`/events","headers":{"Authorization":"`+headerValue+`"}}`, http.StatusCreated, &created)
	var rotated struct{ Secret string }
	apiJSON(t, "POST", s.base+"/_herald/v1/endpoints/"+created.ID+"/rotate-secret", "", http.StatusOK, &rotated)
	if rotated.Secret == "" || rotated.Secret == created.Secret {
		t.Fatalf("rotation gave secret %q", rotated.Secret)
	}
	subSecret := createSubscription(t, s.base, "/jobs/*", "sub-1", hook+"/wake")
	secrets := map[string]string{
		"endpoint secret":            rotated.Secret,
		"previous endpoint secret":   created.Secret,
		"custom header value":        headerValue,
		"subscription secret":        subSecret,
		"token key (base64)":         tokenKeyB64,
		"token key (raw)":            string(tokenKey),
		"endpoint secret (key only)": strings.TrimPrefix(rotated.Secret, "whsec_"),
	}
	if _, err := os.Stat(legacy); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the plaintext token key file is still there: %v", err)
	}
	if found := findSecrets(t, dataDir, secrets); len(found) > 0 {
		t.Fatalf("while Herald runs: %v", found)
	}
	if err := s.terminate(30 * time.Second); err != nil {
		t.Fatalf("stop: %v\n%s", err, s.logs)
	}
	if found := findSecrets(t, dataDir, secrets); len(found) > 0 {
		t.Fatalf("after Herald stopped: %v", found)
	}

	// The secrets still work: the endpoint signs with its secret and sends
	// its header.
	s = startHerald(t, dataDir, "--webhook-allow-cidrs", "127.0.0.0/8")
	checkTestEvent(t, s.base, created.ID, rec, rotated.Secret, "Authorization", headerValue)
	if found := findSecrets(t, dataDir, secrets); len(found) > 0 {
		t.Fatalf("after a restart: %v", found)
	}
}

// TestWrongKEKIsRefusedAtStart restarts Herald with another
// key-encryption key, given directly or as another key file: it exits at
// once with a clear message, and the key file that start made is not
// kept.
func TestWrongKEKIsRefusedAtStart(t *testing.T) {
	t.Parallel()
	_, hook := newHookRecorder(t)
	dataDir := filepath.Join(t.TempDir(), "data")
	s := startHerald(t, dataDir, "--webhook-allow-cidrs", "127.0.0.0/8")
	apiJSON(t, "POST", s.base+"/_herald/v1/endpoints", `{"url":"`+hook+`","headers":{"X-Key":"v"}}`, http.StatusCreated, nil)
	if err := s.terminate(30 * time.Second); err != nil {
		t.Fatal(err)
	}
	newKey, code := runHerald(t, nil, "kek", "new")
	if code != 0 || !strings.Contains(newKey, ":") {
		t.Fatalf("herald kek new: %d %s", code, newKey)
	}
	const want = "the key-encryption key does not match the one this data was written with"
	out, code := runHerald(t, []string{"HERALD_KEK=" + strings.TrimSpace(newKey)}, "serve", "--addr", "127.0.0.1:0", "--data-dir", dataDir)
	if code == 0 || !strings.Contains(out, want) || !strings.Contains(out, "HERALD_KEK") {
		t.Fatalf("start with another HERALD_KEK: exit %d\n%s", code, out)
	}
	otherFile := filepath.Join(t.TempDir(), "other.kek")
	out, code = runHerald(t, nil, "serve", "--addr", "127.0.0.1:0", "--data-dir", dataDir, "--kek-file", otherFile)
	if code == 0 || !strings.Contains(out, want) || !strings.Contains(out, otherFile) {
		t.Fatalf("start with another key file: exit %d\n%s", code, out)
	}
	if _, err := os.Stat(otherFile); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the key file made for a refused start was kept: %v", err)
	}
	// The right key still opens the data.
	startHerald(t, dataDir)
}

// TestKEKRotate rotates the key-encryption key of a stopped Herald:
// afterwards the secrets work under the new key, and the old key no
// longer opens the data.
func TestKEKRotate(t *testing.T) {
	t.Parallel()
	rec, hook := newHookRecorder(t)
	dataDir := filepath.Join(t.TempDir(), "data")
	s := startHerald(t, dataDir, "--webhook-allow-cidrs", "127.0.0.0/8")
	var created struct{ ID, Secret string }
	apiJSON(t, "POST", s.base+"/_herald/v1/endpoints", `{"url":"`+hook+`","headers":{"X-Receiver-Key":"rk-1"}}`, http.StatusCreated, &created)
	createSubscription(t, s.base, "/jobs/*", "sub-1", hook)

	kekFile := filepath.Join(dataDir, "herald.kek")
	oldFile, err := os.ReadFile(kekFile)
	if err != nil {
		t.Fatal(err)
	}
	// Not while Herald runs: the file is left as it was.
	if out, code := runHerald(t, nil, "kek", "rotate", "--data-dir", dataDir); code == 0 || !strings.Contains(out, "is Herald stopped?") {
		t.Fatalf("rotate while Herald runs: exit %d\n%s", code, out)
	}
	if now, err := os.ReadFile(kekFile); err != nil || !bytes.Equal(now, oldFile) {
		t.Fatalf("a refused rotation changed the key file: %v", err)
	}
	if err := s.terminate(30 * time.Second); err != nil {
		t.Fatal(err)
	}

	out, code := runHerald(t, nil, "kek", "rotate", "--data-dir", dataDir)
	// The endpoint's secret and headers, the subscription's secret, the
	// token key, the reserved subscription API's webhook signing key.
	if code != 0 || !strings.Contains(out, "5 secrets re-encrypted") {
		t.Fatalf("rotate: exit %d\n%s", code, out)
	}
	newFile, err := os.ReadFile(kekFile)
	if err != nil {
		t.Fatal(err)
	}
	oldKey, newKey := keyLines(oldFile), keyLines(newFile)
	if len(oldKey) != 1 || len(newKey) != 1 || oldKey[0] == newKey[0] {
		t.Fatalf("key file before %q, after %q: want one new key", oldKey, newKey)
	}
	if info, err := os.Stat(kekFile); err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("rotated key file: %v, %v", info.Mode(), err)
	}

	s = startHerald(t, dataDir, "--webhook-allow-cidrs", "127.0.0.0/8")
	checkTestEvent(t, s.base, created.ID, rec, created.Secret, "X-Receiver-Key", "rk-1")
	if err := s.terminate(30 * time.Second); err != nil {
		t.Fatal(err)
	}
	out, code = runHerald(t, []string{"HERALD_KEK=" + oldKey[0]}, "serve", "--addr", "127.0.0.1:0", "--data-dir", dataDir)
	if code == 0 || !strings.Contains(out, "does not match the one this data was written with") {
		t.Fatalf("start with the retired key: exit %d\n%s", code, out)
	}
}

// keyLines returns the key entries of a key file.
func keyLines(file []byte) []string {
	var out []string
	for line := range strings.SplitSeq(string(file), "\n") {
		if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "#") {
			out = append(out, line)
		}
	}
	return out
}

// TestDataFilesAreOwnerOnly: the data directory Herald creates is 0700,
// and the database, its WAL and shared-memory files, the lock file and
// the key-encryption key file are 0600.
func TestDataFilesAreOwnerOnly(t *testing.T) {
	t.Parallel()
	_, hook := newHookRecorder(t)
	dataDir := filepath.Join(t.TempDir(), "data")
	s := startHerald(t, dataDir, "--webhook-allow-cidrs", "127.0.0.0/8")
	apiJSON(t, "POST", s.base+"/_herald/v1/endpoints", `{"url":"`+hook+`"}`, http.StatusCreated, nil)
	if info, err := os.Stat(dataDir); err != nil || info.Mode().Perm() != 0o700 {
		t.Fatalf("data directory: %v, %v; want mode 0700", info.Mode(), err)
	}
	for _, name := range []string{"herald.db", "herald.db-wal", "herald.db-shm", "LOCK", "herald.kek"} {
		info, err := os.Stat(filepath.Join(dataDir, name))
		if err != nil {
			t.Fatal(err)
		}
		if perm := info.Mode().Perm(); perm != 0o600 {
			t.Errorf("%s has mode %04o, want 0600", name, perm)
		}
	}
}

// TestHeaderValuesAreWriteOnly: the endpoint API shows custom header
// names with masked values in every response, while deliveries carry the
// real values; a masked value patched back keeps the stored one.
func TestHeaderValuesAreWriteOnly(t *testing.T) {
	t.Parallel()
	rec, hook := newHookRecorder(t)
	s := startHerald(t, t.TempDir(), "--webhook-allow-cidrs", "127.0.0.0/8")
	const value = "Bearer write-only-credential"
	type view struct {
		ID      string
		Secret  string
		Headers map[string]string
	}
	masked := func(what string, v view, names ...string) {
		t.Helper()
		if len(v.Headers) != len(names) {
			t.Fatalf("%s: headers %v, want %v", what, v.Headers, names)
		}
		for _, n := range names {
			if v.Headers[n] != "***" {
				t.Fatalf("%s: headers %v, want %s masked", what, v.Headers, n)
			}
		}
	}
	var created view
	body := apiJSON(t, "POST", s.base+"/_herald/v1/endpoints", `{"url":"`+hook+`","headers":{"Authorization":"`+value+`"}}`, http.StatusCreated, &created)
	masked("create", created, "Authorization")
	var got view
	body += apiJSON(t, "GET", s.base+"/_herald/v1/endpoints/"+created.ID, "", http.StatusOK, &got)
	masked("get", got, "Authorization")
	var list struct{ Data []view }
	body += apiJSON(t, "GET", s.base+"/_herald/v1/endpoints", "", http.StatusOK, &list)
	if len(list.Data) != 1 {
		t.Fatalf("list %+v", list)
	}
	masked("list", list.Data[0], "Authorization")
	var patched view
	body += apiJSON(t, "PATCH", s.base+"/_herald/v1/endpoints/"+created.ID, `{"description":"d"}`, http.StatusOK, &patched)
	masked("patch", patched, "Authorization")
	// A client that sends back what it read, with a header added.
	body += apiJSON(t, "PATCH", s.base+"/_herald/v1/endpoints/"+created.ID,
		`{"headers":{"Authorization":"***","X-Added":"added-value"}}`, http.StatusOK, &patched)
	masked("patch of the headers", patched, "Authorization", "X-Added")
	var rotated view
	body += apiJSON(t, "POST", s.base+"/_herald/v1/endpoints/"+created.ID+"/rotate-secret", "", http.StatusOK, &rotated)
	masked("rotate-secret", rotated, "Authorization", "X-Added")
	if strings.Contains(body, value) || strings.Contains(body, "added-value") {
		t.Fatalf("a response shows a header value:\n%s", body)
	}
	// The secret is still shown on create and rotation, as before.
	if !strings.HasPrefix(created.Secret, "whsec_") || !strings.HasPrefix(rotated.Secret, "whsec_") || got.Secret != "" {
		t.Fatalf("secret shown: create %q, rotate %q, get %q", created.Secret, rotated.Secret, got.Secret)
	}
	checkTestEvent(t, s.base, created.ID, rec, rotated.Secret, "Authorization", value)
	if h := rec.last(t).header.Get("X-Added"); h != "added-value" {
		t.Fatalf("X-Added = %q", h)
	}
}
