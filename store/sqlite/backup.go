package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// dbFile is the database's file name in the data directory; SQLite keeps
// its write-ahead log and shared-memory index beside it, under the same
// name with -wal and -shm added.
const dbFile = "herald.db"

// ErrDataDirNotEmpty is Restore's refusal to replace the database of a
// data directory that has one, unless told to.
var ErrDataDirNotEmpty = errors.New("sqlite: the data directory holds a database already")

// Backup writes a consistent snapshot of the database of data directory
// dir to the new file dest, whether or not a Herald is running on dir
// and writing meanwhile. It reads the database alongside that Herald, as
// any SQLite reader does (sharing its write-ahead log, so every
// transaction committed before the snapshot began is in it, and none
// after), and never takes the directory's lock. The snapshot is one
// self-contained database file (SQLite's VACUUM INTO, into which the
// bytes of the streams are then copied from their segments), checked, written
// under a temporary name, synced and then renamed to dest, so dest
// exists only whole. It holds everything Herald keeps in the directory
// but the key-encryption key file: secrets stay sealed under that key,
// which is backed up on its own.
func Backup(ctx context.Context, dir, dest string) (size int64, err error) {
	src := filepath.Join(dir, dbFile)
	if _, err := os.Stat(src); err != nil {
		return 0, fmt.Errorf("sqlite: no Herald database in %s: %w", dir, err)
	}
	if _, err := os.Lstat(dest); err == nil {
		return 0, fmt.Errorf("sqlite: %s exists: a backup never replaces a file", dest)
	}
	tmp := dest + ".partial"
	// Created empty and 0600 first: VACUUM INTO writes into an empty
	// file with the mode it has, and the snapshot holds Herald's data.
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return 0, fmt.Errorf("sqlite: create backup: %w", err)
	}
	if err := f.Close(); err != nil {
		return 0, errors.Join(fmt.Errorf("sqlite: create backup: %w", err), os.Remove(tmp))
	}
	defer func() {
		if err != nil {
			err = errors.Join(err, removeIfExists(tmp))
		}
	}()
	db, err := openReadOnly(src, false)
	if err != nil {
		return 0, err
	}
	if _, err := schemaVersion(ctx, db); err != nil {
		return 0, errors.Join(err, db.Close())
	}
	if _, err := db.ExecContext(ctx, `VACUUM INTO ?`, tmp); err != nil {
		return 0, errors.Join(fmt.Errorf("sqlite: back up %s: %w", src, err), db.Close())
	}
	if err := db.Close(); err != nil {
		return 0, fmt.Errorf("sqlite: back up %s: %w", src, err)
	}
	if err := inlineSegments(ctx, dir, tmp); err != nil {
		return 0, err
	}
	if _, err := checkDatabase(ctx, tmp); err != nil {
		return 0, err
	}
	if err := syncFile(tmp); err != nil {
		return 0, err
	}
	if err := os.Rename(tmp, dest); err != nil {
		return 0, fmt.Errorf("sqlite: back up: %w", err)
	}
	if err := syncDir(filepath.Dir(dest)); err != nil {
		return 0, err
	}
	st, err := os.Stat(dest)
	if err != nil {
		return 0, err
	}
	return st.Size(), nil
}

// Restore puts the backup src (made by Backup) in data directory dir as
// its database, for a Herald started on dir afterwards. It takes the
// directory's lock, so it refuses a directory a Herald is running on,
// and refuses one that holds a database already unless replace is set
// (ErrDataDirNotEmpty). The backup is checked first: an SQLite database
// that passes SQLite's quick check and whose schema this Herald knows
// (not written by a newer one). The copy is written under a temporary
// name, synced and renamed into place, after the old database's
// write-ahead log is removed (it belongs to the old database). It
// returns the schema version of the backup.
func Restore(ctx context.Context, src, dir string, replace bool) (version string, err error) {
	if version, err = checkDatabase(ctx, src); err != nil {
		return "", err
	}
	if latest := latestMigration(); version > latest {
		return "", fmt.Errorf("sqlite: %s has schema version %s, newer than this Herald's %s: restore it with the Herald that wrote it, or a newer one", src, version, latest)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("sqlite: create data dir: %w", err)
	}
	lock, err := lockDir(dir)
	if err != nil {
		return "", err
	}
	defer func() { err = errors.Join(err, lock.Close()) }()
	target := filepath.Join(dir, dbFile)
	if st, err := os.Stat(target); err == nil && st.Size() > 0 && !replace {
		return "", fmt.Errorf("%w: %s", ErrDataDirNotEmpty, target)
	}
	tmp := target + ".restore"
	if err := copyFile(src, tmp); err != nil {
		return "", errors.Join(err, removeIfExists(tmp))
	}
	for _, stale := range []string{target + "-wal", target + "-shm"} {
		if err := removeIfExists(stale); err != nil {
			return "", errors.Join(err, removeIfExists(tmp))
		}
	}
	if err := os.Rename(tmp, target); err != nil {
		return "", errors.Join(fmt.Errorf("sqlite: restore: %w", err), removeIfExists(tmp))
	}
	// The old database's segments go too (the backup holds its bytes);
	// ones left by a crash here are deleted at open, which finds them
	// unknown to the database.
	if err := os.RemoveAll(filepath.Join(dir, segDir)); err != nil {
		return "", fmt.Errorf("sqlite: restore: %w", err)
	}
	return version, syncDir(dir)
}

// openReadOnly opens the database file read-only on one connection;
// immutable says no other process may be writing it (a backup file),
// so SQLite needs no lock and no shared-memory file beside it.
func openReadOnly(file string, immutable bool) (*sql.DB, error) {
	dsn := "file:" + file + "?mode=ro&_pragma=busy_timeout(10000)"
	if immutable {
		dsn += "&immutable=1"
	}
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("sqlite: open %s: %w", file, err)
	}
	db.SetMaxOpenConns(1)
	return db, nil
}

// checkDatabase checks that file is a whole Herald database (SQLite's
// quick check) and returns its schema version.
func checkDatabase(ctx context.Context, file string) (string, error) {
	if _, err := os.Stat(file); err != nil {
		return "", fmt.Errorf("sqlite: backup: %w", err)
	}
	db, err := openReadOnly(file, true)
	if err != nil {
		return "", err
	}
	version, err := schemaVersion(ctx, db)
	if err == nil {
		var result string
		if err = db.QueryRowContext(ctx, `PRAGMA quick_check`).Scan(&result); err == nil && result != "ok" {
			err = fmt.Errorf("sqlite: %s is damaged: %s", file, result)
		}
	}
	return version, errors.Join(err, db.Close())
}

// schemaVersion is the last migration applied to the database: it tells
// a Herald database from any other file.
func schemaVersion(ctx context.Context, db *sql.DB) (string, error) {
	var version sql.NullString
	if err := db.QueryRowContext(ctx, `SELECT max(version) FROM schema_migrations`).Scan(&version); err != nil || !version.Valid {
		return "", fmt.Errorf("sqlite: not a Herald database: %v", errors.Join(err, errors.New("no migration applied")))
	}
	return version.String, nil
}

// latestMigration is the version of the last migration this Herald has.
func latestMigration() string {
	names, err := fs.Glob(migrations, "migrations/*.sql")
	if err != nil || len(names) == 0 {
		panic("sqlite: no embedded migrations") // the embed pattern guarantees some
	}
	sort.Strings(names)
	return strings.TrimSuffix(filepath.Base(names[len(names)-1]), ".sql")
}

// copyFile copies src to the new file dst (0600) and syncs it.
func copyFile(src, dst string) (err error) {
	in, err := os.Open(src)
	if err != nil {
		return fmt.Errorf("sqlite: restore: %w", err)
	}
	defer func() { err = errors.Join(err, in.Close()) }()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return fmt.Errorf("sqlite: restore: %w", err)
	}
	if _, err := io.Copy(out, in); err != nil {
		return errors.Join(fmt.Errorf("sqlite: restore: %w", err), out.Close())
	}
	if err := out.Sync(); err != nil {
		return errors.Join(fmt.Errorf("sqlite: restore: %w", err), out.Close())
	}
	return out.Close()
}

// syncFile flushes a file's contents to disk.
func syncFile(name string) error {
	f, err := os.OpenFile(name, os.O_RDWR, 0)
	if err != nil {
		return fmt.Errorf("sqlite: sync %s: %w", name, err)
	}
	return errors.Join(f.Sync(), f.Close())
}

// syncDir flushes a directory, so a file renamed into it stays there
// after a crash.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("sqlite: sync %s: %w", dir, err)
	}
	return errors.Join(d.Sync(), d.Close())
}

func removeIfExists(name string) error {
	if err := os.Remove(name); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}
