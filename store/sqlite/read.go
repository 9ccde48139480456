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
	res, r, err := s.readRange(ctx, params, nil, 0)
	if err != nil {
		return nil, err
	}
	res.Data = r.Out
	return res, nil
}

// StreamReadFiles implements store.StreamFileReader: the sections are of
// segment files, each opened for this read.
func (s *Store) StreamReadFiles(ctx context.Context, params *store.StreamReadParams) (*store.StreamFileRead, error) {
	return s.readFiles(ctx, params, maxSections)
}

// readFiles is StreamReadFiles with at most sections sections.
func (s *Store) readFiles(ctx context.Context, params *store.StreamReadParams, sections int) (*store.StreamFileRead, error) {
	fr := &store.StreamFileRead{}
	res, r, err := s.readRange(ctx, params, fr, sections)
	if err != nil {
		return nil, errors.Join(err, fr.Close())
	}
	fr.Result, fr.Len = *res, int64(r.Len())
	return fr, nil
}

// readRange reads as params say: the bytes into the range's Out, or, when
// files is not nil, where they lie into it, in at most sections sections.
func (s *Store) readRange(ctx context.Context, params *store.StreamReadParams, files *store.StreamFileRead, sections int) (*store.StreamReadResult, *sqlstore.Range, error) {
	e, err := s.lookup(ctx, params.Path)
	if err != nil {
		return nil, nil, err
	}
	st, err := s.view(e, params.Now)
	if err != nil {
		return nil, nil, err
	}
	from := params.From
	if from < 0 {
		from = 0
	}
	if from > st.Tail {
		return nil, nil, store.ErrPositionBeyondTail
	}
	r := &sqlstore.Range{Max: params.MaxBytes}
	if err := sqlstore.ReadRange(chunkSource{s, ctx, files, sections}, r, e, from, st.Tail); err != nil {
		return nil, nil, err
	}
	if sqlstore.Touched(&st, params.Internal) {
		s.touch(e, params.Now) // written later, by the touch loop
	}
	return &store.StreamReadResult{Stream: st, Next: from + int64(r.Len())}, r, nil
}

// chunkSource reads a stream's chunks for sqlstore.ReadRange: from the
// recent cache when it holds the range, else from the segments the read
// pool's index points to; into files when not nil (see StreamReadFiles),
// in at most maxSections sections.
type chunkSource struct {
	s           *Store
	ctx         context.Context
	files       *store.StreamFileRead
	maxSections int
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
	runs := 0 // no bound on the extents of a read into memory
	if c.files != nil {
		if runs = c.maxSections - len(c.files.Sections); runs <= 0 {
			// A fork's source took every section: its own bytes wait
			// for the next read.
			r.Stop()
			return nil
		}
	}
	if data, ok := c.s.recent.get(e.id, from, end); ok {
		if c.files != nil {
			c.files.Sections = append(c.files.Sections, store.Section{Data: data, N: int64(len(data))})
			r.Count(len(data))
			return nil
		}
		r.Add(from, end, data)
		return nil
	}
	exts, n, cut, err := extents(c.ctx, c.s.readChunks, e.id, from, end, r.Room(), runs)
	if err != nil {
		return err
	}
	if cut {
		r.Stop()
	}
	if c.files != nil {
		return c.sections(exts, r, n)
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

// sections records where the extents lie, in files opened for the read.
func (c chunkSource) sections(exts []extent, r *sqlstore.Range, n int) error {
	for _, x := range exts {
		f, err := c.s.seg.openRead(c.files, x.seg)
		if err != nil {
			return readErr(err)
		}
		c.files.Sections = append(c.files.Sections, store.Section{File: f, Off: x.off, N: x.n})
	}
	r.Count(n)
	return nil
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

// maxSections bounds the sections of one StreamReadFiles, whose caller
// may read far more bytes than a read into memory (a stream of small
// appends interleaved with other streams' lies in as many runs as it has
// appends): it bounds the memory the read's list of them takes.
const maxSections = 1 << 15

// extent is a run of a stream's bytes lying contiguous in one segment.
type extent struct{ seg, off, n int64 }

// extents finds where the bytes [from, end) of stream id lie, with
// chunksFrom (chunksFromSQL prepared on a connection): in order, adjacent
// runs of one segment merged, up to the chunk that brings them to room
// bytes (0: no bound), and to runs runs (0: no bound; cut says the
// extents stop there, short of room and of end). n is their length.
func extents(ctx context.Context, chunksFrom *sql.Stmt, id, from, end int64, room, runs int) (exts []extent, n int, cut bool, err error) {
	rows, err := chunksFrom.QueryContext(ctx, id, from, end)
	if err != nil {
		return nil, 0, false, fmt.Errorf("sqlite: read chunks: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var start, stop, seg, off int64
		if err := rows.Scan(&start, &stop, &seg, &off); err != nil {
			return nil, 0, false, fmt.Errorf("sqlite: read chunks: %w", err)
		}
		lo, hi := max(from, start)-start, min(end, stop)-start
		x := extent{seg, off + lo, hi - lo}
		if k := len(exts) - 1; k >= 0 && exts[k].seg == x.seg && exts[k].off+exts[k].n == x.off {
			exts[k].n += x.n
		} else {
			if runs > 0 && len(exts) >= runs {
				return exts, n, true, rows.Err()
			}
			exts = append(exts, x)
		}
		n += int(x.n)
		if room > 0 && n >= room {
			break
		}
	}
	return exts, n, false, rows.Err()
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
	if err := b.flushChunk(); err != nil {
		return nil, 0, err
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
