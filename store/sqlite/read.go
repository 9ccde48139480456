package sqlite

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/heraldstreams/herald/store"
	"github.com/heraldstreams/herald/store/sqlstore"
)

// StreamGet implements store.Store.
func (s *Store) StreamGet(ctx context.Context, params *store.StreamGetParams) (*store.Stream, error) {
	e, err := s.lookup(ctx, params.Path)
	if err != nil {
		return nil, err
	}
	st, err := s.view(e, params.Now)
	if err != nil {
		return nil, err
	}
	return &st, nil
}

// StreamRead implements store.Store. It reads without the committer: data
// below a published tail is committed and never changes.
func (s *Store) StreamRead(ctx context.Context, params *store.StreamReadParams) (*store.StreamReadResult, error) {
	e, err := s.lookup(ctx, params.Path)
	if err != nil {
		return nil, err
	}
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
	r := &sqlstore.Range{Max: params.MaxBytes}
	if err := sqlstore.ReadRange(chunkSource{s, ctx}, r, e, from, st.Tail); err != nil {
		return nil, err
	}
	if sqlstore.Touched(&st, params.Internal) {
		s.touch(e, params.Now) // written later, by the touch loop
	}
	next := from + int64(len(r.Out))
	return &store.StreamReadResult{Stream: st, Data: r.Out, Next: next}, nil
}

// chunkSource reads a stream's chunks for sqlstore.ReadRange: from the
// recent cache when it holds the range, else from the read pool.
type chunkSource struct {
	s   *Store
	ctx context.Context
}

func (c chunkSource) Fork(e *entry) (int64, bool) { return e.forkPosition(), e.sourceID() != 0 }

func (c chunkSource) Source(e *entry) (*entry, error) {
	src, err := c.s.lookupID(c.ctx, e.sourceID())
	if err != nil {
		return nil, err
	}
	if src == nil {
		return nil, fmt.Errorf("sqlite: fork source %d of %s is missing", e.sourceID(), e.path)
	}
	return src, nil
}

func (c chunkSource) Chunks(e *entry, r *sqlstore.Range) error {
	from, end := r.Window()
	if data, ok := c.s.recent.get(e.id, from, end); ok {
		r.Add(from, end, data)
		return nil
	}
	rows, err := c.s.readChunks.QueryContext(c.ctx, e.id, from, end)
	if err != nil {
		return fmt.Errorf("sqlite: read chunks: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var start, stop int64
		var data sql.RawBytes
		if err := rows.Scan(&start, &stop, &data); err != nil {
			return fmt.Errorf("sqlite: read chunks: %w", err)
		}
		if !r.Add(start, stop, data) {
			break
		}
	}
	return rows.Err()
}

// chunkAt returns the stored chunk holding position pos of e (descending
// into fork sources) and the chunk's start position (nil at pos when no
// chunk holds it). It runs on the writer connection, inside the
// committer's transaction.
func (b *batch) chunkAt(e *entry, pos int64) ([]byte, int64, error) {
	for e.sourceID() != 0 && pos < e.forkPosition() {
		src, err := b.getID(e.sourceID())
		if err != nil {
			return nil, 0, err
		}
		if src == nil {
			return nil, 0, fmt.Errorf("sqlite: fork source %d of %s is missing", e.sourceID(), e.path)
		}
		e = src
	}
	var start, stop int64
	var data []byte
	err := b.s.stmts.chunksFrom.QueryRowContext(b.ctx, e.id, pos, pos+1).Scan(&start, &stop, &data)
	if isNoRows(err) {
		return nil, pos, nil // no data at pos: the sub-offset spans nothing
	}
	if err != nil {
		return nil, 0, fmt.Errorf("sqlite: read chunk: %w", err)
	}
	return data, start, nil
}
