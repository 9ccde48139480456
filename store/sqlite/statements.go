package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// statements are prepared once on the writer connection.
type statements struct {
	insertStream    *sql.Stmt
	updateStream    *sql.Stmt
	insertChunk     *sql.Stmt
	getProducer     *sql.Stmt
	upsertProducer  *sql.Stmt
	countForks      *sql.Stmt
	deleteChunks    *sql.Stmt
	deleteProducers *sql.Stmt
	deleteStream    *sql.Stmt
	chunksFrom      *sql.Stmt
}

const chunksFromSQL = `SELECT start_pos, end_pos, data FROM chunks WHERE stream_id = ? AND end_pos > ? AND start_pos < ? ORDER BY end_pos`

func prepare(ctx context.Context, conn *sql.Conn) (*statements, error) {
	st := &statements{}
	for _, p := range []struct {
		dst **sql.Stmt
		sql string
	}{
		{&st.insertStream, `INSERT INTO streams (path, content_type, tail, closed, ttl_seconds, expires_at, accessed_at, created_at,
			fork_source_id, fork_source_path, fork_position, fork_offset, fork_sub_offset)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`},
		{&st.updateStream, `UPDATE streams SET tail = ?, closed = ?, closed_by_id = ?, closed_by_epoch = ?, closed_by_seq = ?,
			accessed_at = ?, last_seq = ?, soft_deleted = ? WHERE id = ?`},
		{&st.insertChunk, `INSERT INTO chunks (stream_id, start_pos, end_pos, data) VALUES (?, ?, ?, ?)`},
		{&st.getProducer, `SELECT epoch, last_seq FROM producers WHERE stream_id = ? AND producer_id = ?`},
		{&st.upsertProducer, `INSERT INTO producers (stream_id, producer_id, epoch, last_seq) VALUES (?, ?, ?, ?)
			ON CONFLICT (stream_id, producer_id) DO UPDATE SET epoch = excluded.epoch, last_seq = excluded.last_seq`},
		{&st.countForks, `SELECT count(*) FROM streams WHERE fork_source_id = ?`},
		{&st.deleteChunks, `DELETE FROM chunks WHERE stream_id = ?`},
		{&st.deleteProducers, `DELETE FROM producers WHERE stream_id = ?`},
		{&st.deleteStream, `DELETE FROM streams WHERE id = ?`},
		{&st.chunksFrom, chunksFromSQL},
	} {
		stmt, err := conn.PrepareContext(ctx, p.sql)
		if err != nil {
			return nil, errors.Join(fmt.Errorf("sqlite: prepare: %w", err), st.close())
		}
		*p.dst = stmt
	}
	return st, nil
}

func (st *statements) byName(name string) *sql.Stmt {
	switch name {
	case "deleteChunks":
		return st.deleteChunks
	case "deleteProducers":
		return st.deleteProducers
	case "deleteStream":
		return st.deleteStream
	}
	panic("sqlite: unknown statement " + name)
}

func (st *statements) close() error {
	var errs []error
	for _, s := range []*sql.Stmt{st.insertStream, st.updateStream, st.insertChunk, st.getProducer, st.upsertProducer,
		st.countForks, st.deleteChunks, st.deleteProducers, st.deleteStream, st.chunksFrom} {
		if s != nil {
			errs = append(errs, s.Close())
		}
	}
	return errors.Join(errs...)
}

func nullID(id int64) sql.NullInt64 {
	return sql.NullInt64{Int64: id, Valid: id != 0}
}
