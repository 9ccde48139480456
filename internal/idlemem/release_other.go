//go:build !linux

package idlemem

import (
	"context"
	"time"
)

// ReleaseExecutable does nothing outside Linux, where the trick is not measured.
func ReleaseExecutable() (int64, error) { return 0, nil }

// Run does nothing outside Linux: it returns when ctx ends.
func Run(ctx context.Context, _ time.Duration, _ func(error)) { <-ctx.Done() }

// GiveBack does nothing outside Linux.
func GiveBack() error { return nil }
