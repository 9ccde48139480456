package main

import (
	"context"
	"crypto/rand"
	"errors"
	"flag"
	"fmt"
	"github.com/prometheus/client_golang/prometheus"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/heraldstreams/herald/internal/secretbox"
	"github.com/heraldstreams/herald/store"
	"github.com/heraldstreams/herald/store/sqlite"
)

// kekEnv gives the key-encryption keys directly, instead of a key file.
const kekEnv = "HERALD_KEK"

const kekUsage = `Manage the key-encryption key (KEK) that encrypts the secrets in Herald's
database (signing secrets, custom header values, callback token keys).

Usage:
  herald kek rotate [--data-dir DIR] [--kek-file FILE]
      Re-encrypt every secret under a new key, with Herald stopped. With a
      key file (the default: herald.kek in the data directory), a new key
      is made and replaces the old ones in the file once every secret is
      re-encrypted. With HERALD_KEK, put a new key first in it
      (herald kek new makes one), run rotate, then remove the old keys.
  herald kek new
      Print a new key, <id>:<base64 key>, for HERALD_KEK.

--data-dir and --kek-file may also be set as HERALD_DATA_DIR and
HERALD_KEK_FILE.
`

// kekSource says where the key-encryption keys come from.
type kekSource struct {
	// Keys is HERALD_KEK; it wins when set.
	Keys string
	// File is --kek-file; "" is herald.kek in DataDir.
	File    string
	DataDir string
}

// path is the key file, "" when the keys are given directly.
func (k kekSource) path() (string, error) {
	if k.Keys != "" {
		return "", nil
	}
	if k.File != "" {
		return k.File, nil
	}
	return secretbox.DefaultFile(k.DataDir)
}

func (k kekSource) describe() string {
	if p, err := k.path(); err == nil && p != "" {
		return "key file " + p
	}
	return kekEnv
}

// heraldStore is what herald serve needs of a storage backend.
type heraldStore interface {
	store.Store
	store.TokenKeyStore
	// RegisterMetrics registers the backend's own metrics.
	RegisterMetrics(prometheus.Registerer) error
}

// openStore opens a store with its secrets encrypted under the
// configured key-encryption keys: open opens the backend with the Box made
// of them. The key file is created with a new key on first start. A wrong
// key is refused by the store at open, and a key file this start created
// for it is not kept (it could never open the data, and would be mistaken
// for the right one later).
func openStore(ctx context.Context, src kekSource, open func(box *secretbox.Box) (heraldStore, error)) (heraldStore, error) {
	path, err := src.path()
	if err != nil {
		return nil, err
	}
	existed := true
	if path != "" {
		if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
			existed = false
		}
	}
	keys, err := secretbox.Load(secretbox.LoadConfig{Keys: src.Keys, File: src.File, DataDir: src.DataDir, Rand: rand.Reader})
	if err != nil {
		return nil, fmt.Errorf("key-encryption key: %w", err)
	}
	box, err := secretbox.New(keys)
	if err != nil {
		return nil, fmt.Errorf("key-encryption key: %w", err)
	}
	st, err := open(box)
	if errors.Is(err, secretbox.ErrWrongKey) {
		err = fmt.Errorf("%w (keys from %s)", err, src.describe())
		if !existed {
			err = errors.Join(err, os.Remove(path))
		}
	}
	return st, err
}

func runKEK(ctx context.Context, args []string, stdout, stderr io.Writer, env func(string) (string, bool)) error {
	if len(args) == 0 || args[0] == "help" || args[0] == "--help" || args[0] == "-h" {
		if len(args) == 0 {
			fmt.Fprint(stderr, kekUsage)
			return fmt.Errorf("%w: no kek subcommand given", errUsage)
		}
		fmt.Fprint(stdout, kekUsage)
		return nil
	}
	sub, args := args[0], args[1:]
	fs := flag.NewFlagSet("herald kek "+sub, flag.ContinueOnError)
	src := kekSource{}
	switch sub {
	case "rotate":
		fs.StringVar(&src.DataDir, "data-dir", "./data", "data directory of the stopped Herald")
		fs.StringVar(&src.File, "kek-file", "", "key-encryption key file (default: herald.kek in the data directory)")
	case "new":
	default:
		fmt.Fprint(stderr, kekUsage)
		return fmt.Errorf("%w: unknown kek subcommand %q", errUsage, sub)
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
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: unexpected arguments %q", errUsage, fs.Args())
	}
	if sub == "new" {
		k, err := secretbox.GenerateKey(rand.Reader)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintln(stdout, secretbox.FormatKey(k))
		return err
	}
	src.Keys, _ = env(kekEnv)
	return rotateKEK(ctx, src, stdout)
}

// rotateKEK re-encrypts every secret of a stopped Herald's store under a
// new key. The store does the re-encryption when it opens with a new key
// first (in one transaction); around it, a key file holds the new key
// and the old ones until the store is done, then the new key alone, so a
// crash at any point leaves a file that opens the data.
func rotateKEK(ctx context.Context, src kekSource, stdout io.Writer) error {
	if _, err := os.Stat(filepath.Join(src.DataDir, "herald.db")); err != nil {
		return fmt.Errorf("no Herald database in %s: %w", src.DataDir, err)
	}
	path, err := src.path()
	if err != nil {
		return err
	}
	var keys, old []secretbox.Key
	if path == "" {
		if keys, err = secretbox.ParseKeys(src.Keys); err != nil {
			return fmt.Errorf("%s: %w", kekEnv, err)
		}
	} else {
		if old, err = secretbox.ReadFile(path); err != nil {
			return fmt.Errorf("key-encryption key: %w", err)
		}
		next, err := secretbox.GenerateKey(rand.Reader)
		if err != nil {
			return err
		}
		keys = append([]secretbox.Key{next}, old...)
		if err := secretbox.WriteFile(path, keys); err != nil {
			return err
		}
	}
	box, err := secretbox.New(keys)
	if err != nil {
		return err
	}
	st, err := sqlite.Open(ctx, sqlite.Config{Dir: src.DataDir, Box: box, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		err = fmt.Errorf("rotate the key-encryption key (is Herald stopped?): %w", err)
		if path != "" {
			// Nothing was re-encrypted: the file goes back to what it was.
			err = errors.Join(err, secretbox.WriteFile(path, old))
		}
		return err
	}
	stats := st.SecretStats()
	if err := st.Close(); err != nil {
		return err
	}
	if path == "" {
		_, err = fmt.Fprintf(stdout, "%d secrets re-encrypted under key %s; %s may now hold that key alone\n",
			stats.Rewrapped+stats.Sealed, stats.KeyID, kekEnv)
		return err
	}
	if err := secretbox.WriteFile(path, keys[:1]); err != nil {
		return fmt.Errorf("every secret is under key %s, but the old keys could not be removed from %s: %w", stats.KeyID, path, err)
	}
	_, err = fmt.Fprintf(stdout, "%d secrets re-encrypted under key %s; %s now holds that key alone\n",
		stats.Rewrapped+stats.Sealed, stats.KeyID, path)
	return err
}
