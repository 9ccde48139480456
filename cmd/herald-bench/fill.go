package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/heraldstreams/herald/store"
	"github.com/heraldstreams/herald/store/sqlite"
)

// runFill creates -n empty streams, prefix/s0 to prefix/s(n-1), straight
// in the embedded store of the data directory -dir (no Herald may run on
// it meanwhile: the store locks the directory), from -c workers through
// the store's group commit: a million streams in minutes, where creating
// them over HTTP takes twenty. `append -existing` then appends to them.
func runFill(ctx context.Context, args []string, out *output) error {
	fs := flag.NewFlagSet("fill", flag.ContinueOnError)
	dir := fs.String("dir", "", "data directory of the embedded store (created if missing)")
	n := fs.Int("n", 1000000, "streams to create")
	conc := fs.Int("c", 64, "concurrent creators")
	prefix := fs.String("prefix", "/idle", "stream path prefix")
	ct := fs.String("ct", octetStream, "the streams' content type")
	if err := parse(fs, args); err != nil {
		return err
	}
	if *dir == "" || *n < 1 || *conc < 1 {
		return errors.New("fill: -dir is required; -n and -c must be at least 1")
	}
	st, err := sqlite.Open(ctx, sqlite.Config{Dir: *dir})
	if err != nil {
		return err
	}
	var next, errs atomic.Int64
	var first atomic.Value
	start := time.Now()
	workers(*conc, func(int) {
		for ctx.Err() == nil {
			i := next.Add(1) - 1
			if i >= int64(*n) {
				return
			}
			_, err := st.StreamCreate(ctx, &store.StreamCreateParams{Path: fmt.Sprintf("%s/s%d", *prefix, i),
				ContentType: *ct, Now: time.Now()})
			if err != nil {
				errs.Add(1)
				first.CompareAndSwap(nil, err)
			}
		}
	})
	secs := time.Since(start).Seconds()
	if err := st.Close(); err != nil {
		return err
	}
	if e, ok := first.Load().(error); ok {
		return fmt.Errorf("fill: %d streams not created, the first: %w", errs.Load(), e)
	}
	rps := float64(*n) / secs
	return out.emit(result{"test": "fill", "n": *n, "c": *conc, "secs": secs, "rps": rps},
		fmt.Sprintf("fill: %d streams in %.1f s, c=%d: %.0f/s", *n, secs, *conc, rps))
}
