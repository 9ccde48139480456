package wake

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/heraldstreams/herald/subscription"
)

func fileKey(id string, b byte) subscription.Key {
	return subscription.Key{ID: id, Secret: bytes.Repeat([]byte{b}, 32)}
}

func TestLoadKeyFileRotation(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "keys")
	content := "# rotated\n" + subscription.FormatKey(fileKey("new", 2)) + "\n" + subscription.FormatKey(fileKey("old", 1)) + "\n"
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	keys, err := ReadKeyFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(keys) != 2 || keys[0].ID != "new" {
		t.Errorf("keys %v", keys)
	}
}

func TestLoadKeyFileRefused(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	open := filepath.Join(dir, "open")
	if err := os.WriteFile(open, []byte(subscription.FormatKey(fileKey("k1", 1))), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(open, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadKeyFile(open); !errors.Is(err, subscription.ErrInvalidKey) {
		t.Errorf("world-readable key file: %v", err)
	}
	empty := filepath.Join(dir, "empty")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadKeyFile(empty); !errors.Is(err, subscription.ErrInvalidKey) {
		t.Errorf("empty key file: %v", err)
	}
	if _, err := ReadKeyFile(filepath.Join(dir, "none")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a missing key file: %v", err)
	}
}
