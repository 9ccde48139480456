package secretbox

import "fmt"

// Resealed says what Reseal did to a stored value.
type Resealed int

const (
	// Unchanged: the value is sealed under the current key already.
	Unchanged Resealed = iota
	// Sealed: the value was a plaintext and is sealed now.
	Sealed
	// Rewrapped: the value was sealed under an older key and is sealed
	// under the current one now.
	Rewrapped
)

// Reseal brings one stored secret of a table's column to the current key:
// a plaintext is sealed, a value under an older key rewrapped, and a value
// under the current key left as it is (it is opened when used). It
// returns the value to store and what changed.
func (b *Box) Reseal(stored, table, row, column string) (string, Resealed, error) {
	if !IsSealed(stored) {
		sealed, err := b.SealText(stored, table, row, column)
		if err != nil {
			return "", Unchanged, err
		}
		return sealed, Sealed, nil
	}
	if kid, err := KeyID(stored); err == nil && kid == b.CurrentKeyID() {
		return stored, Unchanged, nil
	}
	moved, changed, err := b.Rewrap(stored, Binding(table, row, column))
	if err != nil {
		return "", Unchanged, fmt.Errorf("%s.%s of %q: %w", table, column, row, err)
	}
	if !changed {
		return stored, Unchanged, nil
	}
	return moved, Rewrapped, nil
}
