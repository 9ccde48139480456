// Package sqlstore is the one SQL implementation of Herald's storage
// contract: the statements, the rules around them, the sealing of secrets
// and the scanning of rows, written once over a small interface that each
// SQL backend implements (Backend: how it runs a write or a read, and
// Dialect: how its SQL differs).
//
// A backend embeds a *Store and keeps only what is its own: package
// sqlite its group-commit writer, caches and WAL settings; package
// postgres its row and advisory locks and LISTEN/NOTIFY. Statements are
// written with PostgreSQL's $1-style placeholders; the SQLite executor
// rewrites them (Numbered). The shared suite, package storetest,
// runs on every backend: it is what proves a backend right.
package sqlstore

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/heraldstreams/herald/internal/secretbox"
	"github.com/heraldstreams/herald/store"
)

// Tx is the executor of a write transaction.
type Tx interface {
	Executor
	// Invalidate tells every handle's Notifier, once the transaction
	// commits, that a cached item changed (store.Notifier.Invalidations).
	Invalidate(inv store.Invalidation) error
	// InsertID runs an INSERT (written without RETURNING) and returns
	// the generated value of its column id, or 0 when it inserted no row
	// (ON CONFLICT DO NOTHING): RETURNING where the database prefers it,
	// the last insert id where RETURNING costs more.
	InsertID(sql, id string, args ...any) (int64, error)
}

// WriteMode says how a write may be committed.
type WriteMode int

const (
	// Durable writes are on disk when the call returns; a rule error
	// undoes the write's own changes only.
	Durable WriteMode = iota
	// ChecksFirst is Durable for a write whose rule errors all come
	// before its first change (a backend that batches writes need not
	// mark where this one began).
	ChecksFirst
	// Relaxed is bookkeeping whose loss costs nothing but repeated work;
	// a backend may commit it without waiting for the disk.
	Relaxed
)

// Backend runs the core's statements on a database.
type Backend interface {
	// Write runs fn in a write transaction and commits it as mode says.
	// An error fn returns leaves none of fn's changes behind and is
	// returned as it is.
	Write(ctx context.Context, mode WriteMode, fn func(Tx) error) error
	// Read runs fn on a read of committed data.
	Read(ctx context.Context, fn func(Executor) error) error
	// SnapshotCursors gives an endpoint, in tx, a delivery cursor at the
	// tail of every live stream that has none: the backend knows its
	// streams' tails (in its rows, or in its cache).
	SnapshotCursors(tx Tx, endpointID string, now time.Time) error
	// EachStream calls fn, in tx, for every live stream whose path
	// starts with prefix, in path order.
	EachStream(tx Tx, prefix string, now time.Time, fn func(*store.Stream) error) error
	// PublishAppend appends a published event (one JSON message) to its
	// stream in tx, creating the stream (application/json) when there is
	// none, and returns where the event starts. A request that breaks a
	// rule of the stream returns a RuleError.
	PublishAppend(ctx context.Context, tx Tx, params *store.EventPublishParams) (int64, error)
	// ChangeMark returns the mark of the streams' changes (see
	// store.StreamChangeStore.StreamChangeMark): how the backend numbers
	// them is its own.
	ChangeMark(ctx context.Context) (int64, error)
}

// Dialect is how a backend's SQL differs from the core's.
type Dialect struct {
	// Name prefixes the errors of the backend ("sqlite", "postgres").
	Name string
	// IsNoRows reports whether err is a QueryRow that found no row.
	IsNoRows func(error) bool
	// ForUpdate ends a SELECT of rows the transaction goes on to update:
	// "FOR UPDATE" where rows lock, "" where one writer runs at a time.
	ForUpdate string
	// LockTable is the statement that makes a transaction the only
	// writer of a table until it ends, "" where one writer runs at a time.
	LockTable func(table string) string
	// SkipLocked ends a SELECT of rows a claim takes: "FOR UPDATE SKIP
	// LOCKED" where handles claim at once (each takes other rows), ""
	// where one writer runs at a time. DeliveryLock is the same for the
	// claim of deliveries joined to their endpoint (alias d).
	SkipLocked, DeliveryLock string
	// LeaseToken is the statement that returns a lease token never
	// returned before in the database.
	LeaseToken string
	// Int64s is a subquery whose rows are the values of v, bound to the
	// placeholder ph, and the argument to bind there.
	Int64s func(ph string, v []int64) (sql string, arg any)
	// EachJSON is a FROM item named alias whose rows are the values (in
	// column value) of the JSON array of text in expr.
	EachJSON func(expr, alias string) string
	// TextPairs is a subquery whose rows (columns a and b) are the pairs
	// of text of the JSON array of [a, b] arrays bound to placeholder ph.
	TextPairs func(ph string) string
}

// Config configures New.
type Config struct {
	Backend Backend
	Dialect Dialect
	// Box seals the secret columns (see SecretColumns); nil keeps them
	// in plaintext.
	Box    *secretbox.Box
	Logger *slog.Logger
	// Owner names this handle in the leases it takes.
	Owner string
	// PendingAccess returns the last access of stream id (Unix ns) that
	// the backend has not written to its row yet, 0 when none: a backend
	// that writes read-driven TTL renewals later (SQLite) gives it, so
	// that a stream read from its row is not taken for expired.
	PendingAccess func(id int64) int64
}

// Store implements the storage contract on a Backend. A backend embeds
// it and adds what is its own.
type Store struct {
	b   Backend
	d   Dialect
	box *secretbox.Box
	log *slog.Logger
	// stats is what PrepareSecrets did.
	stats store.SecretStats
	owner string
	// ids names deliveries, claims leases them (see LoadDeliveryIDs).
	ids    *DeliveryIDs
	claims *Claims
	// pending is Config.PendingAccess (nil when the backend has none).
	pending func(id int64) int64
}

// New returns the core over cfg's backend.
func New(cfg Config) *Store {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Store{b: cfg.Backend, d: cfg.Dialect, box: cfg.Box, log: cfg.Logger, owner: cfg.Owner,
		pending: cfg.PendingAccess}
}

// Owner is the name of this handle in the leases it takes.
func (s *Store) Owner() string { return s.owner }

// DeliveryIDs names deliveries (set by LoadDeliveryIDs).
func (s *Store) DeliveryIDs() *DeliveryIDs { return s.ids }

// LoadDeliveryIDs runs when a store opens, in a transaction tx of the
// backend: it reads the delivery id key, making it at the first start
// that finds none (handles starting together agree on the first key
// written), and readies the delivery claims.
func (s *Store) LoadDeliveryIDs(tx Executor) error {
	key := make([]byte, DeliveryIDKeySize)
	if _, err := rand.Read(key); err != nil {
		return s.errorf("delivery id key", err)
	}
	if _, err := tx.Exec(`INSERT INTO id_keys (name, key) VALUES ($1, $2) ON CONFLICT (name) DO NOTHING`,
		DeliveryIDKeyName, key); err != nil {
		return s.errorf("delivery id key", err)
	}
	if err := tx.QueryRow(`SELECT key FROM id_keys WHERE name = $1`, DeliveryIDKeyName).Scan(&key); err != nil {
		return s.errorf("delivery id key", err)
	}
	ids, err := NewDeliveryIDs(key)
	if err != nil {
		return fmt.Errorf("%s: %w", s.d.Name, err)
	}
	s.ids = ids
	s.claims = &Claims{IDs: ids, Owner: s.owner, Lock: s.d.DeliveryLock, Token: func(tx ClaimTx) (int64, error) {
		var token int64
		err := tx.QueryRow(s.d.LeaseToken).Scan(&token)
		return token, err
	}}
	return nil
}

// RuleError is a request that breaks a rule of the contract (a key that
// exists, a missing row): a write fn returns it to undo its own changes
// without failing the transaction's other work, and the caller gets Err.
type RuleError struct{ Err error }

func (e *RuleError) Error() string { return e.Err.Error() }

// Unwrap returns the contract's error.
func (e *RuleError) Unwrap() error { return e.Err }

// Rule wraps a contract error for a write fn (see RuleError).
func Rule(err error) error { return &RuleError{Err: err} }

// rule is Rule.
func rule(err error) error { return Rule(err) }

// write runs fn through the backend and returns a rule error as the
// contract's error it carries.
func (s *Store) write(ctx context.Context, mode WriteMode, fn func(Tx) error) error {
	err := s.b.Write(ctx, mode, fn)
	if err == nil {
		return nil
	}
	var r *RuleError
	if errors.As(err, &r) {
		return r.Err
	}
	return err
}

// errorf prefixes a database failure with the backend's name.
func (s *Store) errorf(what string, err error) error {
	return &dbError{prefix: s.d.Name + ": " + what, err: err}
}

// dbError is a database failure, named by the backend and what failed.
type dbError struct {
	prefix string
	err    error
}

func (e *dbError) Error() string { return e.prefix + ": " + e.err.Error() }
func (e *dbError) Unwrap() error { return e.err }
