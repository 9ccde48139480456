package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"testing"

	"github.com/heraldstreams/herald/store"
)

// TestMigrationKeepsEventIDsOfStoredStreams upgrades a store written before
// id spans: each stream gets a span of an empty nonce over what it holds,
// so the events in it keep the ids they were delivered with.
func TestMigrationKeepsEventIDsOfStoredStreams(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, "herald.db"))
	if err != nil {
		t.Fatal(err)
	}
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := migrate(ctx, conn, "0009_keys"); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.ExecContext(ctx, `INSERT INTO streams (id, path, content_type, tail, accessed_at, created_at) VALUES
		(3, '/full', 'application/json', 120, 0, 0), (4, '/empty', 'application/json', 0, 0, 0)`); err != nil {
		t.Fatal(err)
	}
	if err := errors.Join(conn.Close(), db.Close()); err != nil {
		t.Fatal(err)
	}
	s := openStore(t, Config{Dir: dir})
	got, err := s.EventIDSpans(ctx, &store.EventIDSpansParams{StreamID: 3, From: 0, To: 1000})
	if err != nil || len(got) != 1 || got[0] != (store.EventIDSpan{StreamID: 3, Start: 0, End: 120}) {
		t.Fatalf("spans of a stored stream = %+v, %v", got, err)
	}
	if got, err := s.EventIDSpans(ctx, &store.EventIDSpansParams{StreamID: 4, From: 0, To: 1000}); err != nil || len(got) != 0 {
		t.Fatalf("spans of an empty stream = %+v, %v", got, err)
	}
}
