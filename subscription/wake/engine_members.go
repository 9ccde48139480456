package wake

import (
	"slices"
	"sort"
	"sync"

	"github.com/heraldstreams/herald/store"
)

// memberCache remembers, per stream path, the consumers subscribed to it
// and their last stored form, so that a tail change does not have to ask
// the store who listens (the most frequent read of the engine). It is
// only correct when this engine makes every change to memberships, which
// is why EngineConfig.ExclusiveStore enables it.
//
// Correctness rests on two rules. Membership: every path's set is filled
// from the store only if no change touched the path while the store was
// read (a generation per path, bumped by every change and by clear), and
// every membership change the engine makes updates the sets it touches.
// Snapshots: a cached consumer may be older than the stored one; apply
// treats it like any pre-read consumer (compare-and-set on write, a fresh
// read when a non-IDLE one changes nothing).
type memberCache struct {
	enabled bool
	mu      sync.Mutex
	next    uint64                // guarded by mu: generation counter
	paths   map[string]*memberSet // guarded by mu
	// none (guarded by mu) says that no stream has a consumer: the store
	// listed no consumer path, and no membership was added since. Every
	// path's set is then empty without a set of its own, so a server
	// without subscriptions asks the store nothing at a tail change,
	// however many streams change (a bounded map of paths would miss
	// most of them over a million streams).
	none bool
	// added counts the changes that may add a membership (guarded by mu):
	// the reconciliation's listing proves none only if it did not move
	// while the store was read.
	added uint64
}

type memberSet struct {
	gen       uint64
	loaded    bool
	consumers map[string]store.Consumer // nil while empty
}

func newMemberCache(enabled bool) *memberCache {
	return &memberCache{enabled: enabled, paths: map[string]*memberSet{}}
}

// maxCachedPaths bounds the member cache: past it the cache starts over
// (forgetting is always safe), so memory follows the streams that are
// busy now rather than every stream that ever had an event.
const maxCachedPaths = 100_000

// entry returns the set of path, creating an unloaded one; caller holds mu.
func (m *memberCache) entry(path string) *memberSet {
	s, ok := m.paths[path]
	if !ok {
		if len(m.paths) >= maxCachedPaths {
			m.paths = map[string]*memberSet{}
		}
		m.next++
		s = &memberSet{gen: m.next}
		m.paths[path] = s
	}
	return s
}

// get returns the consumers of path, ordered by id, when known; otherwise
// the generation to pass to fill after reading them from the store.
func (m *memberCache) get(path string) ([]store.Consumer, uint64, bool) {
	if !m.enabled {
		return nil, 0, false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.none {
		return nil, 0, true
	}
	s := m.entry(path)
	if !s.loaded {
		return nil, s.gen, false
	}
	out := make([]store.Consumer, 0, len(s.consumers))
	for _, c := range s.consumers {
		c.Streams = slices.Clone(c.Streams)
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, s.gen, true
}

// fill records the consumers of path read from the store, unless a change
// touched path since get returned gen.
func (m *memberCache) fill(path string, gen uint64, list []store.Consumer) {
	if !m.enabled {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.paths[path]
	if !ok || s.gen != gen {
		return
	}
	s.loaded = true
	s.consumers = nil // most streams have no consumer: no map for them
	if len(list) > 0 {
		s.consumers = make(map[string]store.Consumer, len(list))
	}
	for _, c := range list {
		c.Streams = slices.Clone(c.Streams)
		s.consumers[c.ID] = c
	}
}

// observe records the stored form of a consumer after the engine read or
// wrote it: cur nil means it was removed. old, when not nil, is an earlier
// form, whose streams cur may have left.
func (m *memberCache) observe(old, cur *store.Consumer) {
	if !m.enabled {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	var id string
	if cur != nil {
		id = cur.ID
	} else if old != nil {
		id = old.ID
	}
	if old != nil {
		for _, st := range old.Streams {
			if cur == nil || !slices.ContainsFunc(cur.Streams, func(s store.ConsumerStream) bool { return s.Path == st.Path }) {
				s := m.entry(st.Path)
				m.next++
				s.gen = m.next
				delete(s.consumers, id)
			}
		}
	}
	if cur == nil {
		return
	}
	m.added++
	m.none = false
	snap := *cur
	snap.Streams = slices.Clone(cur.Streams)
	for _, st := range cur.Streams {
		s := m.entry(st.Path)
		if _, known := s.consumers[id]; !known {
			// A new membership: any fill in flight read the store before it.
			m.next++
			s.gen = m.next
		}
		if s.loaded {
			if s.consumers == nil {
				s.consumers = map[string]store.Consumer{}
			}
			s.consumers[id] = snap
		}
	}
}

// clear forgets everything, for changes made by the store on the
// engine's behalf (a subscription created with consumers, or deleted
// with them).
func (m *memberCache) clear() {
	if !m.enabled {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.paths = map[string]*memberSet{}
	m.next++
	m.added++
	m.none = false
}

// addedMark returns what noneSince compares with: the count of changes
// that may add a membership, taken before the store is read.
func (m *memberCache) addedMark() uint64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.added
}

// noneSince records that the store listed no consumer path, read after
// addedMark returned mark: unless a membership may have been added since,
// no stream has a consumer until one is (observe or clear).
func (m *memberCache) noneSince(mark uint64) {
	if !m.enabled {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.added == mark {
		m.none = true
		m.paths = map[string]*memberSet{}
	}
}
