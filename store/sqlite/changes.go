package sqlite

import (
	"context"
	"fmt"
)

// The change sequence of the streams (store.StreamChangeStore). The
// stream rows the committer writes carry its current number (seq), which
// moves on only when a mark is taken: ChangeMark runs in the committer,
// after every batch before it committed, and returns the next number,
// which every row written after it then carries. A stream written again
// and again between two marks keeps its number, so its row update leaves
// the index of the numbers alone: an append costs what it did before.
//
// The numbers are reserved ahead in the change_seq table, in the batch of
// the mark that uses them, so that a restart never gives a number below
// a mark handed out (the stream that had the last number may be gone).
//
// The row update reads the number from a one-row temporary table
// (changeBatchSQL) rather than from a tenth parameter, which costs the
// driver eleven allocations at every row written.

// changeSeqReserve is how many numbers one reservation takes: one row
// write every changeSeqReserve marks.
const changeSeqReserve = 4096

// changeBatchSQL is the change sequence number as the row update reads
// it.
const changeBatchSQL = `(SELECT seq FROM temp.change_batch)`

// openChangeSeq makes the writer's table of the number and sets the
// number, at open, to the highest reserved or used. It runs before the
// statements that read the table are prepared.
func (s *Store) openChangeSeq(ctx context.Context) error {
	for _, q := range []string{`CREATE TEMP TABLE change_batch (seq INTEGER NOT NULL)`,
		`INSERT INTO temp.change_batch (seq) VALUES (0)`} {
		if _, err := s.wconn.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("sqlite: change sequence: %w", err)
		}
	}
	err := s.wconn.QueryRowContext(ctx, changeSeqSQL).Scan(&s.seq)
	if err != nil {
		return fmt.Errorf("sqlite: read the change sequence: %w", err)
	}
	s.reserved = s.seq
	return nil
}

// setChangeSeq sets the number where the row update reads it: at every
// flush that writes it, since an op's savepoint rolled back, or a failed
// batch, may have undone it.
func (b *batch) setChangeSeq() error {
	if _, err := b.exec(`UPDATE temp.change_batch SET seq = $1`, b.s.seq); err != nil {
		return fmt.Errorf("set change sequence: %w", err)
	}
	return nil
}

// ChangeMark implements sqlstore.Backend: in the committer, the number
// moves on, reserved in the same batch, and is the mark. Every batch
// before it committed with lower numbers; every row written after it
// (this batch's rows too: they are written last) carries the mark or a
// later number.
func (k backend) ChangeMark(ctx context.Context) (int64, error) {
	var mark int64
	err := k.s.writeRelaxed(ctx, func(b *batch) error {
		b.s.seq++
		mark = b.s.seq
		if b.s.seq <= b.s.reserved || b.s.seq <= b.reserved {
			return nil
		}
		r := b.s.seq + changeSeqReserve
		if _, err := b.exec(`INSERT INTO change_seq (id, reserved) VALUES (1, $1)
			ON CONFLICT (id) DO UPDATE SET reserved = excluded.reserved`, r); err != nil {
			return fmt.Errorf("reserve change sequence: %w", err)
		}
		b.reserved = r
		return nil
	})
	return mark, err
}
