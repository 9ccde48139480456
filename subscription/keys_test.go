package subscription

import (
	"bytes"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestParseKeys(t *testing.T) {
	a, b := testKey("k1", 1), testKey("k2", 2)
	for name, text := range map[string]string{
		"one per line": FormatKey(a) + "\n" + FormatKey(b) + "\n",
		"comma list":   FormatKey(a) + ", " + FormatKey(b),
		"comments":     "# keys\n\n  " + FormatKey(a) + "  \n# old:\n" + FormatKey(b),
		"std base64":   "k1:AQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQE=\nk2:AgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgI=",
	} {
		keys, err := ParseKeys(text)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if !reflect.DeepEqual(keys, []Key{a, b}) {
			t.Errorf("%s: %v", name, keys)
		}
	}
	for name, text := range map[string]string{
		"empty":         "",
		"only comments": "# nothing\n",
		"no colon":      "k1",
		"not base64":    "k1:!!!!",
		"short":         "k1:" + strings.Repeat("A", 40),
		"bad id":        "k 1:" + FormatKey(a)[3:],
		"duplicate":     FormatKey(a) + "," + FormatKey(a),
	} {
		if _, err := ParseKeys(text); !errors.Is(err, ErrInvalidKey) {
			t.Errorf("%s: error = %v", name, err)
		}
	}
}

func TestKeyStringHidesSecret(t *testing.T) {
	k := testKey("k1", 'A')
	for _, s := range []string{k.String(), fmt.Sprint(k), fmt.Sprintf("%v", []Key{k})} {
		if strings.Contains(s, "AAAA") || !strings.Contains(s, "k1") {
			t.Errorf("%q", s)
		}
	}
}

func TestLoadOrCreateKeyFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "data", "callback-keys")
	keys, err := LoadOrCreateKeyFile(path, rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	if len(keys) != 1 || len(keys[0].Secret) != 32 {
		t.Fatalf("created keys %v", keys)
	}
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if info.Mode().Perm() != 0o600 {
		t.Errorf("key file mode %04o, want 0600", info.Mode().Perm())
	}
	// A restart reads the same key, and does not make a new one.
	again, err := LoadOrCreateKeyFile(path, failingReader{})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(again, keys) {
		t.Errorf("second start read %v, first made %v", again, keys)
	}
	// Tokens of the first start verify after the restart.
	k1, err := NewKeyring(keys, nil)
	if err != nil {
		t.Fatal(err)
	}
	k2, err := NewKeyring(again, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := k2.Verify(mustIssue(t, k1, consumerA, 1), consumerA, t0); err != nil {
		t.Errorf("token of the first start after a restart: %v", err)
	}
	// No temporary file is left behind.
	entries, err := os.ReadDir(filepath.Dir(path))
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 {
		t.Errorf("directory holds %d files, want only the key file", len(entries))
	}
}

func TestLoadKeyFileRotation(t *testing.T) {
	path := filepath.Join(t.TempDir(), "keys")
	content := "# rotated\n" + FormatKey(testKey("new", 2)) + "\n" + FormatKey(testKey("old", 1)) + "\n"
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	keys, err := LoadOrCreateKeyFile(path, failingReader{})
	if err != nil {
		t.Fatal(err)
	}
	if len(keys) != 2 || keys[0].ID != "new" {
		t.Errorf("keys %v", keys)
	}
}

func TestLoadKeyFileRefused(t *testing.T) {
	dir := t.TempDir()
	open := filepath.Join(dir, "open")
	if err := os.WriteFile(open, []byte(FormatKey(testKey("k1", 1))), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(open, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadOrCreateKeyFile(open, rand.Reader); !errors.Is(err, ErrInvalidKey) {
		t.Errorf("world-readable key file: %v", err)
	}
	empty := filepath.Join(dir, "empty")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadOrCreateKeyFile(empty, rand.Reader); !errors.Is(err, ErrInvalidKey) {
		t.Errorf("empty key file: %v", err)
	}
	if _, err := LoadOrCreateKeyFile(filepath.Join(dir, "new"), failingReader{}); err == nil {
		t.Error("a key file was created without entropy")
	}
	if _, err := os.Stat(filepath.Join(dir, "new")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a failed creation left a key file: %v", err)
	}
}

func TestGenerateKey(t *testing.T) {
	a, err := GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	b, err := GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	if a.ID == b.ID || bytes.Equal(a.Secret, b.Secret) {
		t.Error("two generated keys are equal")
	}
	keys, err := ParseKeys(FormatKey(a))
	if err != nil || !reflect.DeepEqual(keys, []Key{a}) {
		t.Errorf("FormatKey does not round-trip: %v %v", keys, err)
	}
}

func FuzzParseKeys(f *testing.F) {
	f.Add(FormatKey(testKey("k1", 1)))
	f.Add("# c\nk1:AQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQE=, k2:AgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgI")
	f.Add("k1:")
	f.Fuzz(func(t *testing.T, text string) {
		keys, err := ParseKeys(text)
		if err != nil {
			if !errors.Is(err, ErrInvalidKey) {
				t.Fatalf("error %v is not ErrInvalidKey", err)
			}
			return
		}
		if _, err := NewKeyring(keys, nil); err != nil {
			t.Fatalf("parsed keys make no keyring: %v", err)
		}
		var lines []string
		for _, k := range keys {
			lines = append(lines, FormatKey(k))
		}
		again, err := ParseKeys(strings.Join(lines, "\n"))
		if err != nil || !reflect.DeepEqual(again, keys) {
			t.Fatalf("keys do not round-trip: %v %v", again, err)
		}
	})
}
