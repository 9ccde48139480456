package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// inlineSegments puts into the chunks of the snapshot file the bytes
// they index in the segments of data directory dir, so that the backup
// is one self-contained database file (the format before segments, which
// Open moves into segments again). The snapshot's chunks index committed
// bytes, which never change while their segment exists; a segment
// deleted since the snapshot (every stream with bytes in it was removed
// meanwhile) fails the backup, which can then be run again.
func inlineSegments(ctx context.Context, dir, file string) (err error) {
	db, err := sql.Open("sqlite", "file:"+file+"?_pragma=busy_timeout(10000)")
	if err != nil {
		return fmt.Errorf("sqlite: open %s: %w", file, err)
	}
	db.SetMaxOpenConns(1)
	defer func() { err = errors.Join(err, db.Close()) }()
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("sqlite: back up segments: %w", err)
	}
	defer func() {
		if err != nil {
			err = errors.Join(err, tx.Rollback())
		}
	}()
	files := make(map[int64]*os.File)
	defer func() {
		for _, f := range files {
			err = errors.Join(err, f.Close())
		}
	}()
	type chunk struct{ row, seg, off, n int64 }
	var chunks []chunk
	rows, err := tx.QueryContext(ctx, `SELECT rowid, seg, seg_off, end_pos - start_pos FROM chunks WHERE seg IS NOT NULL`)
	if err != nil {
		return fmt.Errorf("sqlite: back up segments: %w", err)
	}
	for rows.Next() {
		var c chunk
		if err := rows.Scan(&c.row, &c.seg, &c.off, &c.n); err != nil {
			return errors.Join(fmt.Errorf("sqlite: back up segments: %w", err), rows.Close())
		}
		chunks = append(chunks, c)
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		return fmt.Errorf("sqlite: back up segments: %w", err)
	}
	update, err := tx.PrepareContext(ctx, `UPDATE chunks SET data = ?1, seg = NULL, seg_off = 0 WHERE rowid = ?2`)
	if err != nil {
		return fmt.Errorf("sqlite: back up segments: %w", err)
	}
	defer func() { err = errors.Join(err, update.Close()) }()
	var buf []byte
	for _, c := range chunks {
		f := files[c.seg]
		if f == nil {
			if f, err = os.Open(segName(filepath.Join(dir, segDir), c.seg)); err != nil {
				return fmt.Errorf("sqlite: back up: a segment was deleted while backing up (run the backup again): %w", err)
			}
			files[c.seg] = f
		}
		buf = append(buf[:0], make([]byte, c.n)...)
		if _, err := f.ReadAt(buf, c.off); err != nil {
			return fmt.Errorf("sqlite: back up segment %d: %w", c.seg, err)
		}
		if _, err := update.ExecContext(ctx, buf, c.row); err != nil {
			return fmt.Errorf("sqlite: back up segments: %w", err)
		}
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM segments`); err != nil {
		return fmt.Errorf("sqlite: back up segments: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("sqlite: back up segments: %w", err)
	}
	// The snapshot is left in rollback-journal mode, whole in one file.
	_, err = db.ExecContext(ctx, `VACUUM`)
	return err
}
