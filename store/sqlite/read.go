package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"

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
	exts, n, err := extents(c.ctx, c.s.readChunks, e.id, from, end, r.Room())
	if err != nil {
		return err
	}
	return r.Fill(n, func(dst []byte) error {
		for _, x := range exts {
			if err := c.s.seg.readAt(dst[:x.n], x.seg, x.off); err != nil {
				return readErr(err)
			}
			dst = dst[x.n:]
		}
		return nil
	})
}

// readErr is what a reader is told of a failed segment read: a segment
// deleted, or closed for deletion, since the reader found the stream
// holds only bytes of removed streams, so the stream is gone.
func readErr(err error) error {
	if errors.Is(err, errSegmentGone) || errors.Is(err, os.ErrClosed) {
		return store.ErrNotFound
	}
	return err
}

// extent is a run of a stream's bytes lying contiguous in one segment.
type extent struct{ seg, off, n int64 }

// extents finds where the bytes [from, end) of stream id lie, with
// chunksFrom (chunksFromSQL prepared on a connection): in order, adjacent
// runs of one segment merged, up to the chunk that brings them to room
// bytes (0: no bound). n is their length.
func extents(ctx context.Context, chunksFrom *sql.Stmt, id, from, end int64, room int) (exts []extent, n int, err error) {
	rows, err := chunksFrom.QueryContext(ctx, id, from, end)
	if err != nil {
		return nil, 0, fmt.Errorf("sqlite: read chunks: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var start, stop, seg, off int64
		if err := rows.Scan(&start, &stop, &seg, &off); err != nil {
			return nil, 0, fmt.Errorf("sqlite: read chunks: %w", err)
		}
		lo, hi := max(from, start)-start, min(end, stop)-start
		x := extent{seg, off + lo, hi - lo}
		if k := len(exts) - 1; k >= 0 && exts[k].seg == x.seg && exts[k].off+exts[k].n == x.off {
			exts[k].n += x.n
		} else {
			exts = append(exts, x)
		}
		n += int(x.n)
		if room > 0 && n >= room {
			break
		}
	}
	return exts, n, rows.Err()
}

// chunkAt returns the stored chunk holding position pos of e (descending
// into fork sources) and the chunk's start position (nil at pos when no
// chunk holds it). It runs on the writer connection, inside the
// committer's transaction, and may read bytes of its own batch.
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
	var start, stop, seg, off int64
	err := b.s.stmts.chunksFrom.QueryRowContext(b.ctx, e.id, pos, pos+1).Scan(&start, &stop, &seg, &off)
	if isNoRows(err) {
		return nil, pos, nil // no data at pos: the sub-offset spans nothing
	}
	if err != nil {
		return nil, 0, fmt.Errorf("sqlite: read chunk: %w", err)
	}
	data := make([]byte, stop-start)
	if err := b.s.seg.readPending(data, seg, off); err != nil {
		return nil, 0, fmt.Errorf("sqlite: read chunk: %w", err)
	}
	return data, start, nil
}
