package sqlite

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/heraldstreams/herald/internal/secretbox"
	"github.com/heraldstreams/herald/store/storetest"
)

// The secrets-at-rest contract (sealed columns, the key check, rewrapping,
// token keys) is in storetest. What is SQLite's is that no plaintext is
// left in the database files: not in the WAL, nor in the free pages a
// sealed value replaced.

func newBox(t *testing.T, id string) *secretbox.Box {
	t.Helper()
	k, err := secretbox.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	k.ID = id
	b, err := secretbox.New([]secretbox.Key{k})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// leakedSecrets returns the secrets found in the bytes of the database
// files of dir.
func leakedSecrets(t *testing.T, dir string, fx storetest.SecretsFixture) []string {
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
		tokenKey := base64.RawURLEncoding.EncodeToString(fx.TokenKey)
		for _, secret := range append(fx.Plain(), tokenKey) {
			if bytes.Contains(data, []byte(secret)) {
				found = append(found, name+": "+secret)
			}
		}
	}
	return found
}

func TestSecretsAreEncryptedInTheFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	box := newBox(t, "k1")
	fx := storetest.NewSecretsFixture()
	s, err := Open(context.Background(), Config{Dir: dir, Box: box})
	if err != nil {
		t.Fatal(err)
	}
	storetest.WriteSecrets(t, s, fx)
	// While the store runs (the WAL holds the writes) and after it closed.
	if leaked := leakedSecrets(t, dir, fx); len(leaked) > 0 {
		t.Fatalf("secrets in the database files: %v", leaked)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if leaked := leakedSecrets(t, dir, fx); len(leaked) > 0 {
		t.Fatalf("secrets in the database files after close: %v", leaked)
	}
}

func TestEncryptingLeavesNoPlaintextInTheFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	fx := storetest.NewSecretsFixture()
	plain, err := Open(context.Background(), Config{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	storetest.WriteSecrets(t, plain, fx)
	if err := plain.Close(); err != nil {
		t.Fatal(err)
	}
	if leaked := leakedSecrets(t, dir, fx); len(leaked) != 6 {
		t.Fatalf("a store without a key holds %v in plaintext, want all 6 secrets (the test would prove nothing)", leaked)
	}
	s := openStore(t, Config{Dir: dir, Box: newBox(t, "k1")})
	if st := s.SecretStats(); st.Sealed != 8 {
		t.Fatalf("stats %+v, want 8 values sealed", st)
	}
	if leaked := leakedSecrets(t, dir, fx); len(leaked) > 0 {
		t.Fatalf("plaintext left in the database files after encrypting: %v", leaked)
	}
	storetest.CheckSecrets(t, s, fx)
}

func TestDataFilesAreOwnerOnly(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "data")
	s := openStore(t, Config{Dir: dir, Box: newBox(t, "k1")})
	storetest.WriteSecrets(t, s, storetest.NewSecretsFixture()) // the WAL has frames
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
