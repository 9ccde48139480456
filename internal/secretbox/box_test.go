package secretbox

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

func mustKey(t *testing.T, id string) Key {
	t.Helper()
	k, err := GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	k.ID = id
	return k
}

func mustBox(t *testing.T, keys ...Key) *Box {
	t.Helper()
	b, err := New(keys)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

var row1 = Binding("endpoints", "ep_1", "secret")

func TestSealOpen(t *testing.T) {
	t.Parallel()
	b := mustBox(t, mustKey(t, "k1"))
	for _, plain := range [][]byte{[]byte("whsec_abc"), {}, bytes.Repeat([]byte{0}, 10000)} {
		sealed, err := b.Seal(plain, row1)
		if err != nil {
			t.Fatal(err)
		}
		if !IsSealed(sealed) || (len(plain) > 3 && strings.Contains(sealed, string(plain))) {
			t.Fatalf("sealed value %q", sealed)
		}
		got, err := b.Open(sealed, row1)
		if err != nil || !bytes.Equal(got, plain) {
			t.Fatalf("open = %q, %v; want %q", got, err, plain)
		}
		if id, err := KeyID(sealed); err != nil || id != "k1" {
			t.Fatalf("KeyID = %q, %v", id, err)
		}
	}
	// Two seals of one value differ (fresh data key and nonces), so equal
	// secrets are not visible as equal in the database.
	a, _ := b.Seal([]byte("same"), row1)
	c, _ := b.Seal([]byte("same"), row1)
	if a == c {
		t.Fatal("two seals of the same value are equal")
	}
}

func TestTamperedValueDoesNotOpen(t *testing.T) {
	t.Parallel()
	b := mustBox(t, mustKey(t, "k1"))
	sealed, err := b.Seal([]byte("whsec_secret"), row1)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := base64.RawURLEncoding.DecodeString(strings.TrimPrefix(sealed, Prefix))
	if err != nil {
		t.Fatal(err)
	}
	// Flip each byte after the key id in turn: nonces, wrapped key, data,
	// tags. Every change is refused.
	for i := 2 + len("k1"); i < len(raw); i++ {
		bad := bytes.Clone(raw)
		bad[i] ^= 0x01
		if _, err := b.Open(Prefix+base64.RawURLEncoding.EncodeToString(bad), row1); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("byte %d flipped: err = %v, want ErrCorrupt", i, err)
		}
	}
	for _, bad := range []string{"", "whsec_plain", Prefix, Prefix + "!!", Prefix + base64.RawURLEncoding.EncodeToString(raw[:20]),
		Prefix + base64.RawURLEncoding.EncodeToString(append([]byte{2}, raw[1:]...))} {
		if _, err := b.Open(bad, row1); !errors.Is(err, ErrCorrupt) {
			t.Errorf("Open(%q) err = %v, want ErrCorrupt", bad, err)
		}
	}
}

func TestValueDoesNotOpenInAnotherRowOrColumn(t *testing.T) {
	t.Parallel()
	b := mustBox(t, mustKey(t, "k1"))
	sealed, err := b.Seal([]byte("whsec_ep1"), row1)
	if err != nil {
		t.Fatal(err)
	}
	for _, other := range []string{
		Binding("endpoints", "ep_2", "secret"),
		Binding("endpoints", "ep_1", "previous_secret"),
		Binding("subscriptions", "ep_1", "secret"),
		// Names that run together the same way still differ.
		Binding("endpoints", "ep_1s", "ecret"),
	} {
		if _, err := b.Open(sealed, other); !errors.Is(err, ErrCorrupt) {
			t.Errorf("opened under %q: err = %v, want ErrCorrupt", other, err)
		}
	}
}

func TestWrongKeyIsNamed(t *testing.T) {
	t.Parallel()
	sealed, err := mustBox(t, mustKey(t, "old")).Seal([]byte("s"), row1)
	if err != nil {
		t.Fatal(err)
	}
	_, err = mustBox(t, mustKey(t, "new")).Open(sealed, row1)
	var unknown *UnknownKeyError
	if !errors.As(err, &unknown) || unknown.ID != "old" {
		t.Fatalf("err = %v, want an UnknownKeyError for old", err)
	}
	if want := `data was encrypted with key "old", which is not configured`; !strings.Contains(err.Error(), want) {
		t.Fatalf("message %q does not say %q", err, want)
	}
	// Another key under the same id is a corrupt value, not a crash or a
	// wrong plaintext.
	if _, err := mustBox(t, mustKey(t, "old")).Open(sealed, row1); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("same id, other key: %v, want ErrCorrupt", err)
	}
}

func TestRotation(t *testing.T) {
	t.Parallel()
	oldKey, newKey := mustKey(t, "k1"), mustKey(t, "k2")
	before := mustBox(t, oldKey)
	sealed, err := before.Seal([]byte("whsec_rotate"), row1)
	if err != nil {
		t.Fatal(err)
	}
	after := mustBox(t, newKey, oldKey) // the new key first: it seals
	if got, err := after.Open(sealed, row1); err != nil || string(got) != "whsec_rotate" {
		t.Fatalf("old value after rotation: %q, %v", got, err)
	}
	fresh, err := after.Seal([]byte("x"), row1)
	if err != nil {
		t.Fatal(err)
	}
	if id, _ := KeyID(fresh); id != "k2" || after.CurrentKeyID() != "k2" {
		t.Fatalf("new values sealed with %q, want k2", id)
	}
	moved, changed, err := after.Rewrap(sealed, row1)
	if err != nil || !changed {
		t.Fatalf("rewrap: changed %v, %v", changed, err)
	}
	if id, _ := KeyID(moved); id != "k2" {
		t.Fatalf("rewrapped under %q", id)
	}
	if same, changed, err := after.Rewrap(moved, row1); err != nil || changed || same != moved {
		t.Fatalf("rewrap of a current value: changed %v, %v", changed, err)
	}
	if _, _, err := after.Rewrap(sealed, Binding("endpoints", "ep_2", "secret")); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("rewrap under another binding: %v", err)
	}
	// Once the old key is dropped, only rewrapped values open.
	final := mustBox(t, newKey)
	if got, err := final.Open(moved, row1); err != nil || string(got) != "whsec_rotate" {
		t.Fatalf("rewrapped value with the new key alone: %q, %v", got, err)
	}
	var unknown *UnknownKeyError
	if _, err := final.Open(sealed, row1); !errors.As(err, &unknown) {
		t.Fatalf("old value without the old key: %v", err)
	}
}

func TestConcurrentUse(t *testing.T) {
	t.Parallel()
	b := mustBox(t, mustKey(t, "k1"))
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for i := range 8 {
		wg.Go(func() {
			for range 50 {
				s, err := b.Seal([]byte{byte(i)}, row1)
				if err == nil {
					var p []byte
					if p, err = b.Open(s, row1); err == nil && (len(p) != 1 || p[0] != byte(i)) {
						err = errors.New("wrong plaintext")
					}
				}
				if err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

func TestParseKeys(t *testing.T) {
	t.Parallel()
	k := mustKey(t, "a")
	k2 := mustKey(t, "b")
	keys, err := ParseKeys("# comment\n" + FormatKey(k) + "\n\n" + FormatKey(k2))
	if err != nil || len(keys) != 2 || keys[0].ID != "a" || !bytes.Equal(keys[1].Secret, k2.Secret) {
		t.Fatalf("keys = %v, %v", keys, err)
	}
	std := "c:" + base64.StdEncoding.EncodeToString(k.Secret)
	if keys, err := ParseKeys(std + ", " + FormatKey(k2)); err != nil || len(keys) != 2 {
		t.Fatalf("standard base64 and commas: %v, %v", keys, err)
	}
	for _, bad := range []string{
		"", "# only a comment", "nocolon", "a:!!!", "a:" + base64.RawURLEncoding.EncodeToString([]byte("short")),
		":" + base64.RawURLEncoding.EncodeToString(k.Secret), "bad id:" + base64.RawURLEncoding.EncodeToString(k.Secret),
		FormatKey(k) + "\n" + FormatKey(k),
	} {
		if _, err := ParseKeys(bad); !errors.Is(err, ErrInvalidKey) {
			t.Errorf("ParseKeys(%q) = %v, want ErrInvalidKey", bad, err)
		}
	}
	if _, err := New(nil); !errors.Is(err, ErrInvalidKey) {
		t.Errorf("New(nil) = %v", err)
	}
	if _, err := New([]Key{k, k}); !errors.Is(err, ErrInvalidKey) {
		t.Errorf("New with a duplicate id = %v", err)
	}
	if strings.Contains(k.String(), base64.RawURLEncoding.EncodeToString(k.Secret)) {
		t.Error("String shows the secret")
	}
}

func TestKeyFileIsCreatedOnceInTheDataDir(t *testing.T) {
	t.Parallel()
	dataDir := filepath.Join(t.TempDir(), "data")
	keys, err := Load(LoadConfig{DataDir: dataDir, Rand: rand.Reader})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dataDir, DefaultFileName)
	info, err := os.Stat(path)
	if err != nil {
		t.Fatalf("no key file in the data directory: %v", err)
	}
	if perm := info.Mode().Perm(); perm != 0o600 {
		t.Fatalf("key file mode %04o, want 0600", perm)
	}
	if info, err := os.Stat(dataDir); err != nil || info.Mode().Perm() != 0o700 {
		t.Fatalf("data directory created with %v, %v; want mode 0700", info.Mode(), err)
	}
	// A second start reads the same key: values sealed before still open.
	again, err := Load(LoadConfig{DataDir: dataDir, Rand: rand.Reader})
	if err != nil || len(again) != 1 || again[0].ID != keys[0].ID || !bytes.Equal(again[0].Secret, keys[0].Secret) {
		t.Fatalf("second load = %v, %v; want the first key", again, err)
	}
	entries, err := os.ReadDir(dataDir)
	if err != nil || len(entries) != 1 {
		t.Fatalf("the data directory holds %v, %v; want the key file alone (no temporary file left)", entries, err)
	}

	// A configured file is used instead; keys given directly win over it.
	own := filepath.Join(t.TempDir(), "kek")
	fileKeys, err := Load(LoadConfig{File: own, DataDir: dataDir, Rand: rand.Reader})
	if err != nil || fileKeys[0].ID == keys[0].ID && bytes.Equal(fileKeys[0].Secret, keys[0].Secret) {
		t.Fatalf("--kek-file: %v, %v", fileKeys, err)
	}
	given := mustKey(t, "env")
	envKeys, err := Load(LoadConfig{Keys: FormatKey(given), File: own, DataDir: dataDir, Rand: rand.Reader})
	if err != nil || len(envKeys) != 1 || envKeys[0].ID != "env" {
		t.Fatalf("HERALD_KEK: %v, %v", envKeys, err)
	}

	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(LoadConfig{DataDir: dataDir, Rand: rand.Reader}); !errors.Is(err, ErrInvalidKey) {
		t.Fatalf("a world-readable key file: %v, want ErrInvalidKey", err)
	}
}

func TestWriteFileReplacesTheKeys(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "kek")
	old, err := LoadOrCreateFile(path, rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	next := mustKey(t, "next")
	if err := WriteFile(path, []Key{next, old[0]}); err != nil {
		t.Fatal(err)
	}
	keys, err := LoadOrCreateFile(path, rand.Reader)
	if err != nil || len(keys) != 2 || keys[0].ID != "next" || !bytes.Equal(keys[1].Secret, old[0].Secret) {
		t.Fatalf("after WriteFile: %v, %v", keys, err)
	}
	if info, err := os.Stat(path); err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("rewritten key file: %v, %v; want mode 0600", info.Mode(), err)
	}
	if entries, err := os.ReadDir(dir); err != nil || len(entries) != 1 {
		t.Fatalf("directory holds %v, %v; want the key file alone", entries, err)
	}
	if err := WriteFile(path, nil); !errors.Is(err, ErrInvalidKey) {
		t.Fatalf("WriteFile with no keys: %v", err)
	}
	if keys, err := LoadOrCreateFile(path, rand.Reader); err != nil || len(keys) != 2 {
		t.Fatalf("a refused WriteFile changed the file: %v, %v", keys, err)
	}
}

func TestCheckTellsAWrongKey(t *testing.T) {
	t.Parallel()
	k1 := mustKey(t, "k1")
	check, err := mustBox(t, k1).SealCheck()
	if err != nil {
		t.Fatal(err)
	}
	if err := mustBox(t, k1).VerifyCheck(check); err != nil {
		t.Fatalf("the right key: %v", err)
	}
	if err := mustBox(t, mustKey(t, "k2"), k1).VerifyCheck(check); err != nil {
		t.Fatalf("the right key as an old key: %v", err)
	}
	err = mustBox(t, mustKey(t, "k2")).VerifyCheck(check)
	if !errors.Is(err, ErrWrongKey) || !strings.Contains(err.Error(), `needs key "k1"`) {
		t.Fatalf("another key: %v", err)
	}
	if err := mustBox(t, mustKey(t, "k1")).VerifyCheck(check); !errors.Is(err, ErrWrongKey) {
		t.Fatalf("another key under the same id: %v", err)
	}
	if err := mustBox(t, k1).VerifyCheck("plain"); errors.Is(err, ErrWrongKey) || err == nil {
		t.Fatalf("a corrupt check: %v", err)
	}
	// A secret is not a check value: the bindings differ.
	secret, err := mustBox(t, k1).Seal(checkPlaintext, row1)
	if err != nil {
		t.Fatal(err)
	}
	if err := mustBox(t, k1).VerifyCheck(secret); err == nil {
		t.Fatal("a value sealed for a row opened as the check")
	}
}

func TestSealText(t *testing.T) {
	t.Parallel()
	b := mustBox(t, mustKey(t, "k1"))
	sealed, err := b.SealText("whsec_x", "endpoints", "ep_1", "secret")
	if err != nil || !IsSealed(sealed) {
		t.Fatalf("SealText = %q, %v", sealed, err)
	}
	if got, err := b.OpenText(sealed, "endpoints", "ep_1", "secret"); err != nil || got != "whsec_x" {
		t.Fatalf("OpenText = %q, %v", got, err)
	}
	if _, err := b.OpenText(sealed, "endpoints", "ep_2", "secret"); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("another row: %v", err)
	}
	// No secret stays no secret; a plaintext is refused.
	if s, err := b.SealText("", "endpoints", "ep_1", "previous_secret"); s != "" || err != nil {
		t.Fatalf("SealText of nothing = %q, %v", s, err)
	}
	if s, err := b.OpenText("", "endpoints", "ep_1", "previous_secret"); s != "" || err != nil {
		t.Fatalf("OpenText of nothing = %q, %v", s, err)
	}
	if _, err := b.OpenText("whsec_plain", "endpoints", "ep_1", "secret"); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("a plaintext: %v", err)
	}
}

func FuzzOpen(f *testing.F) {
	key := Key{ID: "k1", Secret: bytes.Repeat([]byte{1}, keySize)}
	b, err := New([]Key{key})
	if err != nil {
		f.Fatal(err)
	}
	sealed, err := b.Seal([]byte("seed"), row1)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(sealed)
	f.Add(Prefix + "AQJrMQ")
	f.Add("whsec_x")
	f.Fuzz(func(t *testing.T, v string) {
		// Only the value this key sealed opens; the fuzzer cannot forge
		// or alter one.
		if plain, err := b.Open(v, row1); err == nil && v != sealed {
			t.Fatalf("forged value %q opened to %q", v, plain)
		}
	})
}
