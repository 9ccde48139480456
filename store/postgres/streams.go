package postgres

import (
	"context"
	"fmt"

	"github.com/heraldstreams/herald/store"
	"github.com/heraldstreams/herald/store/sqlstore"
	"github.com/jackc/pgx/v5"
)

// The streams' contract methods: the core decides (sqlstore.CreateStream
// and the rest) over the rows this backend locks (rows, in rows.go).

// streamsOf is the state of the streams in a write of the core.
func (s *Store) streamsOf(tx sqlstore.Tx) *rows {
	w := tx.(pgTx)
	return &rows{s: s, ctx: w.ctx, tx: w.tx}
}

// StreamCreate implements store.Store.
func (s *Store) StreamCreate(ctx context.Context, params *store.StreamCreateParams) (*store.StreamCreateResult, error) {
	var res *store.StreamCreateResult
	err := sqlstore.WriteStreams(ctx, s.Store, s.streamsOf, func(r *rows) error {
		var err error
		res, err = sqlstore.CreateStream(r, params)
		return err
	})
	if err != nil {
		return nil, err
	}
	return res, nil
}

// StreamAppend implements store.Store. The stream's row lock orders
// concurrent appends; each commits on its own.
func (s *Store) StreamAppend(ctx context.Context, params *store.StreamAppendParams) (*store.StreamAppendResult, error) {
	var res *store.StreamAppendResult
	err := sqlstore.WriteStreams(ctx, s.Store, s.streamsOf, func(r *rows) error {
		var err error
		res, err = sqlstore.AppendStream(r, params)
		return err
	})
	if err != nil {
		return nil, err
	}
	return res, nil
}

// StreamDelete implements store.Store.
func (s *Store) StreamDelete(ctx context.Context, params *store.StreamDeleteParams) error {
	return sqlstore.WriteStreams(ctx, s.Store, s.streamsOf, func(r *rows) error {
		return sqlstore.DeleteStreamAt(r, params.Path, params.Now)
	})
}

// StreamGet implements store.Store.
func (s *Store) StreamGet(ctx context.Context, params *store.StreamGetParams) (*store.Stream, error) {
	return s.GetStream(ctx, params)
}

// StreamDeleteExpired implements store.Store. Each stream is removed in
// its own transaction, which checks again that it expired.
func (s *Store) StreamDeleteExpired(ctx context.Context, params *store.StreamDeleteExpiredParams) (int, error) {
	if err := s.usable(); err != nil {
		return 0, err
	}
	return sqlstore.ExpireStreams(ctx, s.Store, params, s.streamsOf)
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
		return nil, unavailable(err)
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

// getRow reads the stream at path in tx (nil when none); lock takes its
// row lock for the transaction.
func (s *Store) getRow(ctx context.Context, tx *wtx, path string, lock bool) (*sqlstore.StreamRow, error) {
	return s.LoadStream(pgTx{ctx, tx, s}, path, lock)
}

// getRowID reads the stream with an id in tx (nil when none).
func (s *Store) getRowID(ctx context.Context, tx *wtx, id int64, lock bool) (*sqlstore.StreamRow, error) {
	return s.LoadStreamID(pgTx{ctx, tx, s}, id, lock)
}
