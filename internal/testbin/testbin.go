// Package testbin builds the module's programs for the tests that run them
// as processes (the end-to-end tests, herald-bench's), once per test
// binary, through the go command's build cache.
//
// `go build -o` links the program again each time, and herald is a large
// program: with each package of `go test ./...` linking its own, the links
// alone took longer than most packages' tests. `go run` keeps the programs
// it links in the build cache (Go 1.24 and later), so here the program is
// linked by `go run` and copied out with `-exec cp`: the first package to
// ask links it, the others and every later run with the same sources take
// the cached program.
package testbin

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// built is one program built for the test binary.
type built struct {
	once sync.Once
	path string
	err  error
}

var (
	builds sync.Map // package and flags → *built

	dirsMu sync.Mutex
	dirs   []string // the directories the programs were copied to
)

// Build returns the path of the program of the main package pkg (a
// path as the go command takes it, such as "../cmd/herald"), built with
// the race detector when race is set. It is built once per test binary;
// the copy is removed by Main.
func Build(t testing.TB, pkg string, race bool) string {
	t.Helper()
	args := []string{"run"}
	if race {
		args = append(args, "-race")
	}
	v, _ := builds.LoadOrStore(pkg+" "+strings.Join(args, " "), &built{})
	b := v.(*built)
	b.once.Do(func() { b.path, b.err = build(pkg, args) })
	if b.err != nil {
		t.Fatal(b.err)
	}
	return b.path
}

// build links pkg with `go <args>` and copies the program to a directory
// of its own.
func build(pkg string, args []string) (string, error) {
	dir, err := os.MkdirTemp("", "herald-testbin")
	if err != nil {
		return "", err
	}
	dirsMu.Lock()
	dirs = append(dirs, dir)
	dirsMu.Unlock()
	path := filepath.Join(dir, filepath.Base(pkg))
	// go run runs `cp <program> path`: the program as linked, or as
	// found in the cache.
	args = append(args, "-exec", "cp", pkg, path)
	if out, err := exec.Command("go", args...).CombinedOutput(); err != nil {
		return "", fmt.Errorf("go %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return path, nil
}

// Main runs the tests and removes the programs they built: a package
// whose tests call Build has
//
//	func TestMain(m *testing.M) { os.Exit(testbin.Main(m)) }
//
// Under -short, unless -parallel is given, it runs parallelPerCPU
// parallel tests a CPU rather than one: such tests spend most of their
// time waiting on the processes they run (on a timer, an fsync, a
// restart), not on the CPU. The full suite keeps Go's default.
func Main(m *testing.M) int {
	flag.Parse()
	if testing.Short() && !flagSet("test.parallel") {
		if err := flag.Set("test.parallel", strconv.Itoa(parallelPerCPU*runtime.GOMAXPROCS(0))); err != nil {
			fmt.Fprintln(os.Stderr, "raising -test.parallel:", err)
			return 1
		}
	}
	code := m.Run()
	dirsMu.Lock()
	defer dirsMu.Unlock()
	var errs []error
	for _, dir := range dirs {
		errs = append(errs, os.RemoveAll(dir))
	}
	if err := errors.Join(errs...); err != nil {
		fmt.Fprintln(os.Stderr, "removing the programs built for the tests:", err)
		code = max(code, 1)
	}
	return code
}

// parallelPerCPU is how many parallel tests a CPU runs under -short.
const parallelPerCPU = 4

// flagSet reports whether the flag name was given on the command line.
func flagSet(name string) bool {
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}
