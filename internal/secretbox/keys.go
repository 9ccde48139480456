package secretbox

import (
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/heraldstreams/herald/internal/privfile"
)

// DefaultFileName is the KEK file's name when no path is configured.
const DefaultFileName = "herald.kek"

// maxKeyIDLength bounds a KEK id (it is one byte of length in the header).
const maxKeyIDLength = 64

// Key is one key-encryption key: an id that sealed values name, and 32
// bytes of AES-256 key.
type Key struct {
	ID     string
	Secret []byte
}

// String names the key without its secret, so a key printed by mistake
// does not leak.
func (k Key) String() string { return "key-encryption key " + k.ID }

func (k Key) validate() error {
	if k.ID == "" || len(k.ID) > maxKeyIDLength {
		return fmt.Errorf("%w: key id must be 1 to %d characters", ErrInvalidKey, maxKeyIDLength)
	}
	for i := 0; i < len(k.ID); i++ {
		c := k.ID[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
			return fmt.Errorf("%w: key id %q may only hold letters, digits, '-' and '_'", ErrInvalidKey, k.ID)
		}
	}
	if len(k.Secret) != keySize {
		return fmt.Errorf("%w: key %q must be %d bytes, is %d", ErrInvalidKey, k.ID, keySize, len(k.Secret))
	}
	return nil
}

// GenerateKey returns a new KEK: a random id and 32 random bytes from r
// (crypto/rand.Reader in production).
func GenerateKey(r io.Reader) (Key, error) {
	var b [4 + keySize]byte
	if _, err := io.ReadFull(r, b[:]); err != nil {
		return Key{}, fmt.Errorf("secretbox: generating a key: %w", err)
	}
	return Key{ID: "kek" + hex.EncodeToString(b[:4]), Secret: b[4:]}, nil
}

// FormatKey writes a key the way ParseKeys reads it: "<id>:<base64url>".
func FormatKey(k Key) string {
	return k.ID + ":" + base64.RawURLEncoding.EncodeToString(k.Secret)
}

// ParseKeys reads KEKs from configuration (HERALD_KEK) or a KEK file:
// entries "<id>:<base64 key>" separated by newlines or commas, blank
// lines and lines starting with '#' ignored. The first key seals; the
// others only open, which is how a KEK is rotated: put the new key first,
// rewrap, then drop the old one.
func ParseKeys(text string) ([]Key, error) {
	var keys []Key
	for line := range strings.SplitSeq(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		for entry := range strings.SplitSeq(line, ",") {
			entry = strings.TrimSpace(entry)
			if entry == "" {
				continue
			}
			id, enc, ok := strings.Cut(entry, ":")
			if !ok {
				return nil, fmt.Errorf("%w: an entry must be <id>:<base64 key>", ErrInvalidKey)
			}
			enc = strings.TrimRight(strings.NewReplacer("+", "-", "/", "_").Replace(enc), "=")
			secret, err := base64.RawURLEncoding.Strict().DecodeString(enc)
			if err != nil {
				return nil, fmt.Errorf("%w: key %q is not base64", ErrInvalidKey, id)
			}
			k := Key{ID: id, Secret: secret}
			if err := k.validate(); err != nil {
				return nil, err
			}
			for _, o := range keys {
				if o.ID == id {
					return nil, fmt.Errorf("%w: key id %q appears twice", ErrInvalidKey, id)
				}
			}
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 {
		return nil, fmt.Errorf("%w: no keys", ErrInvalidKey)
	}
	return keys, nil
}

// DefaultFile is where the KEK file goes when none is configured: in the
// data directory, which is the one place Herald knows to be its own,
// writable and persistent (a container's volume, a service's state
// directory; its parent often is none of these). The database files
// alone do not carry the key, but a copy of the whole directory does:
// back up the database without this file, and the file apart from it.
func DefaultFile(dataDir string) (string, error) {
	abs, err := filepath.Abs(dataDir)
	if err != nil {
		return "", fmt.Errorf("secretbox: locating the data directory: %w", err)
	}
	return filepath.Join(abs, DefaultFileName), nil
}

// LoadConfig says where the KEKs come from (see Load).
type LoadConfig struct {
	// Keys is the HERALD_KEK value: keys given directly. It wins when set.
	Keys string
	// File is the --kek-file flag; "" means DefaultFile(DataDir).
	File    string
	DataDir string
	// Rand makes a first key; crypto/rand.Reader in production.
	Rand io.Reader
}

// Load returns the configured KEKs: cfg.Keys when set, else the KEK file,
// created with one new key on first start.
func Load(cfg LoadConfig) ([]Key, error) {
	if strings.TrimSpace(cfg.Keys) != "" {
		return ParseKeys(cfg.Keys)
	}
	path := cfg.File
	if path == "" {
		var err error
		if path, err = DefaultFile(cfg.DataDir); err != nil {
			return nil, err
		}
	}
	return LoadOrCreateFile(path, cfg.Rand)
}

// LoadOrCreateFile returns the keys in the KEK file at path, creating it
// with one new key from r when it does not exist. The file is written in
// full with mode 0600 under a temporary name and published with a hard
// link, so a reader never sees half a file and two processes starting at
// once agree on one key. An existing file that other users may read or
// write is refused.
func LoadOrCreateFile(path string, r io.Reader) ([]Key, error) {
	keys, err := ReadFile(path)
	if !errors.Is(err, fs.ErrNotExist) {
		return keys, err
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("secretbox: creating the key file directory: %w", err)
	}
	key, err := GenerateKey(r)
	if err != nil {
		return nil, err
	}
	tmp, err := writeTemp(dir, fileContent([]Key{key}))
	if err != nil {
		return nil, err
	}
	linkErr := os.Link(tmp, path)
	if err := os.Remove(tmp); err != nil {
		return nil, fmt.Errorf("secretbox: removing the temporary key file: %w", err)
	}
	if errors.Is(linkErr, fs.ErrExist) {
		return ReadFile(path) // another process created it first: use its key
	}
	if linkErr != nil {
		return nil, fmt.Errorf("secretbox: publishing the key file: %w", linkErr)
	}
	if err := syncDir(dir); err != nil {
		return nil, err
	}
	return []Key{key}, nil
}

// WriteFile replaces the KEK file at path with keys (the first seals),
// atomically: the new content is written in full with mode 0600 under a
// temporary name and renamed over the old file, so a crash leaves the old
// file or the new one, never a mix.
func WriteFile(path string, keys []Key) error {
	for _, k := range keys {
		if err := k.validate(); err != nil {
			return err
		}
	}
	if len(keys) == 0 {
		return fmt.Errorf("%w: no keys", ErrInvalidKey)
	}
	dir := filepath.Dir(path)
	tmp, err := writeTemp(dir, fileContent(keys))
	if err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		return errors.Join(fmt.Errorf("secretbox: replacing the key file: %w", err), os.Remove(tmp))
	}
	return syncDir(dir)
}

func fileContent(keys []Key) string {
	var b strings.Builder
	b.WriteString("# Herald key-encryption keys, one <id>:<base64 key> per line.\n" +
		"# Secrets in the database are encrypted with these; without them they\n" +
		"# cannot be read. Keep this file out of database backups, and back it\n" +
		"# up separately. The first key encrypts; the others only decrypt.\n")
	for _, k := range keys {
		b.WriteString(FormatKey(k) + "\n")
	}
	return b.String()
}

func writeTemp(dir, content string) (string, error) {
	f, err := os.CreateTemp(dir, ".kek-*") // mode 0600
	if err != nil {
		return "", fmt.Errorf("secretbox: creating the key file: %w", err)
	}
	_, werr := f.WriteString(content)
	if werr == nil {
		werr = f.Sync()
	}
	if err := errors.Join(werr, f.Close()); err != nil {
		return "", errors.Join(fmt.Errorf("secretbox: writing the key file: %w", err), os.Remove(f.Name()))
	}
	return f.Name(), nil
}

// ReadFile returns the keys in the KEK file at path; an error wrapping
// fs.ErrNotExist when there is none. A file that other users may read or
// write is refused.
func ReadFile(path string) ([]Key, error) {
	data, err := privfile.ReadKeyFile(path, "secretbox", ErrInvalidKey)
	if err != nil {
		return nil, err
	}
	keys, err := ParseKeys(string(data))
	if err != nil {
		return nil, fmt.Errorf("key file %s: %w", path, err)
	}
	return keys, nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("secretbox: syncing the key file directory: %w", err)
	}
	if err := errors.Join(d.Sync(), d.Close()); err != nil {
		return fmt.Errorf("secretbox: syncing the key file directory: %w", err)
	}
	return nil
}
