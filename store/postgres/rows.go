package postgres

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/heraldstreams/herald/store"
	"github.com/heraldstreams/herald/store/sqlstore"
	"github.com/heraldstreams/herald/streamrules"
)

// rows is the core's state of the streams (sqlstore.StreamState) in one
// transaction: the rows it reads, locked for the rest of the
// transaction (replicas write at once), and written at once; a change is
// announced by a notification that commits with it.
type rows struct {
	s   *Store
	ctx context.Context
	tx  *wtx
}

var _ sqlstore.StreamState[*sqlstore.StreamRow] = (*rows)(nil)

func (w *rows) Load(path string) (*sqlstore.StreamRow, bool, error) {
	r, err := w.s.getRow(w.ctx, w.tx, path, true)
	return r, r != nil, err
}

func (w *rows) View(r *sqlstore.StreamRow, now time.Time) (store.Stream, error) { return r.View(now) }

func (w *rows) ClosedBy(r *sqlstore.StreamRow) *store.Producer { return r.ClosedBy }

func (w *rows) Producer(r *sqlstore.StreamRow, id string) (streamrules.ProducerState, bool, error) {
	var ps streamrules.ProducerState
	err := w.tx.QueryRow(w.ctx, sqlstore.GetProducerSQL, r.ID, id).Scan(&ps.Epoch, &ps.LastSeq)
	switch {
	case isNoRows(err):
		return ps, false, nil
	case err != nil:
		return ps, false, fmt.Errorf("read producer: %w", err)
	}
	return ps, true, nil
}

func (w *rows) ChunkRest(r *sqlstore.StreamRow, pos int64) ([]byte, error) {
	for r.SourceID != 0 && pos < r.ForkPosition {
		src, err := w.s.getRowID(w.ctx, w.tx, r.SourceID, false)
		if err != nil {
			return nil, err
		}
		if src == nil {
			return nil, fmt.Errorf("fork source %d of %s is missing", r.SourceID, r.Path)
		}
		r = src
	}
	var start, stop int64
	var data []byte
	err := w.tx.QueryRow(w.ctx, sqlstore.ChunksFromSQL+` LIMIT 1`, r.ID, pos, pos+1).Scan(&start, &stop, &data)
	if isNoRows(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read chunk: %w", err)
	}
	return data[pos-start:], nil
}

// Insert writes the stream's row with its tail past data, then data.
func (w *rows) Insert(st store.Stream, src *sqlstore.StreamRow, data []byte) (store.Stream, error) {
	var sourceID sql.NullInt64
	if src != nil {
		sourceID = sql.NullInt64{Int64: src.ID, Valid: true}
	}
	start := st.Tail
	st.Tail += int64(len(data))
	err := w.tx.QueryRow(w.ctx, sqlstore.InsertStreamSQL+` RETURNING id`,
		st.Path, st.ContentType, st.Tail, st.Closed, int64(st.TTL.Seconds()), sqlstore.Nanos(st.ExpiresAt),
		sqlstore.Nanos(st.AccessedAt), sqlstore.Nanos(st.CreatedAt), sourceID, st.ForkSource, st.ForkPosition,
		st.ForkOffset, st.ForkSubOffset).Scan(&st.ID)
	if err != nil {
		return st, fmt.Errorf("insert stream: %w", err)
	}
	if len(data) > 0 {
		if err := w.insertChunk(st.ID, start, data); err != nil {
			return st, err
		}
	}
	return st, w.s.notify(w.ctx, w.tx, store.TailChange{StreamID: st.ID, Path: st.Path, Tail: st.Tail, Closed: st.Closed, Created: true})
}

func (w *rows) insertChunk(id, start int64, data []byte) error {
	if _, err := w.tx.Exec(w.ctx, sqlstore.InsertChunkSQL, id, start, start+int64(len(data)), data); err != nil {
		return fmt.Errorf("insert chunk: %w", err)
	}
	return nil
}

func (w *rows) Apply(r *sqlstore.StreamRow, c sqlstore.StreamChange) (store.Stream, error) {
	st := r.Stream
	if c.Decision.Write {
		if err := w.insertChunk(st.ID, st.Tail, c.Data); err != nil {
			return st, err
		}
		st.Tail += int64(len(c.Data))
	}
	closedBy := r.ClosedBy
	if c.Decision.Close {
		st.Closed = true
		if c.Producer != nil {
			closedBy = c.Producer
		}
	}
	if c.Seq != "" {
		st.LastSeq = c.Seq
	}
	st.AccessedAt = c.Now
	byID, byEpoch, bySeq := sqlstore.ClosedByArgs(closedBy)
	if _, err := w.tx.Exec(w.ctx, updateStreamSQL,
		st.Tail, st.Closed, byID, byEpoch, bySeq, sqlstore.Nanos(st.AccessedAt), st.LastSeq, r.SoftDeleted, st.ID); err != nil {
		return st, fmt.Errorf("write stream: %w", err)
	}
	if d := c.Decision; d.ProducerChanged {
		if _, err := w.tx.Exec(w.ctx, sqlstore.UpsertProducerSQL, st.ID, c.Producer.ID, d.Producer.Epoch, d.Producer.LastSeq); err != nil {
			return st, fmt.Errorf("write producer: %w", err)
		}
	}
	return st, w.s.notify(w.ctx, w.tx, store.TailChange{StreamID: st.ID, Path: st.Path, Tail: st.Tail, Closed: st.Closed})
}

func (w *rows) Forks(r *sqlstore.StreamRow) (int, error) {
	var forks int
	err := w.tx.QueryRow(w.ctx, sqlstore.CountForksSQL, r.ID).Scan(&forks)
	return forks, err
}

func (w *rows) SoftDeleted(r *sqlstore.StreamRow) bool { return r.SoftDeleted }

func (w *rows) deleted(r *sqlstore.StreamRow) store.TailChange {
	return store.TailChange{StreamID: r.ID, Path: r.Path, Tail: r.Tail, Closed: r.Closed, Deleted: true}
}

func (w *rows) SoftDelete(r *sqlstore.StreamRow) error {
	if _, err := w.tx.Exec(w.ctx, `UPDATE streams SET soft_deleted = true WHERE id = $1`, r.ID); err != nil {
		return fmt.Errorf("soft-delete stream: %w", err)
	}
	return w.s.notify(w.ctx, w.tx, w.deleted(r))
}

func (w *rows) Remove(r *sqlstore.StreamRow) error {
	for _, q := range sqlstore.DeleteStreamSQL {
		if _, err := w.tx.Exec(w.ctx, q, r.ID); err != nil {
			return fmt.Errorf("delete stream: %w", err)
		}
	}
	if r.SoftDeleted {
		return nil
	}
	return w.s.notify(w.ctx, w.tx, w.deleted(r))
}

func (w *rows) Source(r *sqlstore.StreamRow) (*sqlstore.StreamRow, bool, error) {
	if r.SourceID == 0 {
		return nil, false, nil
	}
	src, err := w.s.getRowID(w.ctx, w.tx, r.SourceID, true)
	return src, src != nil, err
}
