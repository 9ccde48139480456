package store

// SecretStats says what opening a store did to its secret columns (the
// signing secrets, custom header values and token keys that a backend
// keeps encrypted at rest).
type SecretStats struct {
	// Sealed counts plaintext values encrypted (a store written before
	// secrets were encrypted, or without a key).
	Sealed int
	// Rewrapped counts values moved from an older key-encryption key to
	// the current one.
	Rewrapped int
	// KeyID is the id of the key that seals; "" without one.
	KeyID string
}

// SecretReporter is implemented by a store that encrypts secrets at rest:
// it reports what its opening did to them (`herald kek rotate` prints it).
type SecretReporter interface {
	SecretStats() SecretStats
}
