package sqlstore

import (
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strings"
	"time"
)

// Migration is one numbered schema change of a backend: a file
// migrations/NNNN_name.sql, applied once, in name order.
type Migration struct {
	Version string
	Body    string
}

// Migrations lists the migrations in files (migrations/*.sql), in order.
// Existing migrations never change: a schema change is a new file.
func Migrations(files fs.FS) ([]Migration, error) {
	names, err := fs.Glob(files, "migrations/*.sql")
	if err != nil {
		return nil, fmt.Errorf("list migrations: %w", err)
	}
	sort.Strings(names)
	out := make([]Migration, 0, len(names))
	for _, name := range names {
		body, err := fs.ReadFile(files, name)
		if err != nil {
			return nil, fmt.Errorf("read migration %s: %w", name, err)
		}
		out = append(out, Migration{Version: strings.TrimSuffix(path.Base(name), ".sql"), Body: string(body)})
	}
	return out, nil
}

// Applied reports whether x's database has applied migration version.
func Applied(x Executor, version string) (bool, error) {
	var n int
	if err := x.QueryRow(`SELECT count(*) FROM schema_migrations WHERE version = $1`, version).Scan(&n); err != nil {
		return false, fmt.Errorf("read migrations: %w", err)
	}
	return n > 0, nil
}

// MarkApplied records in x, in the transaction that applied it, that
// migration version is applied.
func MarkApplied(x Executor, version string) error {
	_, err := x.Exec(`INSERT INTO schema_migrations (version, applied_at) VALUES ($1, $2)`, version, time.Now().UnixNano())
	return err
}
