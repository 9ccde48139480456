package sqlite

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/heraldstreams/herald/internal/secretbox"
	"github.com/heraldstreams/herald/store"
)

var secretsT0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func newKey(t *testing.T, id string) secretbox.Key {
	t.Helper()
	k, err := secretbox.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	k.ID = id
	return k
}

func newBox(t *testing.T, keys ...secretbox.Key) *secretbox.Box {
	t.Helper()
	b, err := secretbox.New(keys)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// secretsFixture are the secrets writeSecrets stores; each is a string
// that must not appear in the database files.
type secretsFixture struct {
	endpointSecret, previousSecret, headerValue, subSecret string
	tokenKey                                               []byte
}

func newFixture() secretsFixture {
	return secretsFixture{
		endpointSecret: "whsec_CurrentSigningSecretValue01",
		previousSecret: "whsec_PreviousSigningSecretValue2",
		headerValue:    "Bearer receiver-credential-3",
		subSecret:      "whsec_SubscriptionSecretValue0004",
		tokenKey:       []byte("token-key-secret-bytes-0123456789"),
	}
}

func writeSecrets(t *testing.T, s *Store, f secretsFixture) {
	t.Helper()
	ctx := context.Background()
	ep := store.Endpoint{ID: "ep_1", URL: "https://example.com/hook", Ordering: "none", Active: true,
		Headers: map[string]string{"Authorization": f.headerValue}, Secret: f.endpointSecret,
		PreviousSecret: f.previousSecret, PreviousSecretUntil: secretsT0.Add(time.Hour)}
	if _, err := s.EndpointCreate(ctx, &store.EndpointCreateParams{Endpoint: ep, Now: secretsT0}); err != nil {
		t.Fatal(err)
	}
	sub := store.Subscription{ID: "sub_1", Pattern: "/a/*", Webhook: "https://example.com/wake", Secret: f.subSecret}
	if _, err := s.SubscriptionCreate(ctx, &store.SubscriptionCreateParams{Subscription: sub, Prefix: "/a/", Now: secretsT0}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.TokenKeyInit(ctx, &store.TokenKeyInitParams{Keys: []store.TokenKey{{ID: "k1", Secret: f.tokenKey}}, Now: secretsT0}); err != nil {
		t.Fatal(err)
	}
}

// checkSecrets reads every secret back through the store.
func checkSecrets(t *testing.T, s *Store, f secretsFixture) {
	t.Helper()
	ctx := context.Background()
	ep, err := s.EndpointGet(ctx, "ep_1")
	if err != nil || ep.Secret != f.endpointSecret || ep.PreviousSecret != f.previousSecret ||
		!reflect.DeepEqual(ep.Headers, map[string]string{"Authorization": f.headerValue}) {
		t.Fatalf("endpoint read back as %+v, %v", ep, err)
	}
	eps, err := s.EndpointList(ctx, &store.EndpointListParams{})
	if err != nil || len(eps) != 1 || eps[0].Secret != f.endpointSecret {
		t.Fatalf("endpoint list %+v, %v", eps, err)
	}
	sub, err := s.SubscriptionGet(ctx, "sub_1")
	if err != nil || sub.Secret != f.subSecret {
		t.Fatalf("subscription read back as %+v, %v", sub, err)
	}
	keys, err := s.TokenKeyInit(ctx, &store.TokenKeyInitParams{Keys: []store.TokenKey{{ID: "other", Secret: []byte("x")}}, Now: secretsT0})
	if err != nil || len(keys) != 1 || keys[0].ID != "k1" || !bytes.Equal(keys[0].Secret, f.tokenKey) {
		t.Fatalf("token keys read back as %v, %v", keys, err)
	}
}

// leakedSecrets returns the secrets found in the bytes of the database
// files of dir.
func leakedSecrets(t *testing.T, dir string, f secretsFixture) []string {
	t.Helper()
	var found []string
	for _, name := range []string{"herald.db", "herald.db-wal"} {
		data, err := os.ReadFile(filepath.Join(dir, name))
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		tokenKey := base64.RawURLEncoding.EncodeToString(f.tokenKey)
		for _, secret := range []string{f.endpointSecret, f.previousSecret, f.headerValue, f.subSecret, string(f.tokenKey), tokenKey} {
			if bytes.Contains(data, []byte(secret)) {
				found = append(found, name+": "+secret)
			}
		}
	}
	return found
}

func TestSecretsAreEncryptedAtRest(t *testing.T) {
	dir := t.TempDir()
	box := newBox(t, newKey(t, "k1"))
	f := newFixture()
	s, err := Open(context.Background(), Config{Dir: dir, Box: box})
	if err != nil {
		t.Fatal(err)
	}
	writeSecrets(t, s, f)
	checkSecrets(t, s, f)
	// While the store runs (the WAL holds the writes) and after it closed.
	if leaked := leakedSecrets(t, dir, f); len(leaked) > 0 {
		t.Fatalf("secrets in the database files: %v", leaked)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if leaked := leakedSecrets(t, dir, f); len(leaked) > 0 {
		t.Fatalf("secrets in the database files after close: %v", leaked)
	}
	checkSecrets(t, openStore(t, Config{Dir: dir, Box: box}), f)
}

func TestPlaintextSecretsAreEncryptedAtTheFirstOpenWithAKey(t *testing.T) {
	dir := t.TempDir()
	f := newFixture()
	plain, err := Open(context.Background(), Config{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	writeSecrets(t, plain, f)
	if err := plain.Close(); err != nil {
		t.Fatal(err)
	}
	if leaked := leakedSecrets(t, dir, f); len(leaked) != 5 {
		t.Fatalf("a store without a key holds %v in plaintext, want all 5 secrets (the test would prove nothing)", leaked)
	}

	box := newBox(t, newKey(t, "k1"))
	s, err := Open(context.Background(), Config{Dir: dir, Box: box})
	if err != nil {
		t.Fatal(err)
	}
	// secret, previous_secret, headers, the subscription's, the token key.
	if st := s.SecretStats(); st.Sealed != 5 || st.Rewrapped != 0 || st.KeyID != "k1" {
		t.Fatalf("stats %+v, want 5 values sealed", st)
	}
	checkSecrets(t, s, f)
	if leaked := leakedSecrets(t, dir, f); len(leaked) > 0 {
		t.Fatalf("plaintext left in the database files after encrypting: %v", leaked)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// Sealed once: the next open has nothing to do, and without the key
	// the store does not open.
	again := openStore(t, Config{Dir: dir, Box: box})
	if st := again.SecretStats(); st.Sealed != 0 || st.Rewrapped != 0 {
		t.Fatalf("second open stats %+v", st)
	}
	checkSecrets(t, again, f)
}

func TestWrongKeyIsRefusedAtOpen(t *testing.T) {
	dir := t.TempDir()
	k1 := newKey(t, "k1")
	s, err := Open(context.Background(), Config{Dir: dir, Box: newBox(t, k1)})
	if err != nil {
		t.Fatal(err)
	}
	writeSecrets(t, s, newFixture())
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	for name, cfg := range map[string]Config{
		"another key":              {Dir: dir, Box: newBox(t, newKey(t, "k2"))},
		"another key with its id":  {Dir: dir, Box: newBox(t, newKey(t, "k1"))},
		"no key":                   {Dir: dir},
		"another key, then others": {Dir: dir, Box: newBox(t, newKey(t, "k2"), newKey(t, "k3"))},
	} {
		s, err := Open(context.Background(), cfg)
		if err == nil {
			s.Close()
			t.Fatalf("%s: opened", name)
		}
		if !errors.Is(err, secretbox.ErrWrongKey) || !strings.Contains(err.Error(), "does not match the one this data was written with") {
			t.Fatalf("%s: %v, want ErrWrongKey", name, err)
		}
	}
	// The refused opens changed nothing: the right key still opens it.
	checkSecrets(t, openStore(t, Config{Dir: dir, Box: newBox(t, k1)}), newFixture())
}

func TestOpenRewrapsUnderTheNewKey(t *testing.T) {
	dir := t.TempDir()
	f := newFixture()
	oldKey, newKey := newKey(t, "old"), newKey(t, "new")
	s, err := Open(context.Background(), Config{Dir: dir, Box: newBox(t, oldKey)})
	if err != nil {
		t.Fatal(err)
	}
	writeSecrets(t, s, f)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// The new key first: it seals, the old one only opens.
	s, err = Open(context.Background(), Config{Dir: dir, Box: newBox(t, newKey, oldKey)})
	if err != nil {
		t.Fatal(err)
	}
	if st := s.SecretStats(); st.Rewrapped != 5 || st.Sealed != 0 || st.KeyID != "new" {
		t.Fatalf("stats %+v, want 5 values rewrapped", st)
	}
	// Every stored value names the new key.
	for _, c := range secretColumns {
		rows, err := s.reader.Query(`SELECT ` + c.Column + ` FROM ` + c.Table + ` WHERE ` + c.Column + ` != ''`)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var v string
			if err := rows.Scan(&v); err != nil {
				t.Fatal(err)
			}
			if id, err := secretbox.KeyID(v); err != nil || id != "new" {
				t.Errorf("%s.%s sealed with %q, %v", c.Table, c.Column, id, err)
			}
		}
		if err := errors.Join(rows.Err(), rows.Close()); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// The new key alone opens everything; the old one alone nothing.
	if s, err := Open(context.Background(), Config{Dir: dir, Box: newBox(t, oldKey)}); !errors.Is(err, secretbox.ErrWrongKey) {
		if err == nil {
			s.Close()
		}
		t.Fatalf("the retired key: %v, want ErrWrongKey", err)
	}
	checkSecrets(t, openStore(t, Config{Dir: dir, Box: newBox(t, newKey)}), f)
}

func TestTokenKeysAreMadeOnce(t *testing.T) {
	dir := t.TempDir()
	box := newBox(t, newKey(t, "k1"))
	ctx := context.Background()
	s, err := Open(ctx, Config{Dir: dir, Box: box})
	if err != nil {
		t.Fatal(err)
	}
	first := []store.TokenKey{{ID: "a", Secret: []byte("first-signing-key")}, {ID: "b", Secret: []byte("older-key")}}
	got, err := s.TokenKeyInit(ctx, &store.TokenKeyInitParams{Keys: first, Now: secretsT0})
	if err != nil || len(got) != 2 || got[0].ID != "a" || !bytes.Equal(got[1].Secret, first[1].Secret) || !got[0].CreatedAt.Equal(secretsT0) {
		t.Fatalf("first init = %+v, %v", got, err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// A later start (or a second process) offers its own keys and gets
	// the first start's.
	s = openStore(t, Config{Dir: dir, Box: box})
	again, err := s.TokenKeyInit(ctx, &store.TokenKeyInitParams{Keys: []store.TokenKey{{ID: "c", Secret: []byte("late")}}, Now: secretsT0})
	if err != nil || !reflect.DeepEqual(again, got) {
		t.Fatalf("second init = %+v, %v; want %+v", again, err, got)
	}
}

func TestDataFilesAreOwnerOnly(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	s := openStore(t, Config{Dir: dir, Box: newBox(t, newKey(t, "k1"))})
	writeSecrets(t, s, newFixture()) // the WAL has frames
	if info, err := os.Stat(dir); err != nil || info.Mode().Perm() != 0o700 {
		t.Fatalf("data directory: %v, %v; want mode 0700", info.Mode(), err)
	}
	for _, name := range []string{"herald.db", "herald.db-wal", "herald.db-shm", "LOCK"} {
		info, err := os.Stat(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if perm := info.Mode().Perm(); perm != 0o600 {
			t.Errorf("%s has mode %04o, want 0600", name, perm)
		}
	}
}
