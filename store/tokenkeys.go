package store

import (
	"context"
	"time"
)

// TokenKeyStore keeps the callback token keys Herald makes for itself when
// none are configured, so that every start, and every replica sharing the
// store, signs and verifies callback tokens with the same keys. A backend
// keeps them encrypted like every other secret.
//
// It is not part of Store: only the process that starts Herald needs it,
// and a store used for anything else (a test double) need not implement
// it.
type TokenKeyStore interface {
	// TokenKeyInit stores params.Keys when the store holds no token key,
	// and returns the keys it holds, the signing one first: the keys of
	// the first start, whichever start that was.
	TokenKeyInit(ctx context.Context, params *TokenKeyInitParams) ([]TokenKey, error)
}

// TokenKey is one callback token key.
type TokenKey struct {
	ID        string
	Secret    []byte
	CreatedAt time.Time
}

// TokenKeyInitParams are the inputs of TokenKeyInit.
type TokenKeyInitParams struct {
	// Keys are stored when none are, in order (the first signs).
	Keys []TokenKey
	Now  time.Time
}
