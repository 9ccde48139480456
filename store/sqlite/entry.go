package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/heraldstreams/herald/protocol"
	"github.com/heraldstreams/herald/store"
)

// entry is the in-memory metadata of one stream. Once published in the
// cache an entry is never modified (readers hold it without a lock); the
// committer clones it to change it. producers is the exception: only the
// committer reads or writes it.
type entry struct {
	s           store.Stream
	sourceID    int64
	softDeleted bool
	closedBy    *store.Producer
	producers   map[string]protocol.ProducerState
	// recent is the stream's last append when it is small: live readers
	// woken by that append (they wait at its start) read it from memory
	// instead of querying the database.
	recent *recentChunk
}

// recentChunk is a stored chunk kept in memory; data is never modified.
type recentChunk struct {
	start, end int64
	data       []byte
}

// maxRecentChunk bounds the size of a chunk kept in memory per stream.
const maxRecentChunk = 64 << 10

func (e *entry) clone() *entry {
	c := *e
	return &c
}

// nanos and fromNanos convert times to the INTEGER columns (0 is "none").
func nanos(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

func fromNanos(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n).UTC()
}

const streamColumns = `id, path, content_type, tail, closed, closed_by_id, closed_by_epoch, closed_by_seq,
	ttl_seconds, expires_at, accessed_at, created_at, fork_source_id, fork_source_path, fork_position,
	fork_offset, fork_sub_offset, last_seq, soft_deleted`

func scanEntry(row interface{ Scan(...any) error }) (*entry, error) {
	var (
		e                          entry
		closedByID                 sql.NullString
		closedByEpoch, closedBySeq sql.NullInt64
		sourceID                   sql.NullInt64
		ttl, expires, acc, created int64
	)
	err := row.Scan(&e.s.ID, &e.s.Path, &e.s.ContentType, &e.s.Tail, &e.s.Closed, &closedByID, &closedByEpoch, &closedBySeq,
		&ttl, &expires, &acc, &created, &sourceID, &e.s.ForkSource, &e.s.ForkPosition,
		&e.s.ForkOffset, &e.s.ForkSubOffset, &e.s.LastSeq, &e.softDeleted)
	if err != nil {
		return nil, err
	}
	e.s.TTL = time.Duration(ttl) * time.Second
	e.s.ExpiresAt = fromNanos(expires)
	e.s.AccessedAt = fromNanos(acc)
	e.s.CreatedAt = fromNanos(created)
	e.sourceID = sourceID.Int64
	if closedByID.Valid {
		e.closedBy = &store.Producer{ID: closedByID.String, Epoch: closedByEpoch.Int64, Seq: closedBySeq.Int64}
	}
	e.producers = make(map[string]protocol.ProducerState)
	return &e, nil
}

// loadStreams fills the cache from the database at start.
func (s *Store) loadStreams(ctx context.Context) error {
	rows, err := s.wconn.QueryContext(ctx, `SELECT `+streamColumns+` FROM streams`)
	if err != nil {
		return fmt.Errorf("sqlite: load streams: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		e, err := scanEntry(rows)
		if err != nil {
			return fmt.Errorf("sqlite: load streams: %w", err)
		}
		s.byPath[e.s.Path] = e
		s.byID[e.s.ID] = e
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("sqlite: load streams: %w", err)
	}
	return nil
}

// lookup returns the published entry at path, or nil.
func (s *Store) lookup(path string) *entry {
	s.cacheMu.RLock()
	defer s.cacheMu.RUnlock()
	return s.byPath[path]
}

func (s *Store) lookupID(id int64) *entry {
	s.cacheMu.RLock()
	defer s.cacheMu.RUnlock()
	return s.byID[id]
}

// accessedAt is the stream's last access including renewals not yet
// written by the touch loop.
func (s *Store) accessedAt(e *entry) time.Time {
	if e.s.TTL <= 0 {
		return e.s.AccessedAt // only a sliding TTL reads it; touch skips these
	}
	s.touchMu.Lock()
	t, ok := s.touches[e.s.ID]
	s.touchMu.Unlock()
	if ok && t.After(e.s.AccessedAt) {
		return t
	}
	return e.s.AccessedAt
}

// view returns the stream as clients see it at now: its snapshot with the
// effective access time, or an error when it is missing, soft-deleted or
// expired.
func (s *Store) view(e *entry, now time.Time) (store.Stream, error) {
	if e == nil {
		return store.Stream{}, store.ErrNotFound
	}
	if e.softDeleted {
		return store.Stream{}, store.ErrStreamGone
	}
	st := e.s
	st.AccessedAt = s.accessedAt(e)
	if st.Expired(now) {
		return store.Stream{}, store.ErrNotFound
	}
	return st, nil
}

// touch records a read-driven TTL renewal; the touch loop writes it.
func (s *Store) touch(e *entry, now time.Time) {
	if e.s.TTL <= 0 {
		return
	}
	s.touchMu.Lock()
	if now.After(s.touches[e.s.ID]) {
		s.touches[e.s.ID] = now
	}
	s.touchMu.Unlock()
}

// errNoRows keeps sql.ErrNoRows checks in one place.
func isNoRows(err error) bool { return errors.Is(err, sql.ErrNoRows) }
