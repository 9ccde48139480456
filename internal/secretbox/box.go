// Package secretbox encrypts secrets at rest (webhook signing secrets,
// token keys) so that a copy of the database alone does not give them
// away. It is an AES-256-GCM envelope:
//
//   - Every Seal draws a fresh 256-bit data key, encrypts the plaintext
//     with it, and wraps the data key with the key-encryption key (KEK).
//     The KEK is kept outside the database (a 0600 file, in the data
//     directory unless configured elsewhere, or configuration), so a copy
//     of the database does not carry it.
//   - The ciphertext names the KEK that wrapped it, so KEKs rotate: a Box
//     opens with any key it knows and seals with the current one (the
//     first), and Rewrap moves old ciphertexts to the current key without
//     touching their data.
//   - Both encryptions authenticate the header and a binding the caller
//     gives (Binding(table, row, column)): a ciphertext copied to another
//     row or column does not open there.
package secretbox

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"strings"
)

// Prefix starts every sealed value; a value without it was never sealed
// (IsSealed), which lets a column move from plaintext to sealed values.
const Prefix = "hkv1."

// Sizes of the envelope.
const (
	keySize   = 32 // AES-256
	nonceSize = 12 // GCM's standard nonce
	tagSize   = 16
	// wrappedSize is a data key sealed by the KEK.
	wrappedSize = keySize + tagSize
)

// Errors of Open. An unknown key is an *UnknownKeyError.
var (
	// ErrCorrupt: the value is not a sealed value, was changed, or belongs
	// to another binding (row or column).
	ErrCorrupt = errors.New("secretbox: sealed value is corrupt, or belongs to another row or column")
	// ErrInvalidKey: a key-encryption key is malformed.
	ErrInvalidKey = errors.New("secretbox: invalid key-encryption key")
)

// UnknownKeyError is returned by Open for a value sealed with a KEK the Box
// does not have (removed too early, or the wrong key file).
type UnknownKeyError struct {
	ID string
}

func (e *UnknownKeyError) Error() string {
	return fmt.Sprintf("secretbox: data was encrypted with key %q, which is not configured", e.ID)
}

// Binding names where a sealed value lives. Sealing and opening with the
// same binding is what ties a ciphertext to its row and column.
func Binding(table, row, column string) string {
	// Lengths first: no choice of names can make two bindings equal.
	return fmt.Sprintf("%d:%s|%d:%s|%d:%s", len(table), table, len(row), row, len(column), column)
}

// Box seals and opens values. It is immutable and safe for concurrent use.
type Box struct {
	current string
	aeads   map[string]cipher.AEAD
	rand    io.Reader
}

// New returns a Box that seals with keys[0] and opens with any of keys.
func New(keys []Key) (*Box, error) {
	if len(keys) == 0 {
		return nil, fmt.Errorf("%w: no keys", ErrInvalidKey)
	}
	b := &Box{current: keys[0].ID, aeads: make(map[string]cipher.AEAD, len(keys)), rand: rand.Reader}
	for _, k := range keys {
		if err := k.validate(); err != nil {
			return nil, err
		}
		if _, dup := b.aeads[k.ID]; dup {
			return nil, fmt.Errorf("%w: key id %q appears twice", ErrInvalidKey, k.ID)
		}
		a, err := newAEAD(k.Secret)
		if err != nil {
			return nil, err
		}
		b.aeads[k.ID] = a
	}
	return b, nil
}

func newAEAD(key []byte) (cipher.AEAD, error) {
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("secretbox: %w", err)
	}
	a, err := cipher.NewGCM(block)
	if err != nil {
		return nil, fmt.Errorf("secretbox: %w", err)
	}
	return a, nil
}

// CurrentKeyID is the id of the key that seals.
func (b *Box) CurrentKeyID() string { return b.current }

// IsSealed reports whether v looks like a sealed value (it may still fail
// to open).
func IsSealed(v string) bool { return strings.HasPrefix(v, Prefix) }

// Seal encrypts plaintext for the place named by binding and returns the
// sealed value as text (it fits a TEXT column).
func (b *Box) Seal(plaintext []byte, binding string) (string, error) {
	dek := make([]byte, keySize)
	if _, err := io.ReadFull(b.rand, dek); err != nil {
		return "", fmt.Errorf("secretbox: drawing a data key: %w", err)
	}
	dataAEAD, err := newAEAD(dek)
	if err != nil {
		return "", err
	}
	header := header(b.current)
	ad := additionalData(header, binding)
	out := make([]byte, 0, len(header)+2*nonceSize+wrappedSize+len(plaintext)+tagSize)
	out = append(out, header...)
	wrapNonce, dataNonce := make([]byte, nonceSize), make([]byte, nonceSize)
	if _, err := io.ReadFull(b.rand, wrapNonce); err != nil {
		return "", fmt.Errorf("secretbox: drawing a nonce: %w", err)
	}
	if _, err := io.ReadFull(b.rand, dataNonce); err != nil {
		return "", fmt.Errorf("secretbox: drawing a nonce: %w", err)
	}
	out = append(out, wrapNonce...)
	out = b.aeads[b.current].Seal(out, wrapNonce, dek, ad)
	out = append(out, dataNonce...)
	out = dataAEAD.Seal(out, dataNonce, plaintext, ad)
	return Prefix + base64.RawURLEncoding.EncodeToString(out), nil
}

// Open decrypts a sealed value for the place named by binding. Errors:
// *UnknownKeyError, ErrCorrupt.
func (b *Box) Open(sealed, binding string) ([]byte, error) {
	e, err := parse(sealed)
	if err != nil {
		return nil, err
	}
	kek, ok := b.aeads[e.keyID]
	if !ok {
		return nil, &UnknownKeyError{ID: e.keyID}
	}
	ad := additionalData(e.header, binding)
	dek, err := kek.Open(nil, e.wrapNonce, e.wrapped, ad)
	if err != nil {
		return nil, ErrCorrupt
	}
	dataAEAD, err := newAEAD(dek)
	if err != nil {
		return nil, err
	}
	plain, err := dataAEAD.Open(nil, e.dataNonce, e.data, ad)
	if err != nil {
		return nil, ErrCorrupt
	}
	return plain, nil
}

// KeyID returns the id of the KEK that sealed a value, without opening it.
func KeyID(sealed string) (string, error) {
	e, err := parse(sealed)
	if err != nil {
		return "", err
	}
	return e.keyID, nil
}

// Rewrap returns the value sealed under the current key, for moving
// stored values off a KEK before it is retired. A value already under the
// current key is returned as is with changed false. Errors: those of Open.
func (b *Box) Rewrap(sealed, binding string) (out string, changed bool, err error) {
	e, err := parse(sealed)
	if err != nil {
		return "", false, err
	}
	if e.keyID == b.current {
		if _, err := b.Open(sealed, binding); err != nil {
			return "", false, err
		}
		return sealed, false, nil
	}
	plain, err := b.Open(sealed, binding)
	if err != nil {
		return "", false, err
	}
	// Sealed afresh, with a new data key: as cheap as wrapping the old
	// data key again for the small values this package holds, and no
	// nonce is ever used twice under a key.
	out, err = b.Seal(plain, binding)
	if err != nil {
		return "", false, err
	}
	return out, true, nil
}

// envelope is a parsed sealed value.
type envelope struct {
	header    []byte
	keyID     string
	wrapNonce []byte
	wrapped   []byte
	dataNonce []byte
	data      []byte
}

// header is the part of the value before the nonces: the version and the
// KEK's id. It is authenticated with the binding.
func header(keyID string) []byte {
	h := make([]byte, 0, 2+len(keyID))
	h = append(h, 1, byte(len(keyID)))
	return append(h, keyID...)
}

func additionalData(header []byte, binding string) []byte {
	ad := make([]byte, 0, len("herald-secretbox\x00")+len(header)+1+len(binding))
	ad = append(ad, "herald-secretbox\x00"...)
	ad = append(ad, header...)
	ad = append(ad, 0)
	return append(ad, binding...)
}

func parse(sealed string) (*envelope, error) {
	rest, ok := strings.CutPrefix(sealed, Prefix)
	if !ok {
		return nil, fmt.Errorf("%w (no %q prefix)", ErrCorrupt, Prefix)
	}
	raw, err := base64.RawURLEncoding.Strict().DecodeString(rest)
	if err != nil {
		return nil, fmt.Errorf("%w (not base64url)", ErrCorrupt)
	}
	if len(raw) < 2 || raw[0] != 1 {
		return nil, fmt.Errorf("%w (unknown version)", ErrCorrupt)
	}
	n := int(raw[1])
	hlen := 2 + n
	if n == 0 || len(raw) < hlen+2*nonceSize+wrappedSize+tagSize {
		return nil, fmt.Errorf("%w (too short)", ErrCorrupt)
	}
	e := &envelope{header: raw[:hlen], keyID: string(raw[2:hlen])}
	p := raw[hlen:]
	e.wrapNonce, p = p[:nonceSize], p[nonceSize:]
	e.wrapped, p = p[:wrappedSize], p[wrappedSize:]
	e.dataNonce, e.data = p[:nonceSize], p[nonceSize:]
	return e, nil
}
