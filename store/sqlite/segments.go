package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"syscall"

	"github.com/heraldstreams/herald/store"
)

// Stream bytes live in segment files, not in the database: one shared log
// of every stream's appends in commit order, cut into files of about
// segmentSize bytes (segments/<id>.seg in the data directory). The chunks
// table indexes them (a chunk's stream positions, its segment and its
// offset in it), and the segments table records how many bytes of each
// file are committed and how many belong to streams that still exist.
//
// One log for all streams keeps one file open for writing and one
// fdatasync per group commit however many streams the batch appended to,
// and costs nothing for a stream without data. The committer appends a
// batch's bytes at the log's end as one record that describes them
// (segrecord.go), makes it durable (fdatasync) and only then commits the
// transaction that indexes them and publishes the new tails. A batch of
// appends commits that transaction without syncing the database: if a
// machine crash loses the commit, the next open replays the record
// (segrecover.go). A crash before the record is whole leaves bytes past
// the committed size that are no record, which the next open cuts off,
// so nothing unacknowledged is ever read and nothing acknowledged is
// lost.
//
// Space comes back by a simple rule: a segment none of whose bytes belong
// to a stream that still exists (live 0), other than the one being
// written, is deleted. A segment that keeps any live byte is kept whole.
type segLog struct {
	dir string
	max int64 // rotation size

	// The write side; the committer's alone.
	cur       *os.File // the segment being written, read-write
	curID     int64
	committed int64 // its size as of the last commit
	end       int64 // its size with the batch's bytes
	buf       []byte
	bufAt     int64 // offset of buf[0] in cur
	added     int64 // bytes the running batch added
	dirty     bool  // cur was written since its last sync
	// zeroed is how far cur holds bytes (data or zeros) on disk: below
	// it a write changes no file size (see zeroAhead).
	zeroed int64
	newDir bool // a segment file was created since the last sync

	// The running batch's record (see segrecord.go): where its prefix
	// lies (-1 while the batch has written nothing), the CRC of its data
	// so far, its entries, and its number (one more than the last
	// committed record's: a failed batch left no valid prefix, see done).
	recAt  int64
	recCRC uint32
	meta   []byte
	seq    uint64
	// replay says the running batch commits without syncing the
	// database: its record is what makes it durable (recReplay).
	replay bool
	// synced: the running batch's record was made durable.
	synced bool
	// broken is set when a failed batch's durable record could not be
	// undone: no batch is written after it (see done).
	broken error

	// The read side: a read-only file per segment, opened when first
	// read and closed when the segment is deleted.
	mu    sync.RWMutex
	files map[int64]*os.File
}

// segmentSize is the size past which the log starts a new segment.
const segmentSize = 64 << 20

// segBufMax bounds the bytes a batch holds in memory before writing them
// to the segment: small appends are written once per batch, in one
// write, and a large batch does not pin its whole size.
const segBufMax = 1 << 20

// keptBuf bounds the batch buffer kept between batches.
const keptBuf = 64 << 10

// segDir is the directory of the segments in the data directory.
const segDir = "segments"

func segName(dir string, id int64) string {
	return filepath.Join(dir, fmt.Sprintf("%016d.seg", id))
}

// openCurrent opens segment curID for writing at its end; created says
// the file is new (the directory is synced with the next batch).
func (l *segLog) openCurrent(created bool) error {
	f, err := os.OpenFile(segName(l.dir, l.curID), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return fmt.Errorf("sqlite: open segment: %w", err)
	}
	st, err := f.Stat()
	if err != nil {
		return errors.Join(fmt.Errorf("sqlite: open segment: %w", err), f.Close())
	}
	l.cur, l.committed, l.end, l.bufAt, l.zeroed = f, st.Size(), st.Size(), st.Size(), st.Size()
	l.newDir = l.newDir || created
	return nil
}

// begin starts a batch: past segmentSize, on a new segment. A batch's
// bytes all go to one segment (which may so grow past the size by a
// batch), and a full segment was made durable by the batch that wrote
// it last. replay says whether the batch commits without syncing the
// database (its record then says so).
func (l *segLog) begin(replay bool) error {
	if l.broken != nil {
		return l.broken
	}
	l.replay = replay
	if l.committed < l.max {
		return nil
	}
	if err := l.cur.Close(); err != nil {
		return fmt.Errorf("sqlite: close segment: %w", err)
	}
	l.curID++
	return l.openCurrent(true)
}

// open starts the batch's record, at its first byte or entry: room for
// its prefix, which sync writes once the record is whole.
func (l *segLog) open() error {
	if l.recAt >= 0 {
		return nil
	}
	at := l.end
	if err := l.put(zeroBlock[:recPrefix]); err != nil {
		return err
	}
	l.recAt = at
	return nil
}

// add appends data to the log for the running batch and returns where it
// lies: its segment and offset.
func (l *segLog) add(data []byte) (seg, off int64, err error) {
	if err := l.open(); err != nil {
		return 0, 0, err
	}
	seg, off = l.curID, l.end
	if err := l.put(data); err != nil {
		return 0, 0, err
	}
	l.recCRC = crc32.Update(l.recCRC, crcTable, data)
	l.added += int64(len(data))
	return seg, off, nil
}

// note adds an entry to the batch's record.
func (l *segLog) note(e *segEntry) error {
	if err := l.open(); err != nil {
		return err
	}
	l.meta = appendEntry(l.meta, e)
	return nil
}

// put appends p to the batch's bytes: into the buffer, or straight to
// the file when it would not fit.
func (l *segLog) put(p []byte) error {
	if len(l.buf)+len(p) > segBufMax {
		if err := l.write(); err != nil {
			return err
		}
	}
	if len(p) > segBufMax {
		if _, err := l.cur.WriteAt(p, l.end); err != nil {
			return fmt.Errorf("write segment: %w", err)
		}
		l.bufAt += int64(len(p))
		l.dirty = true
	} else {
		l.buf = append(l.buf, p...)
	}
	l.end += int64(len(p))
	return nil
}

// write writes the buffered bytes to the current segment.
func (l *segLog) write() error {
	if len(l.buf) == 0 {
		return nil
	}
	if _, err := l.cur.WriteAt(l.buf, l.bufAt); err != nil {
		return fmt.Errorf("write segment: %w", err)
	}
	l.bufAt += int64(len(l.buf))
	l.buf = l.buf[:0]
	l.dirty = true
	return nil
}

// sync ends the batch's record, makes it durable and records the
// segment's size and the bytes added (stmt: upsertSegmentSQL) in the
// batch's transaction: it runs right before the commit. Once it
// returned, the batch's appends survive a crash whether or not the
// transaction's commit does (see segrecover.go).
func (l *segLog) sync(ctx context.Context, stmt *sql.Stmt) error {
	if l.recAt < 0 {
		return nil
	}
	if err := l.seal(); err != nil {
		return err
	}
	if _, err := stmt.ExecContext(ctx, l.curID, l.end, l.added); err != nil {
		return fmt.Errorf("record segment: %w", err)
	}
	return nil
}

// seal writes the running batch's record whole and makes it durable.
func (l *segLog) seal() error {
	h := recHeader{seq: l.seq, dataLen: l.end - l.recAt - recPrefix, metaLen: int64(len(l.meta))}
	if l.replay {
		h.flags = recReplay
	}
	var prefix [recPrefix]byte
	h.put(prefix[:], crc32.Update(l.recCRC, crcTable, l.meta))
	if err := l.put(l.meta); err != nil {
		return err
	}
	if l.recAt >= l.bufAt {
		copy(l.buf[l.recAt-l.bufAt:], prefix[:])
	} else if _, err := l.cur.WriteAt(prefix[:], l.recAt); err != nil {
		return fmt.Errorf("write segment: %w", err)
	}
	if err := l.write(); err != nil {
		return err
	}
	if err := l.zeroAhead(); err != nil {
		return err
	}
	if err := fdatasync(l.cur); err != nil {
		return fmt.Errorf("sync segment: %w", err)
	}
	l.dirty, l.synced = false, true
	if l.newDir {
		if err := syncDir(l.dir); err != nil {
			return err
		}
		l.newDir = false
	}
	return nil
}

// zeroStep is how far past the end zeroAhead writes zeros.
const zeroStep = 1 << 20

// zeroBlock is what zeroAhead writes, zeroStep/len(zeroBlock) times.
var zeroBlock [64 << 10]byte

// zeroAhead writes zeros past the batch's bytes when they grew the file:
// an fdatasync that must also make a new file size durable costs about
// twice one over bytes already on disk (a journal commit of the file's
// metadata), so one batch in a megabyte pays it and the others
// overwrite the zeros. Nothing reads past the committed size, zeros are
// no record, and the open cuts a segment back to its last record.
func (l *segLog) zeroAhead() error {
	if l.end <= l.zeroed {
		return nil
	}
	for off := l.end; off < l.end+zeroStep; off += int64(len(zeroBlock)) {
		if _, err := l.cur.WriteAt(zeroBlock[:], off); err != nil {
			return fmt.Errorf("write segment: %w", err)
		}
	}
	l.zeroed = l.end + zeroStep
	return nil
}

// upsertSegmentSQL records a segment's committed size (?2) and bytes
// added (?3); a new segment is of this Herald's format.
const upsertSegmentSQL = `INSERT INTO segments (id, size, live, format) VALUES (?1, ?2, ?3, 2)
	ON CONFLICT (id) DO UPDATE SET size = excluded.size, live = live + excluded.live`

// keptMeta bounds the entries' buffer kept between batches.
const keptMeta = 16 << 10

// done ends the batch: committed or not. A batch that did not commit
// leaves its bytes past the committed size, where the next batch writes
// over them; if its record was synced already (the commit itself
// failed), its prefix is wiped and synced first, so that no open ever
// replays what was answered with an error. When that fails too, the log
// refuses every later batch: the store must be opened again.
func (l *segLog) done(committed bool) {
	if !committed && l.synced {
		if err := l.unwrite(); err != nil {
			l.broken = fmt.Errorf("sqlite: a failed commit's segment record could not be undone (open the store again): %w", err)
		}
	}
	l.buf = l.buf[:0]
	if cap(l.buf) > keptBuf {
		l.buf = nil // an idle store holds no megabyte for a past burst
	}
	l.meta = l.meta[:0]
	if cap(l.meta) > keptMeta {
		l.meta = nil
	}
	if committed && l.recAt >= 0 {
		l.seq++
	}
	l.added, l.recAt, l.recCRC, l.synced = 0, -1, 0, false
	if committed {
		l.committed = l.end
	} else {
		l.end = l.committed
	}
	l.bufAt = l.end
}

// unwrite wipes the running batch's durable record.
func (l *segLog) unwrite() error {
	if _, err := l.cur.WriteAt(zeroBlock[:recPrefix], l.recAt); err != nil {
		return err
	}
	return fdatasync(l.cur)
}

// readAt reads len(p) bytes at off of segment seg: committed bytes,
// which never change while the segment exists.
func (l *segLog) readAt(p []byte, seg, off int64) error {
	f, err := l.file(seg)
	if err != nil {
		return err
	}
	if _, err := f.ReadAt(p, off); err != nil {
		return fmt.Errorf("sqlite: read segment %d: %w", seg, err)
	}
	return nil
}

// readPending is readAt for the committer, which may read bytes of its
// own batch not yet written.
func (l *segLog) readPending(p []byte, seg, off int64) error {
	if seg == l.curID && off >= l.bufAt {
		copy(p, l.buf[off-l.bufAt:])
		return nil
	}
	if seg == l.curID {
		if err := l.write(); err != nil {
			return err
		}
		_, err := l.cur.ReadAt(p, off)
		return err
	}
	return l.readAt(p, seg, off)
}

// file returns segment seg opened for reading.
func (l *segLog) file(seg int64) (*os.File, error) {
	l.mu.RLock()
	f := l.files[seg]
	l.mu.RUnlock()
	if f != nil {
		return f, nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if f := l.files[seg]; f != nil {
		return f, nil
	}
	f, err := os.Open(segName(l.dir, seg))
	if errors.Is(err, fs.ErrNotExist) {
		// Deleted: every stream with bytes in it was removed.
		return nil, errSegmentGone
	}
	if err != nil {
		return nil, fmt.Errorf("sqlite: open segment: %w", err)
	}
	l.files[seg] = f
	return f, nil
}

// openRead returns segment seg opened for read fr alone (its reader moves
// the file's offset), opening it once per read.
func (l *segLog) openRead(fr *store.StreamFileRead, seg int64) (*os.File, error) {
	name := segName(l.dir, seg)
	for _, f := range fr.Files {
		if f.Name() == name {
			return f, nil
		}
	}
	f, err := os.Open(name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, errSegmentGone
	}
	if err != nil {
		return nil, fmt.Errorf("sqlite: open segment: %w", err)
	}
	fr.Files = append(fr.Files, f)
	return f, nil
}

// errSegmentGone is a read of a segment deleted meanwhile: the stream
// read was removed after the reader found it.
var errSegmentGone = errors.New("sqlite: segment deleted")

// remove deletes segments whose bytes all belong to removed streams,
// after the batch that found them so committed.
func (l *segLog) remove(ids []int64) error {
	var errs []error
	for _, id := range ids {
		l.mu.Lock()
		if f := l.files[id]; f != nil {
			errs = append(errs, f.Close())
			delete(l.files, id)
		}
		l.mu.Unlock()
		if err := os.Remove(segName(l.dir, id)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// close closes every file.
func (l *segLog) close() error {
	var errs []error
	if l.cur != nil {
		errs = append(errs, l.cur.Close())
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for id, f := range l.files {
		errs = append(errs, f.Close())
		delete(l.files, id)
	}
	return errors.Join(errs...)
}

// fdatasync flushes f's data and the metadata needed to read it (its
// size), not its times: what durability of appended bytes needs.
func fdatasync(f *os.File) error {
	sc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	if err := sc.Control(func(fd uintptr) {
		for {
			serr = syscall.Fdatasync(int(fd))
			if serr != syscall.EINTR {
				return
			}
		}
	}); err != nil {
		return err
	}
	return serr
}
