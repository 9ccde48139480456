package sqlite_test

import (
	"context"
	"testing"

	"github.com/heraldstreams/herald/store"
	"github.com/heraldstreams/herald/store/sqlite"
	"github.com/heraldstreams/herald/store/storetest"
)

type factory struct{}

func (factory) Open(t *testing.T) store.Store {
	return open(t, t.TempDir())
}

func (factory) Reopen(t *testing.T, s store.Store) store.Store {
	dir := s.(*sqlite.Store).Dir()
	if err := s.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	return open(t, dir)
}

func open(t testing.TB, dir string) store.Store {
	t.Helper()
	s, err := sqlite.Open(context.Background(), sqlite.Config{Dir: dir, ReadConns: 2}) // a small pool: no read may wait for a connection while holding one
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
