package sqlite

import (
	"strings"
	"testing"

	"github.com/heraldstreams/herald/store/sqlstore"
)

// The statements on delivery leases read the index of leases, which
// holds only the deliveries that hold one (a few per endpoint), never the
// whole table; and no index on the lease's holder is kept up to date for
// them.
func TestLeaseQueriesUseTheLeaseIndex(t *testing.T) {
	t.Parallel()
	s := openStore(t, Config{Dir: t.TempDir()})
	for _, q := range []struct {
		name, sql string
		args      []any
	}{
		{"running leases", sqlstore.RunningSQL, []any{"ep", int64(1)}},
		{"next lease end", sqlstore.NextDueSQL, []any{"ep", int64(1)}},
		{"own leases", sqlstore.OwnLeasesSQL[0], []any{"r", int64(1), int64(2)}},
		{"release own", sqlstore.OwnLeasesSQL[1], []any{"r", int64(1), int64(1), int64(2)}},
		{"reap", sqlstore.ClaimHolders[0].ReapSQL(), []any{int64(1), "r"}},
		{"end leases at open", endLeasesSQL, nil},
	} {
		p := queryPlan(t, s, q.sql, q.args...)
		if !strings.Contains(p, "USING INDEX deliveries_lease") || strings.Contains(p, "SCAN deliveries;") ||
			strings.HasSuffix(p, "SCAN deliveries") {
			t.Errorf("%s: plan %s; want the index of leases", q.name, p)
		}
	}
	var n int
	if err := s.reader.QueryRow(`SELECT count(*) FROM sqlite_master WHERE type = 'index' AND name = 'deliveries_lease_owner'`).Scan(&n); err != nil || n != 0 {
		t.Errorf("index on the lease's holder: %d, %v; want none", n, err)
	}
}

// queryPlan is SQLite's plan of q (EXPLAIN QUERY PLAN), its steps joined
// by "; ".
func queryPlan(t *testing.T, s *Store, q string, args ...any) string {
	t.Helper()
	rows, err := s.reader.Query(`EXPLAIN QUERY PLAN `+sqlstore.Numbered(q), args...)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var id, parent, unused int
		var detail string
		if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
			t.Fatal(err)
		}
		out = append(out, detail)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return strings.Join(out, "; ")
}
