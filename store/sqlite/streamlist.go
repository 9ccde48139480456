package sqlite

import (
	"context"
	"sort"
	"strings"

	"github.com/heraldstreams/herald/store"
)

var _ store.SubscriptionStore = (*Store)(nil)

// StreamList implements store.SubscriptionStore.
func (s *Store) StreamList(ctx context.Context, params *store.StreamListParams) ([]store.Stream, error) {
	s.cacheMu.RLock()
	entries := make([]*entry, 0, len(s.byPath))
	for path, e := range s.byPath {
		if strings.HasPrefix(path, params.Prefix) && path > params.After {
			entries = append(entries, e)
		}
	}
	s.cacheMu.RUnlock()
	out := make([]store.Stream, 0, len(entries))
	for _, e := range entries {
		if st, err := s.view(e, params.Now); err == nil {
			out = append(out, st)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	if params.Limit > 0 && len(out) > params.Limit {
		out = out[:params.Limit]
	}
	return out, nil
}
