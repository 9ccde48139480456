package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// segMark is where the log stood before an op that may be rolled back.
type segMark struct {
	end, added, recAt int64
	crc               uint32
	meta              int
}

// mark records where the log stands, for rollback.
func (l *segLog) mark() segMark {
	return segMark{end: l.end, added: l.added, recAt: l.recAt, crc: l.recCRC, meta: len(l.meta)}
}

// rollback forgets what the log took since m: the op that appended it
// was rolled back, so no chunk indexes those bytes, no entry of the
// record names them, and the next append writes over them.
func (l *segLog) rollback(m segMark) {
	l.meta = l.meta[:m.meta]
	l.recAt, l.recCRC = m.recAt, m.crc
	if l.end == m.end {
		return
	}
	if m.end >= l.bufAt {
		l.buf = l.buf[:m.end-l.bufAt]
	} else {
		// Written to the file already: what follows goes over it.
		l.buf = l.buf[:0]
		l.bufAt = m.end
	}
	l.end, l.added = m.end, m.added
}

// reclaimSQL lists the segments, other than the one being written (?1),
// none of whose bytes belong to a stream that exists.
const reclaimSQL = `SELECT id FROM segments WHERE live <= 0 AND id < ?1`

// reclaimSegments deletes, in the batch, the rows of the segments left
// without a live byte by its removals, and their files once it committed.
func (b *batch) reclaimSegments() error {
	ids, err := deadSegments(b.ctx, b.s.wconn, b.s.seg.curID)
	if err != nil || len(ids) == 0 {
		return err
	}
	for _, id := range ids {
		if _, err := b.exec(`DELETE FROM segments WHERE id = ?1`, id); err != nil {
			return fmt.Errorf("delete segment: %w", err)
		}
	}
	b.afterRun = append(b.afterRun, func() {
		// A file left behind by a failure here is deleted at the next
		// open: the database no longer knows it.
		if err := b.s.seg.remove(ids); err != nil {
			b.s.log.Warn("deleting a reclaimed segment failed", "err", err)
		}
	})
	return nil
}

func deadSegments(ctx context.Context, conn *sql.Conn, cur int64) ([]int64, error) {
	rows, err := conn.QueryContext(ctx, reclaimSQL, cur)
	if err != nil {
		return nil, fmt.Errorf("find reclaimable segments: %w", err)
	}
	var ids []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return nil, errors.Join(err, rows.Close())
		}
		ids = append(ids, id)
	}
	return ids, errors.Join(rows.Err(), rows.Close())
}

// moveBatchBytes bounds the bytes one transaction of moveChunks moves.
const moveBatchBytes = 8 << 20

// moveChunks moves the bytes of the chunks a store written before
// segments existed (or restored from a backup, which holds them) keeps in
// the database into segments, at open, before the committer starts. Each
// transaction moves some, made durable in the segment before the rows
// pointing at them commit: a crash midway leaves every chunk readable, in
// the database or in a segment, and the next open goes on. It also
// deletes the segments that removals emptied before a crash.
func (s *Store) moveChunks(ctx context.Context) error {
	l, conn := s.seg, s.wconn
	upsert, err := conn.PrepareContext(ctx, upsertSegmentSQL)
	if err != nil {
		return fmt.Errorf("sqlite: move chunks: %w", err)
	}
	defer upsert.Close()
	for {
		if err := l.begin(false); err != nil {
			return err
		}
		moved := 0
		err := execTx(ctx, conn, func() error {
			rows, err := conn.QueryContext(ctx, `SELECT rowid, data FROM chunks WHERE seg IS NULL LIMIT 4096`)
			if err != nil {
				return err
			}
			type move struct{ row, seg, off int64 }
			var moves []move
			for rows.Next() && moved < moveBatchBytes {
				var m move
				var data []byte
				if err := rows.Scan(&m.row, &data); err != nil {
					return errors.Join(err, rows.Close())
				}
				if m.seg, m.off, err = l.add(data); err != nil {
					return errors.Join(err, rows.Close())
				}
				moves = append(moves, m)
				moved += len(data) + 1
			}
			if err := errors.Join(rows.Err(), rows.Close()); err != nil {
				return err
			}
			for _, m := range moves {
				if _, err := conn.ExecContext(ctx, `UPDATE chunks SET seg = ?1, seg_off = ?2, data = X'' WHERE rowid = ?3`, m.seg, m.off, m.row); err != nil {
					return err
				}
			}
			return l.sync(ctx, upsert)
		})
		l.done(err == nil)
		if err != nil {
			return fmt.Errorf("sqlite: move chunks into segments: %w", err)
		}
		if moved == 0 {
			break
		}
	}
	ids, err := deadSegments(ctx, conn, l.curID)
	if err != nil || len(ids) == 0 {
		return err
	}
	if err := execTx(ctx, conn, func() error {
		for _, id := range ids {
			if _, err := conn.ExecContext(ctx, `DELETE FROM segments WHERE id = ?1`, id); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		return fmt.Errorf("sqlite: reclaim segments: %w", err)
	}
	return l.remove(ids)
}
