package subscription

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
)

// Token key sizes.
const (
	// MinKeyLength is the shortest token key secret accepted, in bytes.
	MinKeyLength = 32
	// maxKeyLength bounds a key secret, in bytes.
	maxKeyLength = 1024
	// maxKeyIDLength bounds a key id.
	maxKeyIDLength = 64
)

// Key is one callback token key: an id that tokens name in their "kid"
// header, and the HMAC-SHA256 secret.
type Key struct {
	ID     string
	Secret []byte
}

// String names the key without its secret, so a key printed by mistake
// does not leak.
func (k Key) String() string { return "token key " + k.ID }

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
	if len(k.Secret) < MinKeyLength || len(k.Secret) > maxKeyLength {
		return fmt.Errorf("%w: key %q must have %d to %d bytes of secret, has %d", ErrInvalidKey, k.ID, MinKeyLength, maxKeyLength, len(k.Secret))
	}
	return nil
}

// GenerateKey returns a new key: a random 8-hex-digit id and a 32-byte
// secret from r (crypto/rand.Reader in production).
func GenerateKey(r io.Reader) (Key, error) {
	var b [4 + MinKeyLength]byte
	if _, err := io.ReadFull(r, b[:]); err != nil {
		return Key{}, fmt.Errorf("subscription: generating a token key: %w", err)
	}
	return Key{ID: "k" + hex.EncodeToString(b[:4]), Secret: b[4:]}, nil
}

// FormatKey writes a key the way ParseKeys reads it: "<id>:<secret in
// unpadded base64url>".
func FormatKey(k Key) string {
	return k.ID + ":" + base64.RawURLEncoding.EncodeToString(k.Secret)
}

// ParseKeys reads token keys from configuration or a key file: entries
// "<id>:<secret>" separated by newlines or commas, with blank lines and
// lines starting with '#' ignored. The secret is base64, standard or URL
// alphabet, padded or not, of at least MinKeyLength bytes. The first key
// signs new tokens; the others only verify, which is how a key is rotated:
// put the new key first and drop the old one a TokenTTL later. Errors wrap
// ErrInvalidKey.
func ParseKeys(text string) ([]Key, error) {
	var keys []Key
	seen := map[string]bool{}
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
			k, err := parseKey(entry)
			if err != nil {
				return nil, err
			}
			if seen[k.ID] {
				return nil, fmt.Errorf("%w: key id %q appears twice", ErrInvalidKey, k.ID)
			}
			seen[k.ID] = true
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 {
		return nil, fmt.Errorf("%w: no keys", ErrInvalidKey)
	}
	return keys, nil
}

func parseKey(entry string) (Key, error) {
	id, enc, ok := strings.Cut(entry, ":")
	if !ok {
		return Key{}, fmt.Errorf("%w: an entry must be <id>:<base64 secret>", ErrInvalidKey)
	}
	enc = strings.TrimRight(strings.NewReplacer("+", "-", "/", "_").Replace(enc), "=")
	secret, err := base64.RawURLEncoding.Strict().DecodeString(enc)
	if err != nil {
		return Key{}, fmt.Errorf("%w: key %q: secret is not base64", ErrInvalidKey, id)
	}
	k := Key{ID: id, Secret: secret}
	if err := k.validate(); err != nil {
		return Key{}, err
	}
	return k, nil
}

// LoadOrCreateKeyFile returns the keys in the key file at path, creating
// the file with one new key from r (crypto/rand.Reader in production) when
// it does not exist. The key is made once and kept, never per start: a
// restarted Herald, or a second one sharing the data directory, must
// verify the tokens the first one issued.
//
// The file is written in full with mode 0600 under a temporary name and
// published with a hard link, so a reader never sees half a file and two
// processes starting at once agree on one key. An existing file that other
// users may read or write is refused.
func LoadOrCreateKeyFile(path string, r io.Reader) ([]Key, error) {
	keys, err := readKeyFile(path)
	if !errors.Is(err, fs.ErrNotExist) {
		return keys, err
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("subscription: creating the key file directory: %w", err)
	}
	key, err := GenerateKey(r)
	if err != nil {
		return nil, err
	}
	content := "# Herald callback token keys, one <id>:<base64 secret> per line.\n" +
		"# The first key signs; the others only verify. To rotate, add a new key\n" +
		"# at the top and remove the old one an hour later.\n" +
		FormatKey(key) + "\n"
	tmp, err := writeTemp(dir, content)
	if err != nil {
		return nil, err
	}
	linkErr := os.Link(tmp, path)
	if err := os.Remove(tmp); err != nil {
		return nil, fmt.Errorf("subscription: removing the temporary key file: %w", err)
	}
	if errors.Is(linkErr, fs.ErrExist) {
		// Another process created it first: use its key.
		return readKeyFile(path)
	}
	if linkErr != nil {
		return nil, fmt.Errorf("subscription: publishing the key file: %w", linkErr)
	}
	if err := syncDir(dir); err != nil {
		return nil, err
	}
	return []Key{key}, nil
}

// writeTemp writes content to a new 0600 file in dir, durably, and returns
// its name.
func writeTemp(dir, content string) (string, error) {
	f, err := os.CreateTemp(dir, ".keys-*") // mode 0600
	if err != nil {
		return "", fmt.Errorf("subscription: creating the key file: %w", err)
	}
	_, werr := f.WriteString(content)
	if werr == nil {
		werr = f.Sync()
	}
	if err := errors.Join(werr, f.Close()); err != nil {
		return "", errors.Join(fmt.Errorf("subscription: writing the key file: %w", err), os.Remove(f.Name()))
	}
	return f.Name(), nil
}

func readKeyFile(path string) ([]Key, error) {
	info, err := os.Stat(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
		return nil, fmt.Errorf("subscription: reading the key file: %w", err)
	}
	if perm := info.Mode().Perm(); perm&0o077 != 0 {
		return nil, fmt.Errorf("%w: key file %s is accessible to other users (mode %04o); chmod 600 it", ErrInvalidKey, path, perm)
	}
	if info.Size() > 1<<20 {
		return nil, fmt.Errorf("%w: key file %s is larger than 1 MiB", ErrInvalidKey, path)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("subscription: reading the key file: %w", err)
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
		return fmt.Errorf("subscription: syncing the key file directory: %w", err)
	}
	if err := errors.Join(d.Sync(), d.Close()); err != nil {
		return fmt.Errorf("subscription: syncing the key file directory: %w", err)
	}
	return nil
}
