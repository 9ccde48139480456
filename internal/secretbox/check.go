package secretbox

import (
	"errors"
	"fmt"
	"slices"
)

// ErrWrongKey: the configured KEKs do not open what the store sealed
// before (another key file, or a key removed before its values were
// rewrapped). Starting anyway would leave every secret unreadable.
var ErrWrongKey = errors.New("the key-encryption key does not match the one this data was written with")

// checkBinding and checkPlaintext make a store's check value: a known
// plaintext sealed like any secret, opened at start to tell a wrong KEK
// before any request needs a secret.
var (
	checkBinding   = Binding("herald", "key-encryption-key", "check")
	checkPlaintext = []byte("herald key-encryption key check")
)

// SealCheck returns a check value sealed with the current key, for the
// store to keep beside its sealed secrets.
func (b *Box) SealCheck() (string, error) {
	return b.Seal(checkPlaintext, checkBinding)
}

// VerifyCheck opens a check value from SealCheck. When the Box does not
// have the key that sealed it, or has another key under that key's id,
// the error wraps ErrWrongKey and names the key the data needs.
func (b *Box) VerifyCheck(sealed string) error {
	id, err := KeyID(sealed)
	if err != nil {
		return fmt.Errorf("secretbox: the stored key check: %w", err)
	}
	plain, err := b.Open(sealed, checkBinding)
	var unknown *UnknownKeyError
	switch {
	case errors.As(err, &unknown):
		return fmt.Errorf("%w: the data needs key %q, which is not among the configured keys %v", ErrWrongKey, id, b.keyIDs())
	case errors.Is(err, ErrCorrupt):
		return fmt.Errorf("%w: the configured key %q has the id of the key the data needs, but is another key", ErrWrongKey, id)
	case err != nil:
		return err
	case string(plain) != string(checkPlaintext):
		return fmt.Errorf("secretbox: the stored key check: %w", ErrCorrupt)
	}
	return nil
}

// keyIDs lists the ids of the Box's keys, the current one first.
func (b *Box) keyIDs() []string {
	var others []string
	for id := range b.aeads {
		if id != b.current {
			others = append(others, id)
		}
	}
	slices.Sort(others)
	return append([]string{b.current}, others...)
}

// SealText seals a secret text value stored at (table, row, column). An
// empty value stays empty: it is the absence of a secret (no previous
// signing secret), not one.
func (b *Box) SealText(plain, table, row, column string) (string, error) {
	if plain == "" {
		return "", nil
	}
	return b.Seal([]byte(plain), Binding(table, row, column))
}

// OpenText opens a value from SealText. A value that is not sealed is
// refused (ErrCorrupt): a store that holds sealed secrets seals them all.
func (b *Box) OpenText(sealed, table, row, column string) (string, error) {
	if sealed == "" {
		return "", nil
	}
	if !IsSealed(sealed) {
		return "", fmt.Errorf("%w (%s.%s of %q is not encrypted)", ErrCorrupt, table, column, row)
	}
	plain, err := b.Open(sealed, Binding(table, row, column))
	if err != nil {
		return "", fmt.Errorf("%s.%s of %q: %w", table, column, row, err)
	}
	return string(plain), nil
}
