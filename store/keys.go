package store

import (
	"context"
	"errors"
	"time"
)

// KeyStore is the part of the contract that keeps API keys. The store
// holds a key's hash, never the key: package auth makes keys, hashes them
// and checks them. Every Store implements it.
type KeyStore interface {
	// KeyCreate stores a new key. ErrKeyExists when the ID is taken.
	KeyCreate(ctx context.Context, params *KeyCreateParams) (*Key, error)
	// KeyGet returns one key, or ErrKeyNotFound.
	KeyGet(ctx context.Context, params *KeyGetParams) (*Key, error)
	// KeyList returns keys ordered by ID, after params.After, at most
	// params.Limit (0: all), of params.Tenant when not "".
	KeyList(ctx context.Context, params *KeyListParams) ([]Key, error)
	// KeyDelete removes a key (revokes it). ErrKeyNotFound when absent.
	KeyDelete(ctx context.Context, params *KeyDeleteParams) error
}

// Errors of KeyStore.
var (
	ErrKeyNotFound = errors.New("store: key not found")
	ErrKeyExists   = errors.New("store: key exists")
)

// Key is a stored API key: everything but the secret.
type Key struct {
	// ID is the public part of the key, unique; it is how a presented key
	// is found.
	ID string
	// Hash is the SHA-256 of the whole key as presented.
	Hash []byte
	// Scopes are what the key may do (see package auth).
	Scopes []string
	// Tenant limits the key to one tenant; "" for none.
	Tenant string
	// Paths are stream path patterns the key is limited to; none means
	// every path.
	Paths       []string
	Description string
	// ExpiresAt is when the key stops working; zero when never.
	ExpiresAt time.Time
	CreatedAt time.Time
}

// KeyCreateParams are the inputs of KeyCreate.
type KeyCreateParams struct {
	Key Key // CreatedAt is set from Now
	Now time.Time
}

// KeyGetParams are the inputs of KeyGet.
type KeyGetParams struct {
	ID string
}

// KeyListParams are the inputs of KeyList.
type KeyListParams struct {
	After  string
	Limit  int
	Tenant string
}

// KeyDeleteParams are the inputs of KeyDelete.
type KeyDeleteParams struct {
	ID string
}
