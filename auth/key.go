package auth

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base32"
	"encoding/base64"
	"fmt"
	"io"
	"strings"
)

// KeyPrefix starts every Herald API key: a key is "hk_" + id + "_" +
// secret. The id is public (listed, logged) and finds the stored key in
// one lookup; the secret is shown once. The fixed prefix lets secret
// scanners recognise a leaked key.
const KeyPrefix = "hk_"

const (
	idBytes     = 10 // 16 base32 characters
	secretBytes = 32 // 256 bits
)

var idEncoding = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

// NewKey makes a key from r (crypto/rand.Reader when nil): its id, the
// whole key to hand to its owner, and the hash to store.
func NewKey(r io.Reader) (id, key string, hash []byte, err error) {
	if r == nil {
		r = rand.Reader
	}
	var b [idBytes + secretBytes]byte
	if _, err := io.ReadFull(r, b[:]); err != nil {
		return "", "", nil, fmt.Errorf("auth: generating a key: %w", err)
	}
	id = idEncoding.EncodeToString(b[:idBytes])
	key = KeyPrefix + id + "_" + base64.RawURLEncoding.EncodeToString(b[idBytes:])
	h := HashKey(key)
	return id, key, h[:], nil
}

// HashKey is what the store keeps of a key: its SHA-256. A fast hash is
// right here, unlike for passwords: a key has 256 bits from a CSPRNG, so
// no dictionary or brute force search of the hash can find it, and a slow
// KDF would only cost every request CPU time for no gain.
func HashKey(key string) [sha256.Size]byte {
	return sha256.Sum256([]byte(key))
}

// ParseKey splits a presented key into its id, checking its shape (not
// its secret). ok is false for anything that is not a Herald key.
func ParseKey(key string) (id string, ok bool) {
	rest, found := strings.CutPrefix(key, KeyPrefix)
	if !found {
		return "", false
	}
	id, secret, found := strings.Cut(rest, "_")
	if !found || !IsKeyID(id) || len(secret) != base64.RawURLEncoding.EncodedLen(secretBytes) {
		return "", false
	}
	return id, true
}

// IsKeyID reports whether s has the shape of a key id (16 lower-case
// base32 characters).
func IsKeyID(s string) bool {
	if len(s) != idEncoding.EncodedLen(idBytes) {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !('a' <= c && c <= 'z' || '2' <= c && c <= '7') {
			return false
		}
	}
	return true
}
