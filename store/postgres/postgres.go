// Package postgres is Herald's PostgreSQL storage backend, for several
// `herald serve` replicas sharing one database. Every method is one
// transaction on a pgx connection pool, and the truth is in the rows: a
// handle keeps no stream metadata, producer state or lease in memory.
// What the backends share is written once in package sqlstore, which
// this one runs with its row locks (FOR UPDATE, SKIP LOCKED) and
// notifications; the streams are its own, their rules from package
// streamrules, as in every backend.
//
// Stream changes are announced with NOTIFY in the transaction that makes
// them, so every replica's Notifier (a store.Hub fed by one LISTEN
// connection) sees them in commit order.
package postgres

import (
	"context"
	"crypto/rand"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/heraldstreams/herald/internal/secretbox"
	"github.com/heraldstreams/herald/store"
	"github.com/heraldstreams/herald/store/sqlstore"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

//go:embed migrations/*.sql
var migrations embed.FS

// Options configures Open.
type Options struct {
	Logger *slog.Logger
	// Box encrypts the secret columns, as in the SQLite backend (see
	// sqlstore.SecretColumns): Open seals plaintext values and rewraps those of
	// older keys, and refuses a Box that cannot open what was sealed
	// before. Nil keeps secrets in plaintext (tests); a database whose
	// secrets are encrypted does not open without a Box.
	Box *secretbox.Box
	// MaxConns bounds the connection pool (default: pgxpool's, or
	// pool_max_conns in the URL).
	MaxConns int32
	// ConfigureConn, when set, adjusts every connection's configuration
	// before use (tests set a search_path).
	ConfigureConn func(*pgx.ConnConfig)
}

// pingAfterIdle is how long a pooled connection may sit idle before it is
// pinged when it is next taken (a dead one is then replaced instead of
// failing the query).
const pingAfterIdle = 10 * time.Second

// Store is the PostgreSQL implementation of store.Store.
//
// What is per handle (per replica): the Hub that fans notifications out
// to this process's waiters and listeners, and the LISTEN connection
// feeding it. Everything else — stream metadata, producer state, TTL
// renewals, delivery leases (lease_until, lease_token and lease_owner in
// the deliveries rows, taken with FOR UPDATE SKIP LOCKED), the endpoints'
// rate buckets, consumer timer leases and named leases — is in the
// database and shared by every handle.
type Store struct {
	// Store is the core: every statement the backends share.
	*sqlstore.Store
	pool    *pgxpool.Pool
	log     *slog.Logger
	hub     *store.Hub
	channel string
	// owner names this handle in the leases it takes and the
	// notifications it sends.
	owner string
	// noteSeq numbers this handle's notifications; notes holds, until
	// the listener receives each, the channel its writer waits on.
	noteSeq atomic.Uint64
	notesMu sync.Mutex
	notes   map[uint64]chan struct{}
	// metrics time the write transactions.
	metrics *txMetrics

	cancel  context.CancelFunc
	wg      sync.WaitGroup
	closeMu sync.Mutex
	closed  bool
}

var _ store.Store = (*Store)(nil)

// Open connects to the database at url, applies the migrations not yet
// applied (under an advisory lock, so replicas starting together apply
// each once), prepares the secret columns and starts listening for
// changes.
func Open(ctx context.Context, url string, opts Options) (*Store, error) {
	if url == "" {
		return nil, errors.New("postgres: no database URL given")
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("postgres: parse database URL: %w", err)
	}
	if opts.MaxConns > 0 {
		cfg.MaxConns = opts.MaxConns
	}
	if cfg.ConnConfig.ConnectTimeout == 0 {
		cfg.ConnConfig.ConnectTimeout = connectTimeout
	}
	if opts.ConfigureConn != nil {
		opts.ConfigureConn(cfg.ConnConfig)
	}
	// A connection is pinged before use only after a long idle time, not
	// after every second (pgxpool's default): an idle replica's few
	// queries would cost a ping each.
	cfg.ShouldPing = func(_ context.Context, p pgxpool.ShouldPingParams) bool { return p.IdleDuration > pingAfterIdle }
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("postgres: connect: %w", err)
	}
	owner := make([]byte, 8)
	if _, err := rand.Read(owner); err != nil {
		pool.Close()
		return nil, fmt.Errorf("postgres: handle id: %w", err)
	}
	s := &Store{pool: pool, log: opts.Logger, hub: store.NewHub(), owner: hex.EncodeToString(owner),
		notes: make(map[uint64]chan struct{}), metrics: newTxMetrics()}
	s.Store = sqlstore.New(sqlstore.Config{Backend: backend{s}, Dialect: dialect, Box: opts.Box, Logger: opts.Logger, Owner: s.owner})
	if err := s.open(ctx, cfg.ConnConfig); err != nil {
		pool.Close()
		return nil, err
	}
	return s, nil
}

func (s *Store) open(ctx context.Context, connCfg *pgx.ConnConfig) error {
	var schema string
	if err := s.pool.QueryRow(ctx, `SELECT current_schema()`).Scan(&schema); err != nil {
		return fmt.Errorf("postgres: connect: %w", err)
	}
	// One channel per schema: stores in other schemas of the database
	// are other Heralds.
	s.channel = "herald:" + schema
	if err := s.migrate(ctx, schema); err != nil {
		return err
	}
	if err := s.prepareSecrets(ctx); err != nil {
		return err
	}
	if err := s.loadDeliveryIDs(ctx); err != nil {
		return err
	}
	conn, err := s.relisten(ctx, connCfg)
	if err != nil {
		return fmt.Errorf("postgres: listen: %w", err)
	}
	lctx, cancel := context.WithCancel(context.Background())
	s.cancel = cancel
	s.wg.Add(1)
	go s.listen(lctx, conn, connCfg)
	return nil
}

// migrate applies the embedded numbered migrations not yet applied, in
// one transaction holding an advisory lock of the schema: a replica that
// starts meanwhile waits, then finds them applied.
func (s *Store) migrate(ctx context.Context, schema string) error {
	ms, err := sqlstore.Migrations(migrations)
	if err != nil {
		return fmt.Errorf("postgres: %w", err)
	}
	err = s.tx(ctx, func(tx *wtx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtext('herald migrations ' || $1))`, schema); err != nil {
			return fmt.Errorf("lock: %w", err)
		}
		if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (version TEXT PRIMARY KEY, applied_at BIGINT NOT NULL)`); err != nil {
			return fmt.Errorf("migrations table: %w", err)
		}
		x := pgTx{ctx, tx, s}
		for _, m := range ms {
			if done, err := sqlstore.Applied(x, m.Version); err != nil || done {
				if err != nil {
					return err
				}
				continue
			}
			if _, err := tx.Exec(ctx, m.Body); err != nil {
				return fmt.Errorf("migration %s: %w", m.Version, err)
			}
			if err := sqlstore.MarkApplied(x, m.Version); err != nil {
				return fmt.Errorf("migration %s: %w", m.Version, err)
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("postgres: migrate: %w", err)
	}
	return nil
}

// maxTries bounds how often tx runs a transaction that lost a race
// (a serialization failure, a deadlock, or a unique key another
// transaction took first).
const maxTries = 8

// wtx is a write transaction: it remembers the notifications it sent, so
// that tx can wait for them to come back (see notify).
type wtx struct {
	pgx.Tx
	notes []uint64
}

// tx runs fn in a transaction and commits it, running it again when it
// lost a race with another transaction. fn's own errors roll it back and
// are returned as they are. When it commits, the changes it announced
// have reached this handle's Notifier before tx returns.
func (s *Store) tx(ctx context.Context, fn func(tx *wtx) error) error {
	if err := s.usable(); err != nil {
		return err
	}
	for try := 1; ; try++ {
		w := &wtx{}
		err := s.runTx(ctx, w, fn)
		if err != nil {
			s.forgetNotes(w.notes)
			// A pooled connection that the database closed (it
			// restarted) fails before anything is sent: another
			// connection is tried.
			if try == maxTries || !(retryable(err) || pgconn.SafeToRetry(err)) || ctx.Err() != nil {
				return unavailable(err)
			}
			continue
		}
		s.awaitNotes(ctx, w.notes)
		return nil
	}
}

// runTx runs fn in one transaction and commits it, timing both for the
// store metrics; a failed fn or commit leaves nothing written.
func (s *Store) runTx(ctx context.Context, w *wtx, fn func(tx *wtx) error) (err error) {
	start := time.Now()
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return err
	}
	defer func() {
		// After a commit, Rollback does nothing and says ErrTxClosed;
		// after a failure (or a panic in fn) it undoes the transaction.
		if rbErr := tx.Rollback(context.WithoutCancel(ctx)); rbErr != nil && !errors.Is(rbErr, pgx.ErrTxClosed) {
			err = errors.Join(err, rbErr)
		}
	}()
	w.Tx = tx
	if err := fn(w); err != nil {
		return err
	}
	commitStart := time.Now()
	if err := tx.Commit(ctx); err != nil {
		return err
	}
	s.metrics.observe(time.Since(start), time.Since(commitStart))
	return nil
}

// retryable reports whether err is a lost race that a new transaction
// may win.
func retryable(err error) bool {
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) {
		return false
	}
	switch pgErr.Code {
	case "40001", "40P01", "23505": // serialization failure, deadlock, unique violation
		return true
	}
	return false
}

// usable returns store.ErrClosedStore once Close began.
func (s *Store) usable() error {
	s.closeMu.Lock()
	defer s.closeMu.Unlock()
	if s.closed {
		return store.ErrClosedStore
	}
	return nil
}

// isNoRows reports whether err is a query that found no row.
func isNoRows(err error) bool { return errors.Is(err, pgx.ErrNoRows) }

// Notifier implements store.Store.
func (s *Store) Notifier() store.Notifier { return s.hub }

// Close implements store.Store: it stops listening and closes the pool,
// after the calls in flight return.
func (s *Store) Close() error {
	s.closeMu.Lock()
	if s.closed {
		s.closeMu.Unlock()
		return nil
	}
	s.closed = true
	s.closeMu.Unlock()
	s.cancel()
	s.wg.Wait()
	s.pool.Close()
	return nil
}

// loadDeliveryIDs reads the delivery id key, making it at the first start
// that finds none (sqlstore.Store.LoadDeliveryIDs).
func (s *Store) loadDeliveryIDs(ctx context.Context) error {
	return s.tx(ctx, func(tx *wtx) error { return s.LoadDeliveryIDs(pgTx{ctx, tx, s}) })
}
