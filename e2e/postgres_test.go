package e2e

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"path/filepath"
	"testing"
	"time"

	"github.com/heraldstreams/herald/internal/secretbox"
	"github.com/heraldstreams/herald/internal/testenv"
	"github.com/jackc/pgx/v5"
)

// postgresURL returns the URL of a fresh schema on the test PostgreSQL
// server (HERALD_TEST_POSTGRES_URL), dropped after the test. Without a
// server the test fails, or is skipped under -short (testenv).
func postgresURL(t *testing.T) string {
	t.Helper()
	base := testenv.NeedPostgres(t)
	b := make([]byte, 8)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	schema := "e2e_" + hex.EncodeToString(b)
	ctx := context.Background()
	exec := func(sql string) error {
		conn, err := pgx.Connect(ctx, base)
		if err != nil {
			return err
		}
		_, err = conn.Exec(ctx, sql)
		if cerr := conn.Close(ctx); err == nil {
			err = cerr
		}
		return err
	}
	if err := exec(`CREATE SCHEMA ` + schema); err != nil {
		t.Fatalf("create schema: %v", err)
	}
	t.Cleanup(func() {
		if err := exec(`DROP SCHEMA ` + schema + ` CASCADE`); err != nil {
			t.Errorf("drop schema: %v", err)
		}
	})
	u, err := url.Parse(base)
	if err != nil {
		t.Fatalf("HERALD_TEST_POSTGRES_URL: %v", err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}

// TestServeOnPostgres: herald serve keeps its streams in PostgreSQL, and
// they are there after a restart.
func TestServeOnPostgres(t *testing.T) {
	t.Parallel()
	pg := postgresURL(t)
	dir := t.TempDir()
	srv := startHerald(t, dir, "--store", "postgres", "--postgres-url", pg)
	base := srv.base + "/pg"
	for _, s := range []struct {
		method, path string
		hdr          map[string]string
		body         string
		want         int
	}{
		{"PUT", "/log", map[string]string{"Content-Type": "text/plain"}, "hello ", 201},
		{"POST", "/log", map[string]string{"Content-Type": "text/plain"}, "world", 204},
		{"PUT", "/events", map[string]string{"Content-Type": "application/json"}, `[{"a":1},{"b":2}]`, 201},
	} {
		if resp, body := do(t, s.method, base+s.path, s.hdr, s.body); resp.StatusCode != s.want {
			t.Fatalf("%s %s = %d %s, want %d", s.method, s.path, resp.StatusCode, body, s.want)
		}
	}
	check := func(srv *server) {
		t.Helper()
		if resp, body := do(t, "GET", srv.base+"/pg/log?offset=-1", nil, ""); resp.StatusCode != 200 || body != "hello world" {
			t.Fatalf("read log = %d %q", resp.StatusCode, body)
		}
		if resp, body := do(t, "GET", srv.base+"/pg/events?offset=-1", nil, ""); resp.StatusCode != 200 || body != `[{"a":1},{"b":2}]` {
			t.Fatalf("read events = %d %q", resp.StatusCode, body)
		}
	}
	check(srv)
	if err := srv.terminate(30 * time.Second); err != nil {
		t.Fatalf("herald exited with %v\n%s", err, srv.logs)
	}
	// A new data directory: the streams are in the database, not in it.
	again := startHerald(t, t.TempDir(), "--store", "postgres", "--postgres-url", pg, "--kek-file", filepath.Join(dir, secretbox.DefaultFileName))
	check(again)
}
