package sqlstore

import (
	"database/sql"

	"github.com/heraldstreams/herald/store"
)

// The statements of streams, written once. The streams' logic is each
// backend's own: SQLite's committer keeps their metadata in memory and
// decides against it, PostgreSQL's transactions read and lock the rows;
// both decide with package streamrules and run these statements.
const (
	// InsertStreamSQL inserts a stream: path, content_type, tail, closed,
	// ttl_seconds, expires_at, accessed_at, created_at, fork_source_id,
	// fork_source_path, fork_position, fork_offset, fork_sub_offset. Its
	// id is generated (Tx.InsertID, or the backend's own form of it).
	InsertStreamSQL = `INSERT INTO streams (path, content_type, tail, closed, ttl_seconds, expires_at, accessed_at, created_at,
		fork_source_id, fork_source_path, fork_position, fork_offset, fork_sub_offset)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)`
	// InsertChunkSQL stores data of a stream: stream_id, start_pos,
	// end_pos, data.
	InsertChunkSQL = `INSERT INTO chunks (stream_id, start_pos, end_pos, data) VALUES ($1, $2, $3, $4)`
	// ChunksFromSQL reads the chunks of stream $1 that end after $2 and
	// start before $3, in order.
	ChunksFromSQL = `SELECT start_pos, end_pos, data FROM chunks WHERE stream_id = $1 AND end_pos > $2 AND start_pos < $3 ORDER BY end_pos`
	// GetProducerSQL reads a stream's ($1) record of a producer ($2):
	// epoch, last_seq.
	GetProducerSQL = `SELECT epoch, last_seq FROM producers WHERE stream_id = $1 AND producer_id = $2`
	// UpsertProducerSQL writes it: stream_id, producer_id, epoch,
	// last_seq.
	UpsertProducerSQL = `INSERT INTO producers (stream_id, producer_id, epoch, last_seq) VALUES ($1, $2, $3, $4)
		ON CONFLICT (stream_id, producer_id) DO UPDATE SET epoch = excluded.epoch, last_seq = excluded.last_seq`
	// InsertCursorSQL gives an endpoint a cursor on a stream unless it has
	// one: stream, endpoint_id, stream_id, position.
	InsertCursorSQL = `INSERT INTO delivery_cursors (stream, endpoint_id, stream_id, position) VALUES ($1, $2, $3, $4)
		ON CONFLICT (stream, endpoint_id) DO NOTHING`
	// CountForksSQL counts the streams forked from stream $1.
	CountForksSQL = `SELECT count(*) FROM streams WHERE fork_source_id = $1`
)

// UpdateStreamSQL writes a stream's changing columns: tail, closed,
// closed_by_id, closed_by_epoch, closed_by_seq, accessed_at, last_seq,
// soft_deleted, and the id ninth (ClosedByArgs gives the closing
// producer's three); and its change sequence (see
// store.StreamChangeStore), the value of the SQL expression seq: the
// backend's own.
func UpdateStreamSQL(seq string) string {
	return `UPDATE streams SET tail = $1, closed = $2, closed_by_id = $3, closed_by_epoch = $4, closed_by_seq = $5,
		accessed_at = $6, last_seq = $7, soft_deleted = $8, changed_seq = ` + seq + ` WHERE id = $9`
}

// DeleteStreamSQL are the statements that remove stream $1 and its data,
// in order.
var DeleteStreamSQL = []string{
	`DELETE FROM chunks WHERE stream_id = $1`,
	`DELETE FROM producers WHERE stream_id = $1`,
	`DELETE FROM streams WHERE id = $1`,
}

// ClosedByArgs are UpdateStreamSQL's closed_by_id, closed_by_epoch and
// closed_by_seq for the producer that closed a stream: NULL when none did.
func ClosedByArgs(p *store.Producer) (id sql.NullString, epoch, seq sql.NullInt64) {
	if p == nil {
		return id, epoch, seq
	}
	return sql.NullString{String: p.ID, Valid: true}, sql.NullInt64{Int64: p.Epoch, Valid: true}, sql.NullInt64{Int64: p.Seq, Valid: true}
}
