//go:build linux

package idlemem

import (
	"context"
	"testing"
	"time"
)

// TestReleaseLowersTheProcessRssFile releases this test binary's own code
// and read-only data: its resident file pages fall, and the process goes
// on running (the pages fault back from the page cache as it runs).
func TestReleaseLowersTheProcessRssFile(t *testing.T) {
	before := mustRSSFile(t)
	n, err := ReleaseExecutable()
	if err != nil {
		t.Fatal(err)
	}
	after := mustRSSFile(t)
	if n <= 0 {
		t.Fatalf("released %d bytes", n)
	}
	if after >= before {
		t.Fatalf("RssFile %d kB before the release, %d kB after", before, after)
	}
	t.Logf("released %d kB of mappings: RssFile %d kB → %d kB", n>>10, before, after)
}

// TestRunStopsWithItsContext: Run returns when its context ends.
func TestRunStopsWithItsContext(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		Run(ctx, time.Millisecond, func(err error) { t.Error(err) })
	}()
	cancel()
	<-done
}

func mustRSSFile(t *testing.T) int64 {
	t.Helper()
	kb, err := rssFileKB()
	if err != nil {
		t.Fatal(err)
	}
	return kb
}
