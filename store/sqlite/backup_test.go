package sqlite_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/heraldstreams/herald/store"
	"github.com/heraldstreams/herald/store/sqlite"
)

// A backup taken while the store commits appends holds every append
// acknowledged before it began, and restores into a directory a store
// opens.
func TestBackupWhileWritingAndRestore(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	now := time.Now()
	s := open(t, t.TempDir())
	const writers = 4
	for w := range writers {
		if _, err := s.StreamCreate(ctx, &store.StreamCreateParams{Path: fmt.Sprintf("/w%d", w), ContentType: "text/plain", Now: now}); err != nil {
			t.Fatal(err)
		}
	}
	// Each writer appends "<n>," until stopped; acked[w] is how many of
	// its appends were acknowledged.
	var mu sync.Mutex
	acked := make([]int, writers)
	stop := make(chan struct{})
	started := make(chan struct{}, writers)
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; ; n++ {
				select {
				case <-stop:
					return
				default:
				}
				if _, err := s.StreamAppend(ctx, &store.StreamAppendParams{Path: fmt.Sprintf("/w%d", w), ContentType: "text/plain", Data: fmt.Appendf(nil, "%d,", n), Now: now}); err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				acked[w] = n + 1
				mu.Unlock()
				if n == 10 {
					started <- struct{}{}
				}
			}
		}()
	}
	for range writers {
		<-started
	}
	mu.Lock()
	before := append([]int(nil), acked...)
	mu.Unlock()
	dest := filepath.Join(t.TempDir(), "herald-backup.db")
	size, err := sqlite.Backup(ctx, s.(*sqlite.Store).Dir(), dest)
	close(stop)
	wg.Wait()
	if err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(dest); err != nil || st.Size() != size || st.Mode().Perm() != 0o600 {
		t.Fatalf("backup file %v, mode %v, size %d", err, st.Mode(), size)
	}
	if _, err := sqlite.Backup(ctx, s.(*sqlite.Store).Dir(), dest); err == nil || !strings.Contains(err.Error(), "exists") {
		t.Fatalf("a second backup to the same file: %v", err)
	}

	restored := t.TempDir()
	if _, err := sqlite.Restore(ctx, dest, restored, false); err != nil {
		t.Fatal(err)
	}
	r := open(t, restored)
	for w, n := range before {
		res, err := r.StreamRead(ctx, &store.StreamReadParams{Path: fmt.Sprintf("/w%d", w), From: -1, MaxBytes: 1 << 20, Now: now})
		if err != nil {
			t.Fatal(err)
		}
		var want strings.Builder
		for i := range n {
			fmt.Fprintf(&want, "%d,", i)
		}
		if !strings.HasPrefix(string(res.Data), want.String()) {
			t.Errorf("writer %d: restored %q, want it to start with its %d acknowledged appends", w, res.Data, n)
		}
	}
}

// Restore refuses a directory a store runs on, one holding a database
// (unless told to replace it), and a file that is not a Herald database;
// replacing drops the old database's write-ahead log.
func TestRestoreRefusals(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	now := time.Now()
	live := t.TempDir()
	s := open(t, live)
	if _, err := s.StreamCreate(ctx, &store.StreamCreateParams{Path: "/kept", ContentType: "text/plain", Now: now}); err != nil {
		t.Fatal(err)
	}
	backup := filepath.Join(t.TempDir(), "b.db")
	if _, err := sqlite.Backup(ctx, live, backup); err != nil {
		t.Fatal(err)
	}
	if _, err := sqlite.Restore(ctx, backup, live, true); err == nil || !strings.Contains(err.Error(), "in use") {
		t.Fatalf("restore into a running store's directory: %v", err)
	}

	stopped := t.TempDir()
	other := open(t, stopped)
	if _, err := other.StreamCreate(ctx, &store.StreamCreateParams{Path: "/replaced", ContentType: "text/plain", Now: now}); err != nil {
		t.Fatal(err)
	}
	if err := other.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := sqlite.Restore(ctx, backup, stopped, false); !errors.Is(err, sqlite.ErrDataDirNotEmpty) {
		t.Fatalf("restore over a database: %v", err)
	}
	// A write-ahead log left beside the old database must not be
	// applied to the restored one.
	if err := os.WriteFile(filepath.Join(stopped, "herald.db-wal"), []byte("stale"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := sqlite.Restore(ctx, backup, stopped, true); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(stopped, "herald.db-wal")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the old WAL is still there: %v", err)
	}
	r := open(t, stopped)
	if _, err := r.StreamGet(ctx, &store.StreamGetParams{Path: "/kept", Now: now}); err != nil {
		t.Errorf("restored stream: %v", err)
	}
	if _, err := r.StreamGet(ctx, &store.StreamGetParams{Path: "/replaced", Now: now}); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("the replaced database's stream: %v", err)
	}

	junk := filepath.Join(t.TempDir(), "junk.db")
	if err := os.WriteFile(junk, []byte(strings.Repeat("not a database ", 100)), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := sqlite.Restore(ctx, junk, t.TempDir(), false); err == nil {
		t.Fatal("restored a file that is not a database")
	}
	if _, err := sqlite.Backup(ctx, t.TempDir(), filepath.Join(t.TempDir(), "x.db")); err == nil || !strings.Contains(err.Error(), "no Herald database") {
		t.Fatalf("backup of an empty directory: %v", err)
	}
}
