// Package privfile reads the files that hold Herald's secrets (the
// key-encryption key, the admin key, a JWT secret) and keeps its data
// directory private, with one rule for all of them: nothing that holds a
// secret may be readable or writable by the file's group or by others.
package privfile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
)

// ErrExposed is wrapped by Read's error for a file its group or other
// users may read or write.
var ErrExposed = errors.New("accessible to other users")

// ErrTooLarge is wrapped by Read's error for a file over its size limit.
var ErrTooLarge = errors.New("too large")

// exposedBits are the permission bits that let anyone but the owner in.
const exposedBits fs.FileMode = 0o077

// Read returns the contents of the secret file at path, at most max
// bytes. A file its group or other users may read or write is refused
// (ErrExposed, with the chmod that fixes it), as is a larger one
// (ErrTooLarge); a missing file is an error wrapping fs.ErrNotExist. The
// mode is checked on the opened file, so a file swapped in between is
// never read unchecked.
func Read(path string, max int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	data, err := readOpen(f, path, max)
	if cerr := f.Close(); err == nil && cerr != nil {
		return nil, cerr
	}
	return data, err
}

// ReadKeyFile is Read for a file of keys (at most 1 MiB) that a package
// pkg reads: a missing file is an error wrapping fs.ErrNotExist, an
// exposed or oversized one wraps invalid (the package's error for a bad
// key), and any other failure says pkg could not read it.
func ReadKeyFile(path, pkg string, invalid error) ([]byte, error) {
	data, err := Read(path, 1<<20)
	switch {
	case err == nil, errors.Is(err, fs.ErrNotExist):
		return data, err
	case errors.Is(err, ErrExposed), errors.Is(err, ErrTooLarge):
		return nil, fmt.Errorf("%w: key file %w", invalid, err)
	}
	return nil, fmt.Errorf("%s: reading the key file: %w", pkg, err)
}

func readOpen(f *os.File, path string, max int64) ([]byte, error) {
	info, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if err := Check(path, info.Mode()); err != nil {
		return nil, err
	}
	data, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > max {
		return nil, fmt.Errorf("%s is larger than %d bytes: %w", path, max, ErrTooLarge)
	}
	return data, nil
}

// Check returns an error wrapping ErrExposed, naming path and the fix,
// when mode lets the file's group or other users read or write it.
func Check(path string, mode fs.FileMode) error {
	if perm := mode.Perm(); perm&exposedBits != 0 {
		return fmt.Errorf("%s is %w (mode %04o): chmod 600 %s", path, ErrExposed, perm, path)
	}
	return nil
}

// MakeDir creates the directory dir with mode 0700 (and any missing
// parent), or makes an existing one that its group or other users may
// enter, read or write 0700. It returns the mode it found when it
// tightened one (zero otherwise), so that the caller can log it: the
// directory holds the database and, by default, the key-encryption key,
// and nothing in it is meant for anyone but Herald's user.
func MakeDir(dir string) (fs.FileMode, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return 0, err
	}
	info, err := os.Stat(dir)
	if err != nil {
		return 0, err
	}
	if !info.IsDir() {
		return 0, fmt.Errorf("%s is not a directory", dir)
	}
	perm := info.Mode().Perm()
	if perm&exposedBits == 0 {
		return 0, nil
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return 0, fmt.Errorf("%s is accessible to other users (mode %04o) and could not be made private: %w; chmod 700 %s", dir, perm, err, dir)
	}
	return perm, nil
}
