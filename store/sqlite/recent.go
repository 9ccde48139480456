package sqlite

import "sync"

// Bounds of the recent-chunk cache.
const (
	// maxRecentChunk bounds the size of one chunk kept in memory.
	maxRecentChunk = 64 << 10
	// recentSlots is how many of the latest appends are kept.
	recentSlots = 4096
	// recentBytes bounds the bytes kept over all streams.
	recentBytes = 8 << 20
)

// recentChunk is a stored chunk kept in memory; data is never modified.
type recentChunk struct {
	stream     int64
	start, end int64
	data       []byte
}

// recentCache keeps the last small append of the streams appended to
// most recently, so that live readers woken by an append (they wait at
// its start) read it from memory instead of querying the database. It
// holds at most recentSlots chunks and recentBytes bytes, oldest out
// first: what an idle stream appended long ago costs nothing.
//
// A chunk enters only after its transaction committed, and the bytes of a
// stream's committed range never change (streams are append-only and ids
// are never reused), so any chunk found covers valid data.
type recentCache struct {
	mu    sync.RWMutex
	by    map[int64]*recentChunk    // guarded by mu: the latest chunk of each stream
	ring  [recentSlots]*recentChunk // guarded by mu: chunks in insertion order
	head  int                       // guarded by mu: oldest slot
	n     int                       // guarded by mu: slots in use
	bytes int                       // guarded by mu: bytes of the chunks in by
}

func newRecentCache() *recentCache {
	return &recentCache{by: make(map[int64]*recentChunk)}
}

// get returns the bytes [from, end) of stream when its recent chunk holds
// them. The slice is shared and must not be modified.
func (c *recentCache) get(stream, from, end int64) ([]byte, bool) {
	c.mu.RLock()
	rc := c.by[stream]
	c.mu.RUnlock()
	if rc == nil || from < rc.start || end > rc.end {
		return nil, false
	}
	return rc.data[from-rc.start : end-rc.start], true
}

// put records chunks just committed, in commit order.
func (c *recentCache) put(chunks []*recentChunk) {
	if len(chunks) == 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, rc := range chunks {
		if old := c.by[rc.stream]; old != nil {
			c.bytes -= len(old.data)
		}
		c.by[rc.stream] = rc
		c.bytes += len(rc.data)
		if c.n == recentSlots {
			c.evictOldest()
		}
		c.ring[(c.head+c.n)%recentSlots] = rc
		c.n++
		for c.bytes > recentBytes && c.n > 0 {
			c.evictOldest()
		}
	}
}

// evictOldest frees the oldest slot, and its chunk unless a later one of
// the same stream replaced it; caller holds mu and c.n > 0.
func (c *recentCache) evictOldest() {
	rc := c.ring[c.head]
	c.ring[c.head] = nil
	c.head = (c.head + 1) % recentSlots
	c.n--
	if c.by[rc.stream] == rc {
		delete(c.by, rc.stream)
		c.bytes -= len(rc.data)
	}
}

// drop forgets the chunk of a removed stream.
func (c *recentCache) drop(stream int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if rc := c.by[stream]; rc != nil {
		delete(c.by, stream)
		c.bytes -= len(rc.data)
	}
}
