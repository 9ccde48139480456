package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/heraldstreams/herald/store/sqlstore"
)

// statements are prepared once on the writer connection: the core's
// statements of streams (sqlstore), in SQLite's placeholders.
type statements struct {
	insertStream    *sql.Stmt
	updateStream    *sql.Stmt
	updateKeepSeq   *sql.Stmt
	insertChunk     *sql.Stmt
	getProducer     *sql.Stmt
	upsertProducer  *sql.Stmt
	countForks      *sql.Stmt
	deleteChunks    *sql.Stmt
	deleteProducers *sql.Stmt
	deleteStream    *sql.Stmt
	chunksFrom      *sql.Stmt
	upsertSegment   *sql.Stmt
	dropLive        *sql.Stmt
}

// The statements of stream bytes, which SQLite keeps in segment files
// (see segLog) and indexes in chunks.
const (
	// insertChunkSQL indexes bytes of a stream: stream_id, start_pos,
	// end_pos, seg, seg_off.
	insertChunkSQL = `INSERT INTO chunks (stream_id, start_pos, end_pos, data, seg, seg_off) VALUES (?1, ?2, ?3, X'', ?4, ?5)`
	// chunksFromSQL reads the chunks of stream ?1 that end after ?2 and
	// start before ?3, in order: start_pos, end_pos, seg, seg_off.
	chunksFromSQL = `SELECT start_pos, end_pos, seg, seg_off FROM chunks WHERE stream_id = ?1 AND end_pos > ?2 AND start_pos < ?3 ORDER BY end_pos`
	// dropLiveSQL takes the bytes of stream ?1 off its segments' live
	// counts, before its chunks are deleted.
	dropLiveSQL = `UPDATE segments SET live = live - t.n
		FROM (SELECT seg, sum(end_pos - start_pos) AS n FROM chunks WHERE stream_id = ?1 GROUP BY seg) AS t
		WHERE segments.id = t.seg`
)

func prepare(ctx context.Context, conn *sql.Conn) (*statements, error) {
	st := &statements{}
	for _, p := range []struct {
		dst **sql.Stmt
		sql string
	}{
		{&st.insertStream, sqlstore.InsertStreamSQL},
		{&st.updateStream, sqlstore.UpdateStreamSQL(changeBatchSQL)},
		{&st.updateKeepSeq, sqlstore.UpdateStreamSQL(`changed_seq`)},
		{&st.insertChunk, insertChunkSQL},
		{&st.getProducer, sqlstore.GetProducerSQL},
		{&st.upsertProducer, sqlstore.UpsertProducerSQL},
		{&st.countForks, sqlstore.CountForksSQL},
		{&st.deleteChunks, sqlstore.DeleteStreamSQL[0]},
		{&st.deleteProducers, sqlstore.DeleteStreamSQL[1]},
		{&st.deleteStream, sqlstore.DeleteStreamSQL[2]},
		{&st.chunksFrom, chunksFromSQL},
		{&st.upsertSegment, upsertSegmentSQL},
		{&st.dropLive, dropLiveSQL},
	} {
		stmt, err := conn.PrepareContext(ctx, sqlstore.Numbered(p.sql))
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
	for _, s := range []*sql.Stmt{st.insertStream, st.updateStream, st.updateKeepSeq, st.insertChunk, st.getProducer, st.upsertProducer,
		st.countForks, st.deleteChunks, st.deleteProducers, st.deleteStream, st.chunksFrom, st.upsertSegment, st.dropLive} {
		if s != nil {
			errs = append(errs, s.Close())
		}
	}
	return errors.Join(errs...)
}

func nullID(id int64) sql.NullInt64 {
	return sql.NullInt64{Int64: id, Valid: id != 0}
}

// exec runs a statement on the writer connection inside the batch,
// preparing it once.
func (b *batch) exec(query string, args ...any) (sql.Result, error) {
	stmt, err := b.s.writerStmt(b.ctx, query)
	if err != nil {
		return nil, err
	}
	return stmt.ExecContext(b.ctx, args...)
}

// writerStmt returns query prepared on the writer connection, its $N
// placeholders (the core's) read as ?N, and cached by query as given so
// that no call rewrites it again. Only the
// committer goroutine (and Close, after it stopped) touches the cache.
func (s *Store) writerStmt(ctx context.Context, query string) (*sql.Stmt, error) {
	if st, ok := s.wprepared[query]; ok {
		return st, nil
	}
	st, err := s.wconn.PrepareContext(ctx, sqlstore.Numbered(query))
	if err != nil {
		return nil, fmt.Errorf("prepare: %w", err)
	}
	s.wprepared[query] = st
	return st, nil
}

// readerStmt returns query prepared on the read pool ($N read as ?N, as
// in writerStmt), preparing it once
// (database/sql prepares it again on each pooled connection as needed).
func (s *Store) readerStmt(ctx context.Context, query string) (*sql.Stmt, error) {
	s.rprepMu.Lock()
	st, ok := s.rprepared[query]
	s.rprepMu.Unlock()
	if ok {
		return st, nil
	}
	// Prepared without the lock: preparing takes a pooled connection,
	// and nobody may wait for a connection while holding the lock.
	st, err := s.reader.PrepareContext(ctx, sqlstore.Numbered(query))
	if err != nil {
		return nil, fmt.Errorf("sqlite: prepare read: %w", err)
	}
	s.rprepMu.Lock()
	defer s.rprepMu.Unlock()
	if prev, ok := s.rprepared[query]; ok {
		return prev, st.Close() // another caller prepared it first
	}
	s.rprepared[query] = st
	return st, nil
}
