package testenv

import (
	"fmt"
	"strings"
	"sync"
	"testing"
)

// recorder is a testing.TB that records whether it was skipped or failed
// and with what message.
type recorder struct {
	testing.TB
	skipped, failed string
}

func (r *recorder) Helper() {}

func (r *recorder) Skipf(format string, args ...any) { r.skipped = fmt.Sprintf(format, args...) }

func (r *recorder) Fatalf(format string, args ...any) { r.failed = fmt.Sprintf(format, args...) }

// Under -short a missing service skips the test; without it the test
// fails; both say what is missing and how to provide it.
func TestReportSkipsOnlyUnderShort(t *testing.T) {
	t.Parallel()
	const what, how = "PostgreSQL is needed", "source scripts/postgres.sh"
	short := &recorder{TB: t}
	report(short, true, what, how)
	if short.failed != "" || !strings.Contains(short.skipped, what) || !strings.Contains(short.skipped, how) {
		t.Errorf("-short: skipped %q, failed %q", short.skipped, short.failed)
	}
	full := &recorder{TB: t}
	report(full, false, what, how)
	if full.skipped != "" || !strings.Contains(full.failed, what) || !strings.Contains(full.failed, how) {
		t.Errorf("full suite: skipped %q, failed %q", full.skipped, full.failed)
	}
}

// NeedPostgres returns the URL the environment gives.
func TestNeedPostgresReturnsTheURL(t *testing.T) {
	const url = "postgres://herald@127.0.0.1:5432/herald"
	t.Setenv(PostgresURLEnv, url)
	if got := NeedPostgres(t); got != url {
		t.Errorf("NeedPostgres = %q, want %q", got, url)
	}
}

// NeedCommand finds a command on PATH.
func TestNeedCommandFindsACommand(t *testing.T) {
	t.Parallel()
	if got := NeedCommand(t, "go", "install Go"); !strings.HasSuffix(got, "go") {
		t.Errorf("NeedCommand(go) = %q", got)
	}
}

// Goroutines counts the goroutines whose stack holds a function.
func TestGoroutinesCountsByFunction(t *testing.T) {
	stop := make(chan struct{})
	var started sync.WaitGroup
	for range 3 {
		started.Add(1)
		go parkForGoroutinesTest(&started, stop)
	}
	started.Wait()
	if n := Goroutines("testenv.parkForGoroutinesTest"); n != 3 {
		t.Fatalf("counted %d goroutines, want 3", n)
	}
	close(stop)
}

func parkForGoroutinesTest(started *sync.WaitGroup, stop chan struct{}) {
	started.Done()
	<-stop
}
