//go:build !linux

package exepages

import (
	"context"
	"time"
)

// Release does nothing outside Linux, where the trick is not measured.
func Release() (int64, error) { return 0, nil }

// Run does nothing outside Linux: it returns when ctx ends.
func Run(ctx context.Context, _ time.Duration, _ func(error)) { <-ctx.Done() }
