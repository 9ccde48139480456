// Package sqlite is Herald's embedded storage backend: one SQLite database
// in the data directory, written by one committer goroutine that group
// commits concurrent writes (one transaction and one fsync for many appends)
// and read through a pool of read-only connections.
//
// The process that opens the directory owns it (an exclusive lock file), so
// the committer can cache the metadata of the streams in use (cache.go):
// writes validate against it without a query, and readers take immutable
// snapshots of it. A stream not cached is read from its row when used;
// nothing reads every stream, at open or later. What the backends share is written once in package sqlstore, whose
// writes this one runs in the committer's batches.
package sqlite

import (
	"context"
	"crypto/rand"
	"database/sql"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/heraldstreams/herald/internal/privfile"
	"github.com/heraldstreams/herald/internal/secretbox"
	"github.com/heraldstreams/herald/store"
	"github.com/heraldstreams/herald/store/internal/commitmetrics"
	"github.com/heraldstreams/herald/store/sqlstore"
	"github.com/heraldstreams/herald/streamrules"
	_ "modernc.org/sqlite" // registers the "sqlite" database/sql driver
)

//go:embed migrations/*.sql
var migrations embed.FS

// Config configures Open.
type Config struct {
	// Dir is the data directory; it is created if missing.
	Dir    string
	Logger *slog.Logger
	// MaxBatch bounds how many writes share one transaction (default 512).
	MaxBatch int
	// ReadConns is the size of the read connection pool (default 8).
	ReadConns int
	// TouchFlushInterval is how often read-driven TTL renewals are written
	// (default 1s).
	TouchFlushInterval time.Duration
	// CheckpointInterval is how often the WAL is checkpointed into the
	// database file in the background (default 1s).
	CheckpointInterval time.Duration
	// StreamCache bounds how many streams' metadata the store keeps in
	// memory (default DefaultStreamCache); the others are read from
	// their rows when used.
	StreamCache int
	// RelaxedInterval is the least time between two commits made only of
	// relaxed writes (the delivery engine's bookkeeping); writes that come
	// meanwhile join the next one (default 5ms; negative: no wait).
	RelaxedInterval time.Duration
	// Box encrypts the secret columns (signing secrets, custom header
	// values, token keys; see sqlstore.SecretColumns). Open seals the plaintext
	// values a store holds and rewraps those of older keys, and refuses a
	// Box that cannot open what was sealed before. Nil keeps secrets in
	// plaintext (tests); a store whose secrets are encrypted does not open
	// without a Box.
	Box *secretbox.Box
	// SegmentSize is the size past which the stream bytes go to a new
	// segment file (default 64 MiB; see segLog).
	SegmentSize int64
}

// Store is the SQLite implementation of store.Store: the core
// (sqlstore) over the committer and the read pool.
type Store struct {
	*sqlstore.Store
	// appendOps are the appends' ops, each with its channel, which the
	// committer signals once rather than closes: an append costs neither
	// allocation. The pool is the store's, not the process's, so a
	// channel serves only the callers of the store that made it (a test
	// runs each store in its own synctest bubble, whose channels no other
	// bubble may use).
	appendOps sync.Pool
	cfg       Config
	log       *slog.Logger
	lock      *os.File
	writer    *sql.DB
	wconn     *sql.Conn
	// syncFull is the writer's synchronous setting (FULL, or NORMAL for
	// a batch of relaxed writes); only the committer touches it.
	syncFull bool
	// metrics measure the committer (see newCommitMetrics).
	metrics *commitmetrics.Metrics
	// walFrames is the WAL's size in frames at the last checkpoint.
	walFrames atomic.Int64
	reader    *sql.DB
	// ckpt is the connection that checkpoints the WAL in the background.
	ckpt *sql.DB
	// readChunks is chunksFromSQL prepared on the read pool.
	readChunks *sql.Stmt
	hub        *store.Hub

	ops     chan op
	stop    chan struct{}
	wg      sync.WaitGroup
	closeMu sync.RWMutex // held for reading by submitters, for writing by Close
	closed  bool
	stmts   *statements
	// wprepared caches statements prepared on the writer connection;
	// only the committer uses it.
	wprepared map[string]*sql.Stmt
	// rprepared caches statements prepared on the read pool.
	rprepMu   sync.Mutex
	rprepared map[string]*sql.Stmt
	// cache holds the metadata of the streams in use (see streamCache).
	cache   *streamCache
	touchMu sync.Mutex
	touches map[int64]int64 // read-driven TTL renewals (Unix ns) not yet written
	// producers caches idempotent producer state by stream id and
	// producer id; only the committer reads or writes it.
	producers map[int64]map[string]streamrules.ProducerState
	recent    *recentCache
	// seg holds the stream bytes (see segLog).
	seg *segLog
	// seq is the change sequence number the stream rows written now
	// take, reserved the last reservation committed (committer only; see
	// changes.go).
	seq, reserved int64
	// batches counts the committer's batches, and broken holds the
	// segment log's error once it is broken (see idle.go).
	batches atomic.Int64
	broken  atomic.Pointer[error]
	// wal is the checkpoint loop's (see walWatch).
	wal walWatch
}

var _ store.Store = (*Store)(nil)

// Open opens (creating if needed) the database in cfg.Dir, applies
// migrations, loads stream metadata and starts the committer.
func Open(ctx context.Context, cfg Config) (*Store, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.MaxBatch <= 0 {
		cfg.MaxBatch = 512
	}
	if cfg.ReadConns <= 0 {
		cfg.ReadConns = 8
	}
	if cfg.TouchFlushInterval <= 0 {
		cfg.TouchFlushInterval = time.Second
	}
	if cfg.CheckpointInterval <= 0 {
		cfg.CheckpointInterval = time.Second
	}
	if cfg.SegmentSize <= 0 {
		cfg.SegmentSize = segmentSize
	}
	if cfg.RelaxedInterval == 0 {
		cfg.RelaxedInterval = 5 * time.Millisecond
	}
	// Only Herald's user may enter the directory: it holds the database,
	// and by default the key-encryption key. An existing one others may
	// enter (made by hand with the default umask, or by an older Herald)
	// is made private rather than refused: nothing in it is theirs, and
	// Herald's own files in it are 0600 already.
	wider, err := privfile.MakeDir(cfg.Dir)
	if err != nil {
		return nil, fmt.Errorf("sqlite: data dir: %w", err)
	}
	if wider != 0 {
		cfg.Logger.Warn(fmt.Sprintf("the data directory was accessible to other users (mode %04o); made it 0700", wider), "data_dir", cfg.Dir)
	}
	lock, err := lockDir(cfg.Dir)
	if err != nil {
		return nil, err
	}
	s := &Store{
		cfg:       cfg,
		log:       cfg.Logger,
		lock:      lock,
		hub:       store.NewHub(),
		ops:       make(chan op, 4096),
		stop:      make(chan struct{}),
		cache:     newStreamCache(cfg.StreamCache),
		touches:   make(map[int64]int64),
		producers: make(map[int64]map[string]streamrules.ProducerState),
		recent:    newRecentCache(),
		wprepared: make(map[string]*sql.Stmt),
		syncFull:  true,
		rprepared: make(map[string]*sql.Stmt),
		metrics:   newCommitMetrics(),
	}
	owner := make([]byte, 8)
	if _, err := rand.Read(owner); err != nil {
		return nil, errors.Join(fmt.Errorf("sqlite: process id: %w", err), lock.Close())
	}
	// The owner names this process in the leases it takes (see claims.go).
	s.Store = sqlstore.New(sqlstore.Config{Backend: backend{s}, Dialect: dialect, Box: cfg.Box, Logger: cfg.Logger,
		Owner: hex.EncodeToString(owner), PendingAccess: s.pendingAccess})
	if err := s.open(ctx); err != nil {
		s.closeHandles()
		return nil, err
	}
	s.wg.Add(3)
	go s.commitLoop()
	go s.touchLoop()
	go s.checkpointLoop()
	return s, nil
}

func (s *Store) open(ctx context.Context) error {
	file := filepath.Join(s.cfg.Dir, dbFile)
	// SQLite creates its WAL and shared-memory files with the database
	// file's mode: creating the database 0600 first keeps all three
	// readable by Herald's user alone.
	f, err := os.OpenFile(file, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return fmt.Errorf("sqlite: create database file: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("sqlite: create database file: %w", err)
	}
	// synchronous(FULL): a commit fsyncs the WAL before it returns, so an
	// acknowledged write survives power loss. A batch made only of
	// appends (and relaxed writes) switches to NORMAL: its segment
	// record's fdatasync makes it durable (see syncFor). Pages are SQLite's
	// default 4 KiB: every commit writes each page it changed to the WAL
	// whole, and small commits change many pages.
	dsn := "file:" + file + "?_pragma=journal_mode(WAL)&_pragma=synchronous(FULL)" +
		"&_pragma=busy_timeout(10000)&_pragma=foreign_keys(OFF)&_time_format=sqlite"
	if s.writer, err = sql.Open("sqlite", dsn+"&_pragma=mmap_size("+strconv.Itoa(writerMmap)+")"); err != nil {
		return fmt.Errorf("sqlite: open: %w", err)
	}
	s.writer.SetMaxOpenConns(1)
	if s.wconn, err = s.writer.Conn(ctx); err != nil {
		return fmt.Errorf("sqlite: open: %w", err)
	}
	if err := migrate(ctx, s.wconn, ""); err != nil {
		return err
	}
	if s.seg, err = openSegLog(ctx, s.wconn, s.cfg.Dir, s.cfg.SegmentSize); err != nil {
		return err
	}
	if err := s.moveChunks(ctx); err != nil {
		return err
	}
	if err := s.prepareSecrets(ctx); err != nil {
		return err
	}
	if err := s.startClaims(ctx); err != nil {
		return err
	}
	// The committer never checkpoints (that would stall every append
	// waiting on it); checkpointLoop does, on its own connection.
	if _, err := s.wconn.ExecContext(ctx, `PRAGMA wal_autocheckpoint = 0`); err != nil {
		return fmt.Errorf("sqlite: configure checkpoints: %w", err)
	}
	// Every op of a batch runs in its own savepoint (a failed op rolls
	// back alone), so SQLite keeps the pages an op changes in a
	// sub-journal: in memory, not in a temporary file written at every
	// op. It is bounded by the pages one batch changes.
	if _, err := s.wconn.ExecContext(ctx, `PRAGMA temp_store = MEMORY`); err != nil {
		return fmt.Errorf("sqlite: configure the writer: %w", err)
	}
	if s.ckpt, err = sql.Open("sqlite", dsn+"&_pragma=journal_size_limit(67108864)"); err != nil {
		return fmt.Errorf("sqlite: open checkpointer: %w", err)
	}
	s.ckpt.SetMaxOpenConns(1)
	// Readers do not memory-map the file: mapped pages count in the RSS,
	// per connection, and the kernel maps the cached pages around each
	// one touched (a 1.4 MB index scan over 100,000 consumers mapped 22
	// MB; eight concurrent metric scrapes, 114 MB). Reads go through
	// each connection's page cache (2 MB) and the OS page cache instead,
	// for about 8 % less catch-up read throughput.
	if s.reader, err = sql.Open("sqlite", dsn+"&_pragma=query_only(1)&_pragma=mmap_size(0)"); err != nil {
		return fmt.Errorf("sqlite: open reader: %w", err)
	}
	s.reader.SetMaxOpenConns(s.cfg.ReadConns)
	s.reader.SetMaxIdleConns(s.cfg.ReadConns)
	if s.readChunks, err = s.reader.PrepareContext(ctx, chunksFromSQL); err != nil {
		return fmt.Errorf("sqlite: prepare read: %w", err)
	}
	if err := s.openChangeSeq(ctx); err != nil {
		return err
	}
	if s.stmts, err = prepare(ctx, s.wconn); err != nil {
		return err
	}
	return nil
}

// writerMmap is how much of the database file the writer maps: the
// committer reads the row of each stream it appends to that the stream
// cache does not hold, and the index pages each append changes. Over a
// million streams (a database of 120 MB) nearly every one of those pages
// missed the writer's 2 MB page cache, and cost a pread and a copy of
// 4 KiB; mapped, a page the OS caches is read where it lies: 10 to 20 %
// less CPU an append to a random stream of a million. SQLite never
// writes through the map (it writes the WAL). The pages mapped are the OS
// page cache's: they count in VmRSS as RssFile, the pages the committer
// touched (after appends to every stream of a million, about the whole
// file), and the kernel takes them back under memory pressure. The bound
// keeps that under 256 MiB however large the file; pages past it are
// read as before. Readers stay unmapped (see open).
const writerMmap = 256 << 20

// lockDir takes an exclusive lock on the data directory so two processes
// never write one database (the in-memory metadata relies on it).
func lockDir(dir string) (*os.File, error) {
	f, err := os.OpenFile(filepath.Join(dir, "LOCK"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("sqlite: lock file: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		closeErr := f.Close()
		return nil, errors.Join(fmt.Errorf("sqlite: data directory %s is in use by another process: %w", dir, err), closeErr)
	}
	return f, nil
}

// migrate applies the embedded numbered migrations not yet applied, up to
// and including version until (all of them when until is empty), each in
// its own transaction.
func migrate(ctx context.Context, conn *sql.Conn, until string) error {
	if _, err := conn.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (version TEXT PRIMARY KEY, applied_at INTEGER NOT NULL)`); err != nil {
		return fmt.Errorf("sqlite: migrations table: %w", err)
	}
	ms, err := sqlstore.Migrations(migrations)
	if err != nil {
		return fmt.Errorf("sqlite: %w", err)
	}
	x := connExec{ctx, conn}
	// Every pending migration runs in one transaction: a new database
	// takes all of them with one commit (and one sync of the WAL, one
	// reload of the schema) instead of one each, which is most of what
	// opening an empty data directory costs; and an older one moves to
	// the new schema whole or not at all.
	return execTx(ctx, conn, func() error {
		for _, m := range ms {
			if until != "" && m.Version > until {
				break
			}
			if done, err := sqlstore.Applied(x, m.Version); err != nil || done {
				if err != nil {
					return fmt.Errorf("sqlite: %w", err)
				}
				continue
			}
			if _, err := conn.ExecContext(ctx, m.Body); err != nil {
				return fmt.Errorf("sqlite: migration %s: %w", m.Version, err)
			}
			if err := sqlstore.MarkApplied(x, m.Version); err != nil {
				return fmt.Errorf("sqlite: migration %s: %w", m.Version, err)
			}
		}
		return nil
	})
}

// execTx runs fn between BEGIN IMMEDIATE and COMMIT on conn.
func execTx(ctx context.Context, conn *sql.Conn, fn func() error) error {
	_, err := execTxTimed(ctx, conn, fn)
	return err
}

// execTxTimed is execTx that also returns how long the COMMIT took.
func execTxTimed(ctx context.Context, conn *sql.Conn, fn func() error) (time.Duration, error) {
	if _, err := conn.ExecContext(ctx, `BEGIN IMMEDIATE`); err != nil {
		return 0, err
	}
	if err := fn(); err != nil {
		return 0, rollback(ctx, conn, err)
	}
	start := time.Now()
	if _, err := conn.ExecContext(ctx, `COMMIT`); err != nil {
		return 0, rollback(ctx, conn, err)
	}
	return time.Since(start), nil
}

// rollback ends a failed transaction; err is why it failed.
func rollback(ctx context.Context, conn *sql.Conn, err error) error {
	if _, rbErr := conn.ExecContext(context.WithoutCancel(ctx), `ROLLBACK`); rbErr != nil {
		return errors.Join(err, rbErr)
	}
	return err
}

// Notifier implements store.Store.
func (s *Store) Notifier() store.Notifier { return s.hub }

// Close implements store.Store: it refuses new writes, lets the committer
// finish what was submitted, flushes TTL renewals and closes the database.
func (s *Store) Close() error {
	s.closeMu.Lock()
	if s.closed {
		s.closeMu.Unlock()
		return nil
	}
	s.closed = true
	close(s.stop)
	s.closeMu.Unlock()
	s.wg.Wait()
	return s.closeHandles()
}

func (s *Store) closeHandles() error {
	var errs []error
	if s.stmts != nil {
		errs = append(errs, s.stmts.close())
	}
	for _, st := range s.wprepared {
		errs = append(errs, st.Close())
	}
	for _, st := range s.rprepared {
		errs = append(errs, st.Close())
	}
	if s.readChunks != nil {
		errs = append(errs, s.readChunks.Close())
	}
	if s.wconn != nil {
		errs = append(errs, s.wconn.Close())
	}
	if s.writer != nil {
		errs = append(errs, s.writer.Close())
	}
	if s.reader != nil {
		errs = append(errs, s.reader.Close())
	}
	if s.ckpt != nil {
		errs = append(errs, s.ckpt.Close())
	}
	if s.seg != nil {
		errs = append(errs, s.seg.close())
	}
	if s.lock != nil {
		errs = append(errs, s.lock.Close())
	}
	return errors.Join(errs...)
}

// Dir returns the data directory.
func (s *Store) Dir() string { return s.cfg.Dir }

// WAL sizes, in frames (pages). Past restartWALFrames the committer
// checkpoints the WAL itself, right after a commit: no write can come in
// between, so the checkpoint copies every frame, and the next write
// starts the WAL again from its beginning instead of growing it. Past
// maxWALFrames (readers held on to old snapshots meanwhile), the
// background checkpoint may block writers to bring it back.
const (
	restartWALFrames = 4096
	maxWALFrames     = 65536
)

// checkpointLoop copies the WAL into the database file in the background
// with passive checkpoints, which never block the committer or readers,
// and records how large the WAL is for the committer.
func (s *Store) checkpointLoop() {
	defer s.wg.Done()
	t := time.NewTicker(s.cfg.CheckpointInterval)
	defer t.Stop()
	ctx := context.Background()
	w := &s.wal
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
			batches := s.batches.Load()
			if w.unchanged(batches) {
				continue
			}
			var busy, frames, done int
			if err := s.ckpt.QueryRowContext(ctx, `PRAGMA wal_checkpoint(PASSIVE)`).Scan(&busy, &frames, &done); err != nil {
				s.log.Warn("WAL checkpoint failed", "err", err)
				continue
			}
			w.checkpointed(batches, busy == 0 && done == frames)
			s.walFrames.Store(int64(frames))
			if frames > maxWALFrames {
				if err := s.ckpt.QueryRowContext(ctx, `PRAGMA wal_checkpoint(TRUNCATE)`).Scan(&busy, &frames, &done); err != nil {
					s.log.Warn("WAL truncate checkpoint failed", "err", err)
				}
			}
		}
	}
}

// restartWAL checkpoints the WAL from the committer when it has grown
// past restartWALFrames (see there). It never waits for a lock.
func (s *Store) restartWAL(ctx context.Context) {
	if s.walFrames.Load() <= restartWALFrames {
		return
	}
	var busy, frames, done int
	if err := s.wconn.QueryRowContext(ctx, `PRAGMA wal_checkpoint(PASSIVE)`).Scan(&busy, &frames, &done); err != nil {
		s.log.Warn("WAL checkpoint failed", "err", err)
		return
	}
	s.walFrames.Store(0) // the background loop measures it again
}
