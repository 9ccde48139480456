package sqlite

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/heraldstreams/herald/store/sqlstore"
)

// changeSeqSQL is the change sequence number as of the committed rows:
// the highest reserved or used (see changes.go).
const changeSeqSQL = `SELECT max(coalesce((SELECT reserved FROM change_seq WHERE id = 1), 0),
	coalesce((SELECT max(changed_seq) FROM streams), 0))`

// replaySQL writes again what an append wrote to a stream's row: its
// tail (?1), its closure (?2, and the closing producer ?3-?5 when one
// closed it), its access time (?6), its Stream-Seq (?7, when it set one)
// and the change sequence number (?8), so that the engines that follow
// changes see it.
const replaySQL = `UPDATE streams SET tail = ?1, closed = closed OR ?2,
	closed_by_id = coalesce(?3, closed_by_id), closed_by_epoch = coalesce(?4, closed_by_epoch),
	closed_by_seq = coalesce(?5, closed_by_seq), accessed_at = ?6,
	last_seq = coalesce(?7, last_seq), changed_seq = ?8 WHERE id = ?9`

// replay writes the records' entries into the database, in one
// transaction synced at its commit: the chunk each indexes, the stream
// row and the producer row, and each record's segment size and live
// bytes. An entry the database holds already (its stream's tail past
// it) is left alone, so replaying twice changes nothing; an entry that
// does not follow its stream's tail, or names a stream the database does
// not hold, is a data directory the open refuses rather than guess.
func replay(ctx context.Context, conn *sql.Conn, recs []segRecord) error {
	if len(recs) == 0 {
		return nil
	}
	var seq int64
	if err := conn.QueryRowContext(ctx, changeSeqSQL).Scan(&seq); err != nil {
		return fmt.Errorf("sqlite: replay segments: %w", err)
	}
	err := execTx(ctx, conn, func() error {
		for _, r := range recs {
			live, err := replayRecord(ctx, conn, &r, seq)
			if err != nil {
				return fmt.Errorf("segment %d at %d: %w", r.seg, r.data-recPrefix, err)
			}
			if _, err := conn.ExecContext(ctx, upsertSegmentSQL, r.seg, r.end, live); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("sqlite: replay segments: %w", err)
	}
	return nil
}

// replayRecord writes one record's entries and returns the bytes it
// added to its segment's live count.
func replayRecord(ctx context.Context, conn *sql.Conn, r *segRecord, seq int64) (live int64, err error) {
	rd := entryReader{p: r.meta}
	var e segEntry
	for rd.next(&e) {
		if e.n > 0 && (e.off < r.data || e.off+e.n > r.data+r.dataLen) {
			return 0, errBadEntry
		}
		var tail int64
		var closed bool
		err := conn.QueryRowContext(ctx, `SELECT tail, closed FROM streams WHERE id = ?1`, e.stream).Scan(&tail, &closed)
		if isNoRows(err) {
			return 0, fmt.Errorf("a record appends to stream %d, which the database does not hold", e.stream)
		}
		if err != nil {
			return 0, err
		}
		end := e.start + e.n
		if tail > end || (tail == end && (e.n > 0 || closed)) {
			continue // written already
		}
		if tail != e.start {
			return 0, fmt.Errorf("a record appends to stream %d at %d, past its tail %d", e.stream, e.start, tail)
		}
		if e.n > 0 {
			if _, err := conn.ExecContext(ctx, insertChunkSQL, e.stream, e.start, end, r.seg, e.off); err != nil {
				return 0, err
			}
			live += e.n
		}
		cbID, cbEpoch, cbSeq := sqlstore.ClosedByArgs(e.closedBy)
		lastSeq := sql.NullString{String: e.lastSeq, Valid: e.lastSeq != ""}
		if _, err := conn.ExecContext(ctx, replaySQL, end, e.closed, cbID, cbEpoch, cbSeq, e.accessedAt, lastSeq, seq, e.stream); err != nil {
			return 0, err
		}
		if e.producerID != "" {
			if _, err := conn.ExecContext(ctx, sqlstore.UpsertProducerSQL, e.stream, e.producerID, e.producer.Epoch, e.producer.LastSeq); err != nil {
				return 0, err
			}
		}
	}
	return live, rd.err
}
