package postgres

import (
	"context"

	"github.com/heraldstreams/herald/store"
)

var _ store.SubscriptionStore = (*Store)(nil)

// StreamList implements store.SubscriptionStore.
func (s *Store) StreamList(ctx context.Context, params *store.StreamListParams) ([]store.Stream, error) {
	if err := s.usable(); err != nil {
		return nil, err
	}
	return s.ListStreams(ctx, params)
}
