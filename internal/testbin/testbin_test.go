package testbin

import (
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestMain(m *testing.M) { os.Exit(Main(m)) }

// TestBuildOnce: the program runs, and a second Build returns the same
// copy without building again.
func TestBuildOnce(t *testing.T) {
	t.Parallel()
	path := Build(t, "./testdata/hello", false)
	out, err := exec.Command(path, "a", "b").Output()
	if err != nil || string(out) != "hello a b\n" {
		t.Fatalf("%s a b = %q, %v", path, out, err)
	}
	if again := Build(t, "./testdata/hello", false); again != path {
		t.Fatalf("second Build = %s, want %s", again, path)
	}
}

// TestProgramsAreCached: once built, the program is in the go command's
// build cache, where the next package's tests find it (the reason to link
// through go run).
func TestProgramsAreCached(t *testing.T) {
	t.Parallel()
	if _, err := build("./testdata/hello", []string{"run"}); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("go", "env", "GOCACHE").Output()
	if err != nil {
		t.Fatal(err)
	}
	cache := strings.TrimSpace(string(out))
	out, err = exec.Command("go", "run", "-exec", "echo", "./testdata/hello").CombinedOutput()
	if err != nil {
		t.Fatalf("go run -exec echo: %v\n%s", err, out)
	}
	if path := strings.TrimSpace(string(out)); !strings.HasPrefix(path, cache+string(filepath.Separator)) {
		t.Fatalf("go run found %s, want a program in the build cache %s", path, cache)
	}
}

// TestBuildFailureFails: a package that does not build fails the test
// with the go command's output.
func TestBuildFailureFails(t *testing.T) {
	t.Parallel()
	_, err := build("./testdata/nothing-here", []string{"run"})
	if err == nil || !strings.Contains(err.Error(), "nothing-here") {
		t.Fatalf("build of a missing package = %v, want an error naming it", err)
	}
}

// TestShortRunsMoreTestsAtOnce: under -short, parallelPerCPU tests a CPU
// run at once (they meet at a point that needs them all there); without
// -short, Go's default of one a CPU holds.
func TestShortRunsMoreTestsAtOnce(t *testing.T) {
	procs := runtime.GOMAXPROCS(0)
	if flagSet("test.parallel") {
		return // given on the command line: Main left it as given
	}
	if !testing.Short() {
		if got := flag.Lookup("test.parallel").Value.String(); got != strconv.Itoa(procs) {
			t.Fatalf("-test.parallel = %s without -short, want Go's default %d", got, procs)
		}
		return
	}
	n := parallelPerCPU * procs
	var arrived sync.WaitGroup
	arrived.Add(n)
	all := make(chan struct{})
	go func() {
		arrived.Wait()
		close(all)
	}()
	for i := range n {
		t.Run(strconv.Itoa(i), func(t *testing.T) {
			t.Parallel()
			arrived.Done()
			select {
			case <-all:
			case <-time.After(10 * time.Second):
				t.Fatalf("%d parallel tests never ran at once", n)
			}
		})
	}
}
