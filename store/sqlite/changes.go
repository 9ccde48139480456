package sqlite

import (
	"context"
	"fmt"
)

// The change sequence of the streams (store.StreamChangeStore): the
// committer numbers every stream row it writes from a counter (seq, its
// own), and reserves numbers ahead in the change_seq table, in the
// batch that uses them, so that a restart never gives a number again
// (the stream that had the last one may be gone). A batch that fails
// leaves a gap, never a number used twice.

// changeSeqReserve is how many numbers one reservation takes: one row
// write every changeSeqReserve stream writes.
const changeSeqReserve = 4096

// openChangeSeq sets the counter, at open, past every number reserved or
// used.
func (s *Store) openChangeSeq(ctx context.Context) error {
	err := s.wconn.QueryRowContext(ctx, `SELECT max(coalesce((SELECT reserved FROM change_seq WHERE id = 1), 0),
		coalesce((SELECT max(changed_seq) FROM streams), 0))`).Scan(&s.seq)
	if err != nil {
		return fmt.Errorf("sqlite: read the change sequence: %w", err)
	}
	s.reserved = s.seq
	s.publishedSeq.Store(s.seq)
	return nil
}

// nextChangeSeq numbers a stream row the batch writes.
func (b *batch) nextChangeSeq() int64 {
	b.s.seq++
	return b.s.seq
}

// reserveChangeSeq reserves, in the batch, the numbers it used past the
// last reservation committed (and some ahead).
func (b *batch) reserveChangeSeq() error {
	if b.s.seq <= b.s.reserved {
		return nil
	}
	r := b.s.seq + changeSeqReserve
	if _, err := b.exec(`INSERT INTO change_seq (id, reserved) VALUES (1, $1)
		ON CONFLICT (id) DO UPDATE SET reserved = excluded.reserved`, r); err != nil {
		return fmt.Errorf("reserve change sequence: %w", err)
	}
	b.reserved = r
	return nil
}

// publishChangeSeq records, once the batch committed, its reservation
// and the last number it used (what ChangeMark is above).
func (b *batch) publishChangeSeq() {
	if b.reserved > b.s.reserved {
		b.s.reserved = b.reserved
	}
	b.s.publishedSeq.Store(b.s.seq)
}

// ChangeMark implements sqlstore.Backend: every row a batch not yet
// published writes takes a number above the last published.
func (k backend) ChangeMark(context.Context) (int64, error) {
	return k.s.publishedSeq.Load() + 1, nil
}
