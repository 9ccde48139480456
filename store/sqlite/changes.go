package sqlite

import (
	"context"
	"fmt"
)

// The change sequence of the streams (store.StreamChangeStore): every
// batch that writes stream rows takes the next number of a counter (seq,
// the committer's), and each row it writes carries it. The numbers are
// reserved ahead in the change_seq table, in the batch that uses them,
// so that a restart never gives a number again (the stream that had the
// last one may be gone). A batch that fails leaves a gap, never a number
// used twice.
//
// The row update reads the batch's number from a one-row temporary table
// (changeBatchSQL) rather than from a tenth parameter, which costs the
// driver eleven allocations at every row written.

// changeSeqReserve is how many numbers one reservation takes: one row
// write every changeSeqReserve batches.
const changeSeqReserve = 4096

// changeBatchSQL is the change sequence number of the batch running, as
// the row update reads it.
const changeBatchSQL = `(SELECT seq FROM temp.change_batch)`

// openChangeSeq makes the writer's table of the batch's number and sets
// the counter, at open, past every number reserved or used. It runs
// before the statements that read the table are prepared.
func (s *Store) openChangeSeq(ctx context.Context) error {
	for _, q := range []string{`CREATE TEMP TABLE change_batch (seq INTEGER NOT NULL)`,
		`INSERT INTO temp.change_batch (seq) VALUES (0)`} {
		if _, err := s.wconn.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("sqlite: change sequence: %w", err)
		}
	}
	err := s.wconn.QueryRowContext(ctx, `SELECT max(coalesce((SELECT reserved FROM change_seq WHERE id = 1), 0),
		coalesce((SELECT max(changed_seq) FROM streams), 0))`).Scan(&s.seq)
	if err != nil {
		return fmt.Errorf("sqlite: read the change sequence: %w", err)
	}
	s.reserved = s.seq
	s.publishedSeq.Store(s.seq)
	return nil
}

// useChangeSeq gives the batch its number, at its first write of stream
// rows, and sets it where the row update reads it: at every flush, since
// an op's savepoint rolled back may have undone it.
func (b *batch) useChangeSeq() error {
	if b.seq == 0 {
		b.s.seq++
		b.seq = b.s.seq
	}
	if _, err := b.exec(`UPDATE temp.change_batch SET seq = $1`, b.seq); err != nil {
		return fmt.Errorf("set change sequence: %w", err)
	}
	if b.seq <= b.s.reserved {
		return nil
	}
	r := b.seq + changeSeqReserve
	if _, err := b.exec(`INSERT INTO change_seq (id, reserved) VALUES (1, $1)
		ON CONFLICT (id) DO UPDATE SET reserved = excluded.reserved`, r); err != nil {
		return fmt.Errorf("reserve change sequence: %w", err)
	}
	b.reserved = r
	return nil
}

// publishChangeSeq records, once the batch committed, its reservation
// and its number (what ChangeMark is above).
func (b *batch) publishChangeSeq() {
	if b.reserved > b.s.reserved {
		b.s.reserved = b.reserved
	}
	if b.seq > 0 {
		b.s.publishedSeq.Store(b.seq)
	}
}

// ChangeMark implements sqlstore.Backend: every row a batch not yet
// published writes takes a number above the last published.
func (k backend) ChangeMark(context.Context) (int64, error) {
	return k.s.publishedSeq.Load() + 1, nil
}
