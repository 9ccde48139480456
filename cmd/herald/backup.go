package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/heraldstreams/herald/store/sqlite"
)

const backupUsage = `Back up and restore the embedded store (--store sqlite).

Usage:
  herald backup [--data-dir DIR] DEST
      Write a consistent snapshot of the database in DIR to the new file
      DEST, while Herald runs and takes writes (or with it stopped). DEST
      holds every change committed before the backup began. It does not
      hold the key-encryption key: back that up separately, never beside
      the database.
  herald restore [--data-dir DIR] [--force] SRC
      Put the backup SRC in DIR as its database, with Herald stopped.
      A directory that holds a database already is refused unless
      --force is given. Start Herald with the key-encryption key the
      backup was written with.

--data-dir (default ./data) may also be set as HERALD_DATA_DIR. With
--store postgres, use PostgreSQL's pg_dump and pg_restore instead (see
docs/operations.md).
`

// runBackup is `herald backup` (restore false) and `herald restore`.
func runBackup(ctx context.Context, restore bool, args []string, stdout, stderr io.Writer, env func(string) (string, bool)) error {
	name := "backup"
	if restore {
		name = "restore"
	}
	if len(args) > 0 && (args[0] == "help" || args[0] == "--help" || args[0] == "-h") {
		fmt.Fprint(stdout, backupUsage)
		return nil
	}
	fs := flag.NewFlagSet("herald "+name, flag.ContinueOnError)
	fs.Usage = func() { fmt.Fprint(fs.Output(), backupUsage) }
	dataDir := fs.String("data-dir", "./data", "data directory of the embedded store")
	force := false
	if restore {
		fs.BoolVar(&force, "force", false, "replace the database the data directory holds")
	}
	if err := applyEnv(fs, env); err != nil {
		return err
	}
	if err := parseFlags(fs, args, stdout, stderr); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	if fs.NArg() != 1 {
		fmt.Fprint(stderr, backupUsage)
		return fmt.Errorf("%w: herald %s takes one file name, got %q", errUsage, name, fs.Args())
	}
	if backend, ok := env(envName("store")); ok && backend == "postgres" {
		return fmt.Errorf("%w: HERALD_STORE is postgres: back up and restore PostgreSQL with pg_dump and pg_restore (docs/operations.md)", errUsage)
	}
	file := fs.Arg(0)
	if !restore {
		size, err := sqlite.Backup(ctx, *dataDir, file)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "backed up %s to %s (%d bytes). The key-encryption key is not in it: keep it backed up apart.\n", *dataDir, file, size)
		return nil
	}
	version, err := sqlite.Restore(ctx, file, *dataDir, force)
	if errors.Is(err, sqlite.ErrDataDirNotEmpty) {
		return fmt.Errorf("%w: %v; stop Herald and add --force to replace it", errUsage, err)
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "restored %s into %s (schema %s). Start Herald with the key-encryption key this backup was written with.\n", file, *dataDir, version)
	return nil
}
