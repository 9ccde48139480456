package main

import (
	"runtime"
	"testing"
)

func TestAddCommitterP(t *testing.T) {
	before := runtime.GOMAXPROCS(0)
	t.Cleanup(func() { runtime.GOMAXPROCS(before) })

	addCommitterP(func(string) (string, bool) { return "2", true })
	if got := runtime.GOMAXPROCS(0); got != before {
		t.Fatalf("with GOMAXPROCS set, Herald changed it: %d Ps, want %d", got, before)
	}
	addCommitterP(func(string) (string, bool) { return "", false })
	if got := runtime.GOMAXPROCS(0); got != before+1 {
		t.Fatalf("without GOMAXPROCS: %d Ps, want %d", got, before+1)
	}
}
