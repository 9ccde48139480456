package sqlite

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/heraldstreams/herald/store"
)

// StreamGet implements store.Store.
func (s *Store) StreamGet(ctx context.Context, params *store.StreamGetParams) (*store.Stream, error) {
	st, err := s.view(s.lookup(params.Path), params.Now)
	if err != nil {
		return nil, err
	}
	return &st, nil
}

// StreamRead implements store.Store. It reads without the committer: data
// below a published tail is committed and never changes.
func (s *Store) StreamRead(ctx context.Context, params *store.StreamReadParams) (*store.StreamReadResult, error) {
	e := s.lookup(params.Path)
	st, err := s.view(e, params.Now)
	if err != nil {
		return nil, err
	}
	from := params.From
	if from < 0 {
		from = 0
	}
	if from > st.Tail {
		return nil, store.ErrPositionBeyondTail
	}
	r := &rangeReader{s: s, max: params.MaxBytes}
	if err := r.read(ctx, e, from, st.Tail); err != nil {
		return nil, err
	}
	if !params.Internal {
		s.touch(e, params.Now)
	}
	next := from + int64(len(r.out))
	return &store.StreamReadResult{Stream: st, Data: r.out, Next: next}, nil
}

// rangeReader gathers data of a stream and its fork sources.
type rangeReader struct {
	s   *Store
	max int
	out []byte
}

func (r *rangeReader) full() bool { return r.max > 0 && len(r.out) >= r.max }

// read appends the data of [from, end) of e, descending into fork sources
// below e's fork position.
func (r *rangeReader) read(ctx context.Context, e *entry, from, end int64) error {
	if fp := e.forkPosition(); from < fp && e.sourceID() != 0 {
		src := r.s.lookupID(e.sourceID())
		if src == nil {
			return fmt.Errorf("sqlite: fork source %d of %s is missing", e.sourceID(), e.path)
		}
		if err := r.read(ctx, src, from, min(end, fp)); err != nil {
			return err
		}
		if r.full() {
			return nil
		}
		from = fp
	}
	if from >= end {
		return nil
	}
	if data, ok := r.s.recent.get(e.id, from, end); ok {
		r.out = append(r.out, data...)
		return nil
	}
	rows, err := r.s.readChunks.QueryContext(ctx, e.id, from, end)
	if err != nil {
		return fmt.Errorf("sqlite: read chunks: %w", err)
	}
	defer rows.Close()
	for rows.Next() && !r.full() {
		var start, stop int64
		var data sql.RawBytes
		if err := rows.Scan(&start, &stop, &data); err != nil {
			return fmt.Errorf("sqlite: read chunks: %w", err)
		}
		lo, hi := max(from, start)-start, min(end, stop)-start
		if r.out == nil {
			r.out = make([]byte, 0, min(int64(r.max)+int64(len(data)), end-from))
		}
		r.out = append(r.out, data[lo:hi]...)
	}
	return rows.Err()
}

// chunkAt returns the stored chunk holding position pos of e (descending
// into fork sources) and the chunk's start position (nil at pos when no
// chunk holds it). It runs on the writer connection, inside the
// committer's transaction.
func (s *Store) chunkAt(ctx context.Context, e *entry, pos int64) ([]byte, int64, error) {
	for e.sourceID() != 0 && pos < e.forkPosition() {
		src := s.byID[e.sourceID()]
		if src == nil {
			return nil, 0, fmt.Errorf("sqlite: fork source %d of %s is missing", e.sourceID(), e.path)
		}
		e = src
	}
	var start, stop int64
	var data []byte
	err := s.stmts.chunksFrom.QueryRowContext(ctx, e.id, pos, pos+1).Scan(&start, &stop, &data)
	if isNoRows(err) {
		return nil, pos, nil // no data at pos: the sub-offset spans nothing
	}
	if err != nil {
		return nil, 0, fmt.Errorf("sqlite: read chunk: %w", err)
	}
	return data, start, nil
}
