package postgres

import (
	"context"
	"fmt"

	"github.com/heraldstreams/herald/store"
	"github.com/heraldstreams/herald/store/internal/codec"
)

var _ store.SubscriptionStore = (*Store)(nil)

// spawnPage is how many streams EachStream and StreamList read at a time.
const spawnPage = 500

// streamPage reads up to limit streams whose path starts with prefix and
// comes after after, in path order.
func streamPage(ctx context.Context, q querier, prefix, after string, limit int) ([]*row, error) {
	rows, err := q.Query(ctx, `SELECT `+codec.StreamColumns+` FROM streams WHERE starts_with(path, $1) AND path > $2
		ORDER BY path LIMIT $3`, prefix, after, limit)
	if err != nil {
		return nil, fmt.Errorf("postgres: list streams: %w", err)
	}
	defer rows.Close()
	var out []*row
	for rows.Next() {
		r, err := scanRow(rows)
		if err != nil {
			return nil, fmt.Errorf("postgres: list streams: %w", err)
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// StreamList implements store.SubscriptionStore.
func (s *Store) StreamList(ctx context.Context, params *store.StreamListParams) ([]store.Stream, error) {
	if err := s.usable(); err != nil {
		return nil, err
	}
	var out []store.Stream
	after := params.After
	for {
		page, err := streamPage(ctx, s.pool, params.Prefix, after, spawnPage)
		if err != nil {
			return nil, err
		}
		for _, r := range page {
			if st, err := view(r, params.Now); err == nil {
				out = append(out, st)
				if params.Limit > 0 && len(out) == params.Limit {
					return out, nil
				}
			}
		}
		if len(page) < spawnPage {
			return out, nil
		}
		after = page[len(page)-1].Path
	}
}
