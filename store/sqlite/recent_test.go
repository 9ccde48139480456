package sqlite

import (
	"bytes"
	"testing"
)

func chunk(stream, start int64, size int) *recentChunk {
	return &recentChunk{stream: stream, start: start, end: start + int64(size), data: bytes.Repeat([]byte{byte(stream)}, size)}
}

// TestRecentCacheBounds: the cache serves a covered range of the latest
// chunk of a stream, and keeps at most recentSlots chunks and recentBytes
// bytes, dropping the oldest first.
func TestRecentCacheBounds(t *testing.T) {
	t.Parallel()
	c := newRecentCache()
	c.put([]*recentChunk{chunk(1, 0, 10), chunk(1, 10, 5)})
	if got, ok := c.get(1, 11, 15); !ok || len(got) != 4 {
		t.Fatalf("get(1, 11, 15) = %d bytes, %v", len(got), ok)
	}
	if _, ok := c.get(1, 0, 10); ok {
		t.Fatal("a replaced chunk was served")
	}
	if _, ok := c.get(1, 11, 16); ok {
		t.Fatal("a range past the chunk was served")
	}
	if c.bytes != 5 {
		t.Fatalf("bytes = %d after a replacement, want 5", c.bytes)
	}

	// Slots: the oldest streams go first.
	for i := range int64(recentSlots) {
		c.put([]*recentChunk{chunk(100+i, 0, 1)})
	}
	if _, ok := c.get(1, 10, 15); ok {
		t.Fatal("the oldest chunk outlived recentSlots newer ones")
	}
	if _, ok := c.get(100+recentSlots-1, 0, 1); !ok || len(c.by) != recentSlots || c.n != recentSlots {
		t.Fatalf("newest missing or counts off: %d chunks, %d slots", len(c.by), c.n)
	}

	// Bytes: large chunks push the others out.
	big := recentBytes / 4
	for i := range int64(5) {
		c.put([]*recentChunk{chunk(10000+i, 0, big)})
	}
	if c.bytes > recentBytes {
		t.Fatalf("bytes = %d > %d", c.bytes, recentBytes)
	}
	if _, ok := c.get(10004, 0, int64(big)); !ok {
		t.Fatal("the newest large chunk is missing")
	}
	if _, ok := c.get(10000, 0, 1); ok {
		t.Fatal("the oldest large chunk is still there past the byte bound")
	}

	c.drop(10004)
	if _, ok := c.get(10004, 0, 1); ok {
		t.Fatal("a dropped stream's chunk was served")
	}
	total := 0
	for _, rc := range c.by {
		total += len(rc.data)
	}
	if total != c.bytes {
		t.Fatalf("bytes = %d, chunks hold %d", c.bytes, total)
	}
}
