package sqlstore

import "testing"

func TestNumbered(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		`SELECT 1`: `SELECT 1`,
		`UPDATE t SET a = $1, b = $2 WHERE id = $3`:             `UPDATE t SET a = ?, b = ? WHERE id = ?`,
		`VALUES ($1, $2, $10)`:                                  `VALUES (?1, ?2, ?10)`,
		`WHERE a = $1 AND b = $1`:                               `WHERE a = ?1 AND b = ?1`,
		`SET a = $2, b = $1`:                                    `SET a = ?2, b = ?1`,
		`VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`: `VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
	} {
		if got := Numbered(in); got != want {
			t.Errorf("Numbered(%q) = %q, want %q", in, got, want)
		}
	}
}
