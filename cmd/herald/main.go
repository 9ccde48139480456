// Command herald runs the Herald server: durable streams delivered by
// webhook. See README.md for usage.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"syscall"
)

func main() {
	addCommitterP(os.LookupEnv)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr, os.LookupEnv); err != nil {
		if !errors.As(err, new(loggedError)) {
			fmt.Fprintln(os.Stderr, "herald:", err)
		}
		stop()
		os.Exit(exitCode(err))
	}
}

// addCommitterP gives the Go scheduler one P more than it would use,
// unless GOMAXPROCS is set. The embedded store's committer spends much of
// its time inside SQLite's write and fsync system calls, and a thread in
// a system call holds its P until the runtime's monitor takes it back, so
// with one P per core the rest of Herald runs short of a core meanwhile.
// Measured with the webhook benchmark on 2 cores (see docs/performance.md),
// 3 Ps gave more wakes/s than 2, at less CPU per wake.
func addCommitterP(lookupEnv func(string) (string, bool)) {
	if _, set := lookupEnv("GOMAXPROCS"); set {
		return
	}
	runtime.GOMAXPROCS(runtime.GOMAXPROCS(0) + 1)
}
