package privfile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestReadRefusesFilesOthersMayAccess(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "secret")
	if err := os.WriteFile(path, []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if b, err := Read(path, 64); err != nil || string(b) != "s3cret\n" {
		t.Fatalf("a 0600 file: %q, %v", b, err)
	}
	for _, mode := range []fs.FileMode{0o640, 0o604, 0o620, 0o602, 0o644, 0o666, 0o610} {
		if err := os.Chmod(path, mode); err != nil {
			t.Fatal(err)
		}
		_, err := Read(path, 64)
		if !errors.Is(err, ErrExposed) {
			t.Fatalf("mode %04o: %v, want ErrExposed", mode, err)
		}
		// The error names the file and the fix.
		if msg := err.Error(); !strings.Contains(msg, path) || !strings.Contains(msg, "chmod 600 "+path) {
			t.Errorf("mode %04o: %q does not name the file and the chmod", mode, msg)
		}
	}
	if err := os.Chmod(path, 0o400); err != nil {
		t.Fatal(err)
	}
	if _, err := Read(path, 64); err != nil {
		t.Errorf("a 0400 file: %v", err)
	}
	if _, err := Read(path, 3); !errors.Is(err, ErrTooLarge) {
		t.Errorf("a file over the limit: %v, want ErrTooLarge", err)
	}
	if _, err := Read(filepath.Join(dir, "none"), 64); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a missing file: %v, want fs.ErrNotExist", err)
	}
}

func TestMakeDirCreatesOrTightens(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	fresh := filepath.Join(base, "a", "data")
	if wider, err := MakeDir(fresh); err != nil || wider != 0 {
		t.Fatalf("a new directory: %04o, %v", wider, err)
	}
	if perm := mode(t, fresh); perm&0o077 != 0 {
		t.Errorf("a new directory is %04o, want 0700", perm)
	}
	open := filepath.Join(base, "open")
	if err := os.Mkdir(open, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(open, 0o755); err != nil {
		t.Fatal(err)
	}
	if wider, err := MakeDir(open); err != nil || wider != 0o755 {
		t.Fatalf("a 0755 directory: %04o, %v, want 0755 reported", wider, err)
	}
	if perm := mode(t, open); perm != 0o700 {
		t.Errorf("a 0755 directory became %04o, want 0700", perm)
	}
	// A private one is left as it is.
	if wider, err := MakeDir(open); err != nil || wider != 0 {
		t.Fatalf("a 0700 directory: %04o, %v", wider, err)
	}
	file := filepath.Join(base, "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := MakeDir(file); err == nil {
		t.Error("a file was taken for a directory")
	}
}

func mode(t *testing.T, path string) fs.FileMode {
	t.Helper()
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return info.Mode().Perm()
}
