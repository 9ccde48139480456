package postgres

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/heraldstreams/herald/store"
	"github.com/heraldstreams/herald/store/internal/codec"
	"github.com/heraldstreams/herald/store/sqlstore"
	"github.com/heraldstreams/herald/streamrules"
	"github.com/jackc/pgx/v5"
)

// getRow reads the stream at path in tx (nil when none); lock takes its
// row lock for the transaction.
func (s *Store) getRow(ctx context.Context, tx *wtx, path string, lock bool) (*sqlstore.StreamRow, error) {
	return s.LoadStream(pgTx{ctx, tx, s}, path, lock)
}

// getRowID reads the stream with an id in tx (nil when none).
func (s *Store) getRowID(ctx context.Context, tx *wtx, id int64, lock bool) (*sqlstore.StreamRow, error) {
	return s.LoadStreamID(pgTx{ctx, tx, s}, id, lock)
}

// StreamCreate implements store.Store.
func (s *Store) StreamCreate(ctx context.Context, params *store.StreamCreateParams) (*store.StreamCreateResult, error) {
	var res *store.StreamCreateResult
	err := s.tx(ctx, func(tx *wtx) error {
		var err error
		res, err = s.create(ctx, tx, params)
		return err
	})
	if err != nil {
		return nil, err
	}
	return res, nil
}

// create creates a stream in tx (see StreamCreate).
func (s *Store) create(ctx context.Context, tx *wtx, p *store.StreamCreateParams) (*store.StreamCreateResult, error) {
	cur, err := s.getRow(ctx, tx, p.Path, true)
	if err != nil {
		return nil, err
	}
	if cur != nil {
		st, err := cur.View(p.Now)
		switch {
		case errors.Is(err, store.ErrNotFound):
			// Expired: clear it away, then create afresh (unless forks
			// still hold it, which keeps the path taken).
			if gone, err := s.deleteStream(ctx, tx, cur); err != nil {
				return nil, err
			} else if !gone {
				return nil, store.ErrStreamGone
			}
		case err != nil:
			return nil, err
		case !streamrules.SameCreateConfig(st.Config(), p.Config()):
			return nil, store.ErrStreamExists
		default:
			return &store.StreamCreateResult{Stream: st}, nil
		}
	}
	st := store.Stream{Path: p.Path, ContentType: p.ContentType, TTL: p.TTL, ExpiresAt: p.ExpiresAt,
		AccessedAt: p.Now, CreatedAt: p.Now, Closed: p.Closed}
	var sourceID sql.NullInt64
	if p.ForkSource != "" {
		src, err := s.getRow(ctx, tx, p.ForkSource, true)
		if err != nil {
			return nil, err
		}
		srcStream, err := src.View(p.Now)
		if err != nil {
			return nil, store.ForkSourceError(err)
		}
		d, err := streamrules.DecideFork(srcStream.Config(), srcStream.Tail, p.Config(), func(anchor int64) ([]byte, error) {
			return s.chunkRest(ctx, tx, src, anchor)
		})
		if err != nil {
			return nil, err
		}
		st.ContentType, st.TTL, st.ExpiresAt = d.ContentType, d.TTL, d.ExpiresAt
		st.ForkSource, st.ForkOffset, st.ForkSubOffset, st.ForkPosition = src.Path, d.Anchor, p.ForkSubOffset, d.Position
		st.Tail = d.Position
		sourceID = sql.NullInt64{Int64: src.ID, Valid: true}
	}
	err = tx.QueryRow(ctx, sqlstore.InsertStreamSQL+` RETURNING id`,
		st.Path, st.ContentType, st.Tail, st.Closed, int64(st.TTL.Seconds()), codec.Nanos(st.ExpiresAt),
		codec.Nanos(st.AccessedAt), codec.Nanos(st.CreatedAt), sourceID, st.ForkSource, st.ForkPosition,
		st.ForkOffset, st.ForkSubOffset).Scan(&st.ID)
	if err != nil {
		return nil, fmt.Errorf("insert stream: %w", err)
	}
	if len(p.Data) > 0 {
		if err := insertChunk(ctx, tx, st.ID, st.Tail, p.Data); err != nil {
			return nil, err
		}
		st.Tail += int64(len(p.Data))
		if _, err := tx.Exec(ctx, `UPDATE streams SET tail = $2 WHERE id = $1`, st.ID, st.Tail); err != nil {
			return nil, fmt.Errorf("write stream: %w", err)
		}
	}
	if err := s.notify(ctx, tx, store.TailChange{StreamID: st.ID, Path: st.Path, Tail: st.Tail, Closed: st.Closed, Created: true}); err != nil {
		return nil, err
	}
	return &store.StreamCreateResult{Stream: st, Created: true}, nil
}

func insertChunk(ctx context.Context, tx pgx.Tx, id, start int64, data []byte) error {
	if _, err := tx.Exec(ctx, sqlstore.InsertChunkSQL,
		id, start, start+int64(len(data)), data); err != nil {
		return fmt.Errorf("insert chunk: %w", err)
	}
	return nil
}

// chunkRest returns the stored data of r from pos to the end of the chunk
// holding it (descending into fork sources), nil when none holds it.
func (s *Store) chunkRest(ctx context.Context, q *wtx, r *sqlstore.StreamRow, pos int64) ([]byte, error) {
	for r.SourceID != 0 && pos < r.ForkPosition {
		src, err := s.getRowID(ctx, q, r.SourceID, false)
		if err != nil {
			return nil, err
		}
		if src == nil {
			return nil, fmt.Errorf("fork source %d of %s is missing", r.SourceID, r.Path)
		}
		r = src
	}
	var start int64
	var data []byte
	err := q.QueryRow(ctx, `SELECT start_pos, data FROM chunks WHERE stream_id = $1 AND end_pos > $2 AND start_pos <= $2
		ORDER BY end_pos LIMIT 1`, r.ID, pos).Scan(&start, &data)
	if isNoRows(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read chunk: %w", err)
	}
	return data[pos-start:], nil
}

// StreamAppend implements store.Store. The stream's row lock orders
// concurrent appends; each commits on its own.
func (s *Store) StreamAppend(ctx context.Context, params *store.StreamAppendParams) (*store.StreamAppendResult, error) {
	var res *store.StreamAppendResult
	err := s.tx(ctx, func(tx *wtx) error {
		var err error
		res, err = s.append(ctx, tx, params)
		return err
	})
	if err != nil {
		return nil, err
	}
	return res, nil
}

// append appends in tx (see StreamAppend).
func (s *Store) append(ctx context.Context, tx *wtx, p *store.StreamAppendParams) (*store.StreamAppendResult, error) {
	r, err := s.getRow(ctx, tx, p.Path, true)
	if err != nil {
		return nil, err
	}
	if _, err := r.View(p.Now); err != nil {
		return nil, err
	}
	var cur *streamrules.ProducerState
	if p.Producer != nil {
		var ps streamrules.ProducerState
		err := tx.QueryRow(ctx, sqlstore.GetProducerSQL,
			r.ID, p.Producer.ID).Scan(&ps.Epoch, &ps.LastSeq)
		switch {
		case err == nil:
			cur = &ps
		case !isNoRows(err):
			return nil, fmt.Errorf("read producer: %w", err)
		}
	}
	d, err := streamrules.DecideAppend(streamrules.AppendState{
		ContentType: r.ContentType,
		Closed:      r.Closed,
		LastSeq:     r.LastSeq,
		ClosedBy:    r.ClosedBy,
		Producer:    cur,
	}, p.AppendRequest())
	if err != nil {
		var ce *store.ClosedError
		if errors.As(err, &ce) {
			err = &store.ClosedError{Tail: r.Tail}
		}
		return nil, err
	}
	res := &store.StreamAppendResult{Outcome: d.Outcome, Start: r.Tail}
	if d.Producer != nil {
		res.ProducerEpoch, res.ProducerSeq = d.Producer.Epoch, d.Producer.LastSeq
	}
	if !d.Write && (!d.Close || r.Closed) {
		// Duplicate, or closing a closed stream: nothing to write.
		res.Stream = r.Stream
		return res, nil
	}
	st := r.Stream
	if d.Write {
		if err := insertChunk(ctx, tx, st.ID, st.Tail, p.Data); err != nil {
			return nil, err
		}
		st.Tail += int64(len(p.Data))
	}
	closedBy := r.ClosedBy
	if d.Close {
		st.Closed = true
		if p.Producer != nil {
			closedBy = p.Producer
		}
	}
	if p.Seq != "" {
		st.LastSeq = p.Seq
	}
	st.AccessedAt = p.Now
	var byID sql.NullString
	var byEpoch, bySeq sql.NullInt64
	if closedBy != nil {
		byID = sql.NullString{String: closedBy.ID, Valid: true}
		byEpoch, bySeq = sql.NullInt64{Int64: closedBy.Epoch, Valid: true}, sql.NullInt64{Int64: closedBy.Seq, Valid: true}
	}
	if _, err := tx.Exec(ctx, `UPDATE streams SET tail = $2, closed = $3, closed_by_id = $4, closed_by_epoch = $5, closed_by_seq = $6,
		accessed_at = $7, last_seq = $8 WHERE id = $1`,
		st.ID, st.Tail, st.Closed, byID, byEpoch, bySeq, codec.Nanos(st.AccessedAt), st.LastSeq); err != nil {
		return nil, fmt.Errorf("write stream: %w", err)
	}
	if d.ProducerChanged {
		if _, err := tx.Exec(ctx, sqlstore.UpsertProducerSQL,
			st.ID, p.Producer.ID, d.Producer.Epoch, d.Producer.LastSeq); err != nil {
			return nil, fmt.Errorf("write producer: %w", err)
		}
	}
	if err := s.notify(ctx, tx, store.TailChange{StreamID: st.ID, Path: st.Path, Tail: st.Tail, Closed: st.Closed}); err != nil {
		return nil, err
	}
	res.Stream = st
	return res, nil
}

// StreamGet implements store.Store.
func (s *Store) StreamGet(ctx context.Context, params *store.StreamGetParams) (*store.Stream, error) {
	return s.GetStream(ctx, params)
}

// StreamRead implements store.Store. The metadata and the data are read
// in one snapshot; a read that is an access then renews a sliding TTL.
func (s *Store) StreamRead(ctx context.Context, params *store.StreamReadParams) (*store.StreamReadResult, error) {
	if err := s.usable(); err != nil {
		return nil, err
	}
	var res *store.StreamReadResult
	err := pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(ptx pgx.Tx) error {
		tx := &wtx{Tx: ptx}
		r, err := s.getRow(ctx, tx, params.Path, false)
		if err != nil {
			return err
		}
		st, err := r.View(params.Now)
		if err != nil {
			return err
		}
		from := max(params.From, 0)
		if from > st.Tail {
			return store.ErrPositionBeyondTail
		}
		rg := &sqlstore.Range{Max: params.MaxBytes}
		if err := sqlstore.ReadRange(chunkSource{s, ctx, tx}, rg, r, from, st.Tail); err != nil {
			return err
		}
		res = &store.StreamReadResult{Stream: st, Data: rg.Out, Next: from + int64(len(rg.Out))}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if err := s.TouchStream(ctx, &res.Stream, params.Internal, params.Now); err != nil {
		return nil, err
	}
	return res, nil
}

// chunkSource reads a stream's chunks for sqlstore.ReadRange, in the
// read's snapshot.
type chunkSource struct {
	s   *Store
	ctx context.Context
	q   *wtx
}

func (c chunkSource) Fork(r *sqlstore.StreamRow) (int64, bool) {
	return r.ForkPosition, r.SourceID != 0
}

func (c chunkSource) Source(r *sqlstore.StreamRow) (*sqlstore.StreamRow, error) {
	src, err := c.s.getRowID(c.ctx, c.q, r.SourceID, false)
	if err != nil {
		return nil, err
	}
	if src == nil {
		return nil, fmt.Errorf("postgres: fork source %d of %s is missing", r.SourceID, r.Path)
	}
	return src, nil
}

func (c chunkSource) Chunks(r *sqlstore.StreamRow, rg *sqlstore.Range) error {
	from, end := rg.Window()
	rows, err := c.q.Query(c.ctx, sqlstore.ChunksFromSQL, r.ID, from, end)
	if err != nil {
		return fmt.Errorf("postgres: read chunks: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var start, stop int64
		var data []byte
		if err := rows.Scan(&start, &stop, &data); err != nil {
			return fmt.Errorf("postgres: read chunks: %w", err)
		}
		if !rg.Add(start, stop, data) {
			break
		}
	}
	return rows.Err()
}

// StreamDelete implements store.Store.
func (s *Store) StreamDelete(ctx context.Context, params *store.StreamDeleteParams) error {
	return s.tx(ctx, func(tx *wtx) error {
		r, err := s.getRow(ctx, tx, params.Path, true)
		if err != nil {
			return err
		}
		if _, err := r.View(params.Now); err != nil {
			return err
		}
		_, err = s.deleteStream(ctx, tx, r)
		return err
	})
}

// deleteStream deletes r (locked by the caller) by the rule of forks
// (sqlstore.DeleteStream). gone reports whether r's row was removed.
func (s *Store) deleteStream(ctx context.Context, tx *wtx, r *sqlstore.StreamRow) (gone bool, err error) {
	return sqlstore.DeleteStream(txDeleter{s, ctx, tx}, r)
}

// txDeleter deletes streams in a transaction for sqlstore.DeleteStream.
type txDeleter struct {
	s   *Store
	ctx context.Context
	tx  *wtx
}

func (d txDeleter) Forks(r *sqlstore.StreamRow) (int, error) {
	var forks int
	err := d.tx.QueryRow(d.ctx, sqlstore.CountForksSQL, r.ID).Scan(&forks)
	return forks, err
}

func (d txDeleter) SoftDeleted(r *sqlstore.StreamRow) bool { return r.SoftDeleted }

func (d txDeleter) deleted(r *sqlstore.StreamRow) store.TailChange {
	return store.TailChange{StreamID: r.ID, Path: r.Path, Tail: r.Tail, Closed: r.Closed, Deleted: true}
}

func (d txDeleter) SoftDelete(r *sqlstore.StreamRow) error {
	if _, err := d.tx.Exec(d.ctx, `UPDATE streams SET soft_deleted = true WHERE id = $1`, r.ID); err != nil {
		return fmt.Errorf("soft-delete stream: %w", err)
	}
	return d.s.notify(d.ctx, d.tx, d.deleted(r))
}

func (d txDeleter) Remove(r *sqlstore.StreamRow) error {
	for _, q := range sqlstore.DeleteStreamSQL {
		if _, err := d.tx.Exec(d.ctx, q, r.ID); err != nil {
			return fmt.Errorf("delete stream: %w", err)
		}
	}
	if r.SoftDeleted {
		return nil
	}
	return d.s.notify(d.ctx, d.tx, d.deleted(r))
}

func (d txDeleter) Source(r *sqlstore.StreamRow) (*sqlstore.StreamRow, bool, error) {
	if r.SourceID == 0 {
		return nil, false, nil
	}
	src, err := d.s.getRowID(d.ctx, d.tx, r.SourceID, true)
	return src, src != nil, err
}

// StreamDeleteExpired implements store.Store. Each stream is removed in
// its own transaction, which checks again that it expired.
func (s *Store) StreamDeleteExpired(ctx context.Context, params *store.StreamDeleteExpiredParams) (int, error) {
	if err := s.usable(); err != nil {
		return 0, err
	}
	paths, err := s.ExpiredStreams(ctx, params.Now, params.Limit)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, p := range paths {
		var deleted bool
		err := s.tx(ctx, func(tx *wtx) error {
			deleted = false
			r, err := s.getRow(ctx, tx, p, true)
			if err != nil || r == nil || r.SoftDeleted || !r.Expired(params.Now) {
				return err
			}
			if _, err := s.deleteStream(ctx, tx, r); err != nil {
				return err
			}
			deleted = true
			return nil
		})
		if err != nil {
			return n, fmt.Errorf("postgres: delete expired stream: %w", err)
		}
		if deleted {
			n++
		}
	}
	return n, nil
}
