package sqlite_test

import (
	"bytes"
	"context"
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
	s, err := sqlite.Open(context.Background(), sqlite.Config{Dir: dir, ReadConns: 2, Box: suiteBox}) // a small pool: no read may wait for a connection while holding one
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return s
}

func TestStore(t *testing.T) { storetest.Run(t, factory{}) }

func TestSecondProcessIsRefused(t *testing.T) {
	dir := t.TempDir()
	open(t, dir)
	if s, err := sqlite.Open(context.Background(), sqlite.Config{Dir: dir}); err == nil {
		s.Close()
		t.Fatal("a second store opened the same data directory")
	}
}
