package sqlite

import (
	"context"
	"fmt"
	"sync"

	"github.com/heraldstreams/herald/store/sqlstore"
)

// DefaultStreamCache is how many streams' metadata the cache holds when
// Config.StreamCache is 0: about 30 MB at most, while the streams in use
// at once are rarely that many.
const DefaultStreamCache = 100_000

// streamCache holds the metadata of the streams in use, not of every
// stream: an entry is read from its row on a miss (load) and dropped when
// the cache is past its bound, so what it costs follows the streams
// touched, not the streams stored.
//
// Two writers put entries in: the committer publishes what a batch
// changed (always: a changed stream's cached entry is replaced, or
// added), and a reader that missed inserts what it read from the read
// pool. A reader's row may be older than a commit published while it was
// read; such an entry never goes in, over a newer one or in place of one
// since evicted: the reader notes the publish epoch before it reads and
// inserts only when no publish came since (it still uses what it read:
// the read is as of its snapshot). Entries are immutable once in the
// cache, so readers use them without a lock.
type streamCache struct {
	mu     sync.RWMutex // guards the maps and the epoch, not the entries
	byPath map[string]*entry
	byID   map[int64]*entry
	// epoch counts the committer's publishes.
	epoch uint64
	// max bounds len(byPath) (and len(byID), which holds the same
	// entries).
	max int
	// loaded, when set (tests), runs after a reader read a row and
	// before it inserts it, so that a test can commit in between.
	loaded func()
}

func newStreamCache(max int) *streamCache {
	if max <= 0 {
		max = DefaultStreamCache
	}
	return &streamCache{byPath: make(map[string]*entry), byID: make(map[int64]*entry), max: max}
}

// get returns the cached entry at path, or nil.
func (c *streamCache) get(path string) *entry {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.byPath[path]
}

// getID returns the cached entry of stream id, or nil.
func (c *streamCache) getID(id int64) *entry {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.byID[id]
}

// size is how many entries the cache holds.
func (c *streamCache) size() int {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return len(c.byPath)
}

// currentEpoch is the number of publishes so far.
func (c *streamCache) currentEpoch() uint64 {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.epoch
}

// insertRead inserts e, read from a row by a reader that noted epoch
// before reading, unless a publish came since (e may be older than it);
// it returns the entry to use: the cached one when there is one (it is
// as new as e, or newer).
func (c *streamCache) insertRead(e *entry, epoch uint64) *entry {
	if c.loaded != nil {
		c.loaded()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if cur := c.byID[e.id]; cur != nil {
		return cur
	}
	if c.epoch != epoch || c.byPath[e.path] != nil {
		return e
	}
	c.putLocked(e)
	return e
}

// insertLatest inserts e, read by the committer from the committed rows
// (nothing newer can be published meanwhile: the committer publishes),
// unless the stream is cached.
func (c *streamCache) insertLatest(e *entry) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.byID[e.id] == nil && c.byPath[e.path] == nil {
		c.putLocked(e)
	}
}

// publish installs a committed batch's changes: the entries it changed
// or made (by path), and the streams it removed (by id).
func (c *streamCache) publish(changed map[string]*entry, removed map[int64]bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.epoch++
	for path, e := range changed {
		if e == nil {
			if cur, ok := c.byPath[path]; ok && removed[cur.id] {
				delete(c.byPath, path)
			}
			continue
		}
		if old := c.byPath[path]; old != nil && old.id != e.id {
			delete(c.byID, old.id)
		}
		c.byPath[path] = e
		c.byID[e.id] = e
	}
	for id := range removed {
		if cur, ok := c.byID[id]; ok {
			delete(c.byID, id)
			if c.byPath[cur.path] == cur {
				delete(c.byPath, cur.path)
			}
		}
	}
	c.evictLocked()
}

// putLocked adds e, making room first when the cache is full.
func (c *streamCache) putLocked(e *entry) {
	c.byPath[e.path] = e
	c.byID[e.id] = e
	c.evictLocked()
}

// evictLocked drops entries while the cache is past its bound, down to
// 15/16 of it, so that the next misses insert without evicting each
// time. What goes is what the map's iteration yields first, which Go
// randomises: a random choice, which keeps the streams in use often
// cached most of the time at no cost to a hit (an LRU would write on
// every read).
func (c *streamCache) evictLocked() {
	if len(c.byPath) <= c.max {
		return
	}
	target := c.max - c.max/16
	for path, e := range c.byPath {
		if len(c.byPath) <= target {
			break
		}
		delete(c.byPath, path)
		if c.byID[e.id] == e {
			delete(c.byID, e.id)
		}
	}
}

// lookup returns the published entry at path, read from its row on a
// miss (nil when there is no stream).
func (s *Store) lookup(ctx context.Context, path string) (*entry, error) {
	if e := s.cache.get(path); e != nil {
		return e, nil
	}
	return s.read(ctx, sqlstore.StreamByPathSQL, path)
}

// lookupID is lookup by the stream's id (a fork's source).
func (s *Store) lookupID(ctx context.Context, id int64) (*entry, error) {
	if e := s.cache.getID(id); e != nil {
		return e, nil
	}
	return s.read(ctx, sqlstore.StreamByIDSQL, id)
}

// read reads a stream's row on the read pool and caches it (insertRead).
func (s *Store) read(ctx context.Context, query string, key any) (*entry, error) {
	epoch := s.cache.currentEpoch()
	stmt, err := s.readerStmt(ctx, query)
	if err != nil {
		return nil, err
	}
	var r sqlstore.StreamRow
	err = sqlstore.ScanStream(stmt.QueryRowContext(ctx, key), &r)
	if isNoRows(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("sqlite: read stream: %w", err)
	}
	return s.cache.insertRead(newEntry(&r), epoch), nil
}

// load returns the committed entry at path for the committer, read
// from its row on a miss (nil when there is no stream). It runs in the
// committer's transaction, whose uncommitted rows are all of streams in
// the batch's overlay, which the caller looked in first.
func (b *batch) load(query string, key any) (*entry, error) {
	stmt, err := b.s.writerStmt(b.ctx, query)
	if err != nil {
		return nil, err
	}
	var r sqlstore.StreamRow
	err = sqlstore.ScanStream(stmt.QueryRowContext(b.ctx, key), &r)
	if isNoRows(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read stream: %w", err)
	}
	e := newEntry(&r)
	b.s.cache.insertLatest(e)
	return e, nil
}
