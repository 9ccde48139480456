// Package testenv gives Herald's tests the services beyond Go that some of
// them need: a PostgreSQL server, Chromium, a command such as
// systemd-analyze. Under `go test -short` a test whose service is missing
// is skipped with a message naming the service and how to run it; in the
// full suite (scripts/test.sh, CI) it fails, so a missing service never
// passes for a green run.
//
// It also counts the process's goroutines by function (Goroutines), for
// the tests of what a service keeps running.
package testenv

import (
	"os"
	"os/exec"
	"testing"
)

// PostgresURLEnv names the environment variable that holds the URL of the
// PostgreSQL server the tests use (scripts/postgres.sh sets it).
const PostgresURLEnv = "HERALD_TEST_POSTGRES_URL"

// missing skips the test under -short and fails it otherwise, with what
// is missing and how to provide it.
func missing(t testing.TB, what, how string) {
	t.Helper()
	report(t, testing.Short(), what, how)
}

// report skips (short) or fails t.
func report(t testing.TB, short bool, what, how string) {
	t.Helper()
	if short {
		t.Skipf("-short: %s; to run this test, %s and run it without -short", what, how)
		return
	}
	t.Fatalf("%s: %s (or run `go test -short` to skip the tests that need it)", what, how)
}

// NeedPostgres returns the URL of the test PostgreSQL server
// ($HERALD_TEST_POSTGRES_URL).
func NeedPostgres(t testing.TB) string {
	t.Helper()
	url := os.Getenv(PostgresURLEnv)
	if url == "" {
		missing(t, "PostgreSQL is needed and "+PostgresURLEnv+" is not set",
			"start a throwaway server with `source scripts/postgres.sh` (scripts/test.sh starts one)")
	}
	return url
}

// NeedChromium returns the path of Chromium (chromium or
// chromium-browser on PATH).
func NeedChromium(t testing.TB) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	missing(t, "Chromium is needed and neither chromium nor chromium-browser is on PATH",
		"install it (Debian: apt-get install -y chromium)")
	return ""
}

// NeedCommand returns the path of the command name on PATH; install says
// how to get it.
func NeedCommand(t testing.TB, name, install string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		missing(t, name+" is needed and is not on PATH", install)
	}
	return p
}
