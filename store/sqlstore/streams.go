package sqlstore

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
	// CountForksSQL counts the streams forked from stream $1.
	CountForksSQL = `SELECT count(*) FROM streams WHERE fork_source_id = $1`
)

// DeleteStreamSQL are the statements that remove stream $1 and its data,
// in order.
var DeleteStreamSQL = []string{
	`DELETE FROM chunks WHERE stream_id = $1`,
	`DELETE FROM producers WHERE stream_id = $1`,
	`DELETE FROM streams WHERE id = $1`,
}
