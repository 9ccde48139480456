package wake

import (
	"context"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/heraldstreams/herald/store"
)

// memStore is an in-memory EngineStore for the engine tests that run
// thousands of timer cycles (3 days of retries), where the embedded
// store's disk writes would make the test slow under the race detector.
// The other engine tests use the real store; this one keeps the
// contract's semantics that the engine relies on: compare-and-set
// versions, DueAt ordering, memberships.
type memStore struct {
	mu        sync.Mutex
	hub       *store.Hub
	nextID    int64
	streams   map[string]*store.Stream
	subs      map[string]store.Subscription
	consumers map[string]store.Consumer
	// timers are the running timer leases, by consumer ID.
	timers map[string]time.Time
	// lists counts SubscriptionList calls.
	lists int
}

var _ EngineStore = (*memStore)(nil)

func newMemStore() *memStore {
	return &memStore{hub: store.NewHub(), streams: map[string]*store.Stream{},
		subs: map[string]store.Subscription{}, consumers: map[string]store.Consumer{}, timers: map[string]time.Time{}}
}

func cloneConsumer(c store.Consumer) store.Consumer {
	c.Streams = slices.Clone(c.Streams)
	return c
}

// appendData creates the stream if needed, appends n bytes and publishes
// the change.
func (m *memStore) appendData(path string, n int64) {
	m.mu.Lock()
	s, ok := m.streams[path]
	created := !ok
	if !ok {
		m.nextID++
		s = &store.Stream{ID: m.nextID, Path: path}
		m.streams[path] = s
	}
	s.Tail += n
	ch := store.TailChange{StreamID: s.ID, Path: path, Tail: s.Tail, Created: created}
	m.mu.Unlock()
	m.hub.Publish(ch)
}

func (m *memStore) Notifier() store.Notifier { return m.hub }

func (m *memStore) StreamGet(_ context.Context, p *store.StreamGetParams) (*store.Stream, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.streams[p.Path]
	if !ok {
		return nil, store.ErrNotFound
	}
	out := *s
	return &out, nil
}

func (m *memStore) StreamList(_ context.Context, p *store.StreamListParams) ([]store.Stream, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []store.Stream
	for path, s := range m.streams {
		if strings.HasPrefix(path, p.Prefix) && path > p.After {
			out = append(out, *s)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	if p.Limit > 0 && len(out) > p.Limit {
		out = out[:p.Limit]
	}
	return out, nil
}

func (m *memStore) SubscriptionCreate(_ context.Context, p *store.SubscriptionCreateParams) (*store.SubscriptionCreateResult, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	in := p.Subscription
	if old, ok := m.subs[in.ID]; ok {
		if old.Pattern != in.Pattern || old.Webhook != in.Webhook || old.Description != in.Description {
			return nil, store.ErrSubscriptionExists
		}
		return &store.SubscriptionCreateResult{Subscription: old}, nil
	}
	in.CreatedAt = p.Now
	m.subs[in.ID] = in
	if p.Spawn != nil {
		for path, st := range m.streams {
			if !strings.HasPrefix(path, p.Prefix) {
				continue
			}
			snap := *st
			if c, ok := p.Spawn(&snap); ok {
				m.insert([]store.Consumer{c})
			}
		}
	}
	m.hub.Invalidate(store.Invalidation{Kind: store.CacheSubscription, ID: in.ID})
	return &store.SubscriptionCreateResult{Subscription: in, Created: true}, nil
}

func (m *memStore) SubscriptionGet(_ context.Context, id string) (*store.Subscription, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.subs[id]
	if !ok {
		return nil, store.ErrSubscriptionNotFound
	}
	return &s, nil
}

func (m *memStore) SubscriptionList(_ context.Context, p *store.SubscriptionListParams) ([]store.Subscription, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.lists++
	var out []store.Subscription
	for _, s := range m.subs {
		if p.Pattern == "" || s.Pattern == p.Pattern {
			out = append(out, s)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

func (m *memStore) SubscriptionDelete(_ context.Context, p *store.SubscriptionDeleteParams) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.subs[p.ID]; !ok {
		return 0, store.ErrSubscriptionNotFound
	}
	delete(m.subs, p.ID)
	removed := 0
	for id, c := range m.consumers {
		if c.SubscriptionID == p.ID {
			delete(m.consumers, id)
			removed++
		}
	}
	m.hub.Invalidate(store.Invalidation{Kind: store.CacheSubscription, ID: p.ID})
	return removed, nil
}

// insert adds consumers that do not exist yet; caller holds mu.
func (m *memStore) insert(cs []store.Consumer) []string {
	var ids []string
	for _, c := range cs {
		if _, ok := m.consumers[c.ID]; ok {
			continue
		}
		c = cloneConsumer(c)
		c.Version = 1
		m.consumers[c.ID] = c
		ids = append(ids, c.ID)
	}
	return ids
}

func (m *memStore) ConsumerInsert(_ context.Context, p *store.ConsumerInsertParams) ([]string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.insert(p.Consumers), nil
}

func (m *memStore) ConsumerGet(_ context.Context, id string) (*store.Consumer, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	c, ok := m.consumers[id]
	if !ok {
		return nil, store.ErrConsumerNotFound
	}
	c = cloneConsumer(c)
	return &c, nil
}

func (m *memStore) ConsumerUpdate(_ context.Context, p *store.ConsumerUpdateParams) (int64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	old, ok := m.consumers[p.Consumer.ID]
	switch {
	case !ok:
		return 0, store.ErrConsumerNotFound
	case old.Version != p.ExpectVersion:
		return 0, store.ErrConsumerConflict
	}
	c := cloneConsumer(p.Consumer)
	c.Incarnation = old.Incarnation // never changed by an update
	c.Version = old.Version + 1
	m.consumers[c.ID] = c
	delete(m.timers, c.ID)
	return c.Version, nil
}

func (m *memStore) ConsumerDelete(_ context.Context, p *store.ConsumerDeleteParams) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	old, ok := m.consumers[p.ID]
	switch {
	case !ok:
		return store.ErrConsumerNotFound
	case p.ExpectVersion != 0 && old.Version != p.ExpectVersion:
		return store.ErrConsumerConflict
	}
	delete(m.consumers, p.ID)
	return nil
}

// list returns the consumers keep accepts, sorted by less.
func (m *memStore) list(keep func(*store.Consumer) bool, less func(a, b *store.Consumer) bool) []store.Consumer {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []store.Consumer
	for _, c := range m.consumers {
		if keep(&c) {
			out = append(out, cloneConsumer(c))
		}
	}
	sort.Slice(out, func(i, j int) bool { return less(&out[i], &out[j]) })
	return out
}

func byID(a, b *store.Consumer) bool { return a.ID < b.ID }

func (m *memStore) ConsumerClaimDue(_ context.Context, p *store.ConsumerClaimDueParams) (*store.ConsumerClaimDueResult, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	res := &store.ConsumerClaimDueResult{}
	for _, c := range m.consumers {
		switch {
		case c.DueAt.IsZero():
		case c.DueAt.After(p.Now):
			if res.NextDueAt.IsZero() || c.DueAt.Before(res.NextDueAt) {
				res.NextDueAt = c.DueAt
			}
		case m.timers[c.ID].After(p.Now):
		default:
			res.Consumers = append(res.Consumers, cloneConsumer(c))
		}
	}
	sort.Slice(res.Consumers, func(i, j int) bool { return res.Consumers[i].DueAt.Before(res.Consumers[j].DueAt) })
	if p.Limit > 0 && len(res.Consumers) > p.Limit {
		res.Consumers = res.Consumers[:p.Limit]
	}
	for _, c := range res.Consumers {
		m.timers[c.ID] = p.Now.Add(p.Lease)
	}
	return res, nil
}

// ConsumerReleaseOwn ends the running timer claims (all this one
// replica's) that end before p.Before, but the kept ones.
func (m *memStore) ConsumerReleaseOwn(_ context.Context, p *store.ConsumerReleaseOwnParams) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for id, until := range m.timers {
		if until.After(p.Now) && until.Before(p.Before) && !slices.Contains(p.Keep, id) {
			delete(m.timers, id)
			n++
		}
	}
	return n, nil
}

func (m *memStore) ConsumerListByStream(_ context.Context, p *store.ConsumerListByStreamParams) ([]store.Consumer, error) {
	return m.list(func(c *store.Consumer) bool {
		return slices.ContainsFunc(c.Streams, func(s store.ConsumerStream) bool { return s.Path == p.Path })
	}, byID), nil
}

func (m *memStore) ConsumerListByPrimary(_ context.Context, p *store.ConsumerListByStreamParams) ([]store.Consumer, error) {
	return m.list(func(c *store.Consumer) bool { return c.PrimaryStream == p.Path }, byID), nil
}

func (m *memStore) ConsumerListBySubscription(_ context.Context, p *store.ConsumerListBySubscriptionParams) ([]store.Consumer, error) {
	out := m.list(func(c *store.Consumer) bool { return c.SubscriptionID == p.SubscriptionID && c.ID > p.After }, byID)
	if p.Limit > 0 && len(out) > p.Limit {
		out = out[:p.Limit]
	}
	return out, nil
}

func (m *memStore) ConsumerPathList(_ context.Context, p *store.ConsumerPathListParams) ([]string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	seen := map[string]bool{}
	var out []string
	for _, c := range m.consumers {
		for _, s := range c.Streams {
			if s.Path > p.After && !seen[s.Path] {
				seen[s.Path] = true
				out = append(out, s.Path)
			}
		}
	}
	sort.Strings(out)
	if p.Limit > 0 && len(out) > p.Limit {
		out = out[:p.Limit]
	}
	return out, nil
}

func (m *memStore) ConsumerCount(context.Context) (map[string]int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := map[string]int{}
	for _, c := range m.consumers {
		out[c.State]++
	}
	return out, nil
}

func (m *memStore) ConsumerCountStalled(_ context.Context, atLeast int) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for _, c := range m.consumers {
		if c.StalledWakes >= atLeast {
			n++
		}
	}
	return n, nil
}
