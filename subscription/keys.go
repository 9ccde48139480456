package subscription

import (
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"io"
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
