package sqlstore

import (
	"context"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/heraldstreams/herald/store"
)

// The streams listed from their rows, a page at a time in path order,
// written once for every backend: the stream list, and the walks that
// give every stream under a prefix a consumer or a cursor. A page is
// a range of the path index (the unique index on path): what a page
// costs follows the page, not the number of streams stored.

var _ store.SubscriptionStore = (*Store)(nil)

// StreamPageSize is how many streams EachStreamRow and StreamList read
// at a time.
const StreamPageSize = 500

// PrefixEnd returns the least string greater than every string that
// starts with prefix, in byte order (which is the order of UTF-8 text by
// code point), or false when there is none (an empty prefix, or one that
// ends in bytes that are not UTF-8). It is valid UTF-8 when prefix is,
// so that a database that checks text accepts it.
func PrefixEnd(prefix string) (string, bool) {
	for prefix != "" {
		r, size := utf8.DecodeLastRuneInString(prefix)
		if r == utf8.RuneError && size <= 1 {
			return "", false
		}
		prefix = prefix[:len(prefix)-size]
		if r == utf8.MaxRune {
			continue // no successor: carry to the rune before it
		}
		r++
		if r >= 0xD800 && r <= 0xDFFF {
			r = 0xE000 // surrogates are not UTF-8
		}
		return prefix + string(r), true
	}
	return "", false
}

// streamPageSQL is a page of streams in path order as a range of the path
// index: from $1 ($2 excluded: the previous page's last path), below $4
// when the prefix has an end, under prefix $3; with a change sequence at
// or above $6 when that is not 0.
const streamPageSQL = `SELECT ` + StreamColumns + ` FROM streams
	WHERE path >= $1 AND path <> $2 %s AND substr(path, 1, length($3)) = $3 %s
	ORDER BY path LIMIT $5`

// StreamPageQuery is the statement, and its arguments, of a page of up
// to limit streams whose path starts with prefix and comes after after,
// in path order, changed at or after changedFrom when it is not 0: a
// range of the path index, from the later of prefix and after to the
// prefix's end (PrefixEnd); or, for the streams changed since a mark, a
// range of the index of change sequences (a few streams changed of
// many).
func StreamPageQuery(prefix, after string, changedFrom int64, limit int) (string, []any) {
	from := prefix
	if after > prefix {
		from = after
	}
	end, bounded := PrefixEnd(prefix)
	upper := `AND $4 = ''`
	if bounded {
		upper = `AND path < $4`
	}
	q := fmt.Sprintf(streamPageSQL, upper, `AND $6 = 0`)
	if changedFrom != 0 {
		// The path's terms, and its order, as expressions: the planner
		// then reads the change sequences' index (the few streams
		// changed) and sorts them, rather than the whole path index.
		q = strings.NewReplacer(`WHERE path >=`, `WHERE path || '' >=`, `AND path <`, `AND path || '' <`,
			`ORDER BY path`, `ORDER BY path || ''`).Replace(
			fmt.Sprintf(streamPageSQL, upper, `AND changed_seq >= $6`))
	}
	return q, []any{from, after, prefix, end, limit, changedFrom}
}

// streamPage reads a page of StreamPageQuery.
func streamPage(x Executor, prefix, after string, changedFrom int64, limit int) ([]*StreamRow, error) {
	q, args := StreamPageQuery(prefix, after, changedFrom, limit)
	return collect(x, &query{sql: q, args: args}, func(r Row) (*StreamRow, error) {
		var row StreamRow
		return &row, ScanStream(r, &row)
	})
}

// ViewRow returns the stream of a row as clients see it at now, with the
// access the backend has not written to the row yet (Config.PendingAccess).
func (s *Store) ViewRow(r *StreamRow, now time.Time) (store.Stream, error) {
	if s.pending != nil && r.TTL > 0 {
		if t := s.pending(r.ID); t > Nanos(r.AccessedAt) {
			r.AccessedAt = FromNanos(t)
		}
	}
	return r.View(now)
}

// EachStreamRow calls fn for every live stream at now whose path starts
// with prefix and comes after after, in path order, a page at a time
// (never more than a page held); fn returns false to stop.
func (s *Store) EachStreamRow(x Executor, prefix, after string, now time.Time, fn func(*store.Stream) (bool, error)) error {
	return s.eachStreamRow(x, prefix, after, 0, now, StreamPageSize, fn)
}

// eachStreamRow is EachStreamRow in pages of size streams, of the
// streams changed at or after changedFrom when it is not 0.
func (s *Store) eachStreamRow(x Executor, prefix, after string, changedFrom int64, now time.Time, size int,
	fn func(*store.Stream) (bool, error)) error {
	for {
		page, err := streamPage(x, prefix, after, changedFrom, size)
		if err != nil {
			return fmt.Errorf("list streams: %w", err)
		}
		for _, r := range page {
			st, err := s.ViewRow(r, now)
			if err != nil {
				continue // soft-deleted or expired
			}
			if more, err := fn(&st); err != nil || !more {
				return err
			}
		}
		if len(page) < size {
			return nil
		}
		after = page[len(page)-1].Path
	}
}

// StreamList implements store.SubscriptionStore from the streams' rows.
func (s *Store) StreamList(ctx context.Context, params *store.StreamListParams) ([]store.Stream, error) {
	var out []store.Stream
	size := StreamPageSize
	if params.Limit > 0 && params.Limit < size {
		size = params.Limit // a short page reads no more rows than it lists
	}
	err := s.b.Read(ctx, func(x Executor) error {
		return s.eachStreamRow(x, params.Prefix, params.After, params.ChangedFrom, params.Now, size, func(st *store.Stream) (bool, error) {
			out = append(out, *st)
			return params.Limit <= 0 || len(out) < params.Limit, nil
		})
	})
	if err != nil {
		return nil, s.errorf("list streams", err)
	}
	return out, nil
}

// StreamChangeMark implements store.StreamChangeStore with the backend's
// mark (Backend.ChangeMark).
func (s *Store) StreamChangeMark(ctx context.Context) (int64, error) {
	mark, err := s.b.ChangeMark(ctx)
	if err != nil {
		return 0, s.errorf("stream change mark", err)
	}
	return mark, nil
}

// CheckedMark implements store.StreamChangeStore.
func (s *Store) CheckedMark(ctx context.Context, name string) (int64, error) {
	var mark int64
	err := s.b.Read(ctx, func(x Executor) error {
		err := x.QueryRow(`SELECT mark FROM checked_marks WHERE name = $1`, name).Scan(&mark)
		if s.d.IsNoRows(err) {
			return nil
		}
		return err
	})
	if err != nil {
		return 0, s.errorf("read checked mark", err)
	}
	return mark, nil
}

// CheckedMarkAdvance implements store.StreamChangeStore: relaxed, since
// a lost mark costs only checking again.
func (s *Store) CheckedMarkAdvance(ctx context.Context, name string, mark int64) error {
	err := s.write(ctx, Relaxed, func(tx Tx) error {
		_, err := tx.Exec(`INSERT INTO checked_marks (name, mark) VALUES ($1, $2)
			ON CONFLICT (name) DO UPDATE SET mark = excluded.mark WHERE checked_marks.mark < excluded.mark`, name, mark)
		return err
	})
	if err != nil {
		return s.errorf("record checked mark", err)
	}
	return nil
}
