package sqlite_test

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"testing"

	"github.com/heraldstreams/herald/internal/secretbox"
	"github.com/heraldstreams/herald/store"
	"github.com/heraldstreams/herald/store/sqlite"
	"github.com/heraldstreams/herald/store/storetest"
)

type factory struct{}

func (factory) Open(t *testing.T) store.Store {
	return open(t, t.TempDir())
}

// Peer tries to open the store's data directory again: the lock refuses.
func (factory) Peer(t *testing.T, s store.Store) (store.Store, error) {
	p, err := sqlite.Open(context.Background(), sqlite.Config{Dir: s.(*sqlite.Store).Dir(), Box: suiteBox})
	if err == nil {
		t.Cleanup(func() {
			if err := p.Close(); err != nil {
				t.Errorf("close: %v", err)
			}
		})
	}
	return p, err
}

func (factory) Reopen(t *testing.T, s store.Store) store.Store {
	dir := s.(*sqlite.Store).Dir()
	if err := s.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	return open(t, dir)
}

// suiteBox encrypts the suite's secrets as Herald does: the contract holds
// with them sealed. One key for every store, so Reopen opens them.
var suiteBox = func() *secretbox.Box {
	b, err := secretbox.New([]secretbox.Key{{ID: "suite", Secret: bytes.Repeat([]byte{7}, 32)}})
	if err != nil {
		panic(err)
	}
	return b
}()

func open(t testing.TB, dir string) store.Store {
	t.Helper()
	s, err := openBox(t, dir, suiteBox)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	return s
}

// openBox opens the store in dir whose secrets box seals, closed at the
// end of the test.
func openBox(t testing.TB, dir string, box *secretbox.Box) (store.Store, error) {
	t.Helper()
	s, err := sqlite.Open(context.Background(), sqlite.Config{Dir: dir, ReadConns: 2, Box: box}) // a small pool: no read may wait for a connection while holding one
	if err != nil {
		return nil, err
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return s, nil
}

// OpenBox implements storetest.SecretsFactory.
func (factory) OpenBox(t *testing.T, box *secretbox.Box) store.Store {
	s, err := openBox(t, t.TempDir(), box)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	return s
}

// OpenBoxAt implements storetest.SecretsFactory: s must be closed (one
// process owns a data directory).
func (factory) OpenBoxAt(t *testing.T, s store.Store, box *secretbox.Box) (store.Store, error) {
	return openBox(t, s.(*sqlite.Store).Dir(), box)
}

// Stored implements storetest.SecretsFactory: it reads the database file
// on a connection of its own.
func (factory) Stored(t *testing.T, s store.Store, table, column string) []string {
	db, err := sql.Open("sqlite", "file:"+filepath.Join(s.(*sqlite.Store).Dir(), "herald.db")+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := db.Close(); err != nil {
			t.Error(err)
		}
	}()
	rows, err := db.Query(`SELECT ` + column + ` FROM ` + table + ` WHERE ` + column + ` <> ''`)
	if err != nil {
		t.Fatalf("read %s.%s: %v", table, column, err)
	}
	var out []string
	for rows.Next() {
		var v string
		if err := rows.Scan(&v); err != nil {
			t.Fatal(err)
		}
		out = append(out, v)
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestStore(t *testing.T) {
	t.Parallel()
	storetest.Run(t, factory{})
}

func TestSecondProcessIsRefused(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	open(t, dir)
	if s, err := sqlite.Open(context.Background(), sqlite.Config{Dir: dir}); err == nil {
		s.Close()
		t.Fatal("a second store opened the same data directory")
	}
}
