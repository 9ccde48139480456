package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// segRow is a segment's row: its committed size and its format.
type segRow struct {
	size   int64
	format int
}

// tailFile is a segment whose bytes from from on may hold records of
// batches the database lost: the last segment the database knows, past
// its committed size, and the segments after it, which it does not know.
type tailFile struct {
	id, from int64
	known    bool
	end      int64 // where its last valid record ends (recover sets it)
}

// openSegLog opens the segments of data directory dir and recovers them
// to what the database committed, and what the records past it hold
// (conn is the writer's, before the committer starts): the batches whose
// transaction the database lost (committed without a sync, then lost to
// a machine crash) are written again from their records, and what lies
// past the last whole record (a torn write, a batch that never
// committed) is cut off; a file the database does not know and no
// record continues into (reclaimed before a crash, or created for a
// batch that never committed) is deleted.
func openSegLog(ctx context.Context, conn *sql.Conn, dataDir string, size int64) (*segLog, error) {
	l := &segLog{dir: filepath.Join(dataDir, segDir), max: size, files: make(map[int64]*os.File),
		recAt: -1, seq: rand.Uint64()}
	if err := os.MkdirAll(l.dir, 0o700); err != nil {
		return nil, fmt.Errorf("sqlite: segments: %w", err)
	}
	rows, last, err := segRows(ctx, conn)
	if err != nil {
		return nil, err
	}
	found, err := segFiles(l.dir)
	if err != nil {
		return nil, err
	}
	var tail []*tailFile
	for _, id := range found {
		name := segName(l.dir, id)
		row, known := rows[id]
		switch {
		case !known && id < last:
			if err := os.Remove(name); err != nil {
				return nil, fmt.Errorf("sqlite: segments: %w", err)
			}
		case !known || (id == last && row.format >= segFormat):
			tail = append(tail, &tailFile{id: id, from: row.size, known: known})
		default:
			if err := cutSegment(name, row.size); err != nil {
				return nil, err
			}
		}
	}
	for id, row := range rows {
		if row.size > 0 && !contains(found, id) {
			return nil, fmt.Errorf("sqlite: segment %s is missing: the data directory is incomplete", segName(l.dir, id))
		}
	}
	if l.curID, err = l.recover(ctx, conn, tail); err != nil {
		return nil, err
	}
	l.curID = max(l.curID, last)
	// The directory's own entry too: it may have just been made.
	if err := errors.Join(syncDir(l.dir), syncDir(dataDir)); err != nil {
		return nil, err
	}
	created := !contains(found, l.curID)
	if row, ok := rows[l.curID]; l.curID == 0 || (ok && row.format < segFormat) {
		// A segment of bare bytes is never appended to: records go on
		// in a new one.
		l.curID, created = l.curID+1, true
	}
	if err := l.openCurrent(created); err != nil {
		return nil, err
	}
	return l, nil
}

// segRows reads the segments' rows, and the highest id among them.
func segRows(ctx context.Context, conn *sql.Conn) (map[int64]segRow, int64, error) {
	out := make(map[int64]segRow)
	var last int64
	rows, err := conn.QueryContext(ctx, `SELECT id, size, format FROM segments`)
	if err != nil {
		return nil, 0, fmt.Errorf("sqlite: segments: %w", err)
	}
	for rows.Next() {
		var id int64
		var r segRow
		if err := rows.Scan(&id, &r.size, &r.format); err != nil {
			return nil, 0, errors.Join(fmt.Errorf("sqlite: segments: %w", err), rows.Close())
		}
		out[id] = r
		last = max(last, id)
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		return nil, 0, fmt.Errorf("sqlite: segments: %w", err)
	}
	return out, last, nil
}

// recover reads the records of the tail files in order while they
// continue one another (each a whole record, each numbered one past the
// one before, each of a batch that committed without a sync), writes
// them again into the database in one synced transaction, then cuts
// every file after its last such record (deleting a file the database
// does not know that keeps none). It returns the last segment that
// keeps a record, 0 when none.
func (l *segLog) recover(ctx context.Context, conn *sql.Conn, tail []*tailFile) (int64, error) {
	var recs []segRecord
	var next uint64
	stopped := false
	for _, t := range tail {
		t.end = t.from
		if stopped {
			continue
		}
		got, err := readRecords(segName(l.dir, t.id), t.id, t.from, len(recs) > 0, next)
		if err != nil {
			return 0, err
		}
		if len(got) > 0 {
			t.end = got[len(got)-1].end
			next = got[len(got)-1].seq + 1
			recs = append(recs, got...)
		} else if t.known {
			continue // the next batch went on in a new segment
		}
		// Records go on into the next file only from this one's last.
		stopped = len(got) == 0
	}
	if err := replay(ctx, conn, recs); err != nil {
		return 0, err
	}
	var cur int64
	for _, t := range tail {
		name := segName(l.dir, t.id)
		if !t.known && t.end == 0 {
			if err := os.Remove(name); err != nil {
				return 0, fmt.Errorf("sqlite: segments: %w", err)
			}
			continue
		}
		if err := cutSegment(name, t.end); err != nil {
			return 0, err
		}
		cur = t.id
	}
	return cur, nil
}

// segRecord is a whole record read back from a segment.
type segRecord struct {
	seg       int64
	seq       uint64
	data, end int64 // where its data starts, where it ends
	dataLen   int64
	meta      []byte
}

// readRecords reads the records of segment file name from offset from
// while they are whole, numbered in sequence (the first one next when
// chained) and of batches that committed without a sync.
func readRecords(name string, seg, from int64, chained bool, next uint64) (recs []segRecord, err error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, fmt.Errorf("sqlite: segments: %w", err)
	}
	defer func() { err = errors.Join(err, f.Close()) }()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("sqlite: segments: %w", err)
	}
	buf := make([]byte, 64<<10)
	for at := from; ; {
		r, ok, err := readRecord(f, buf, at, st.Size())
		if err != nil {
			return nil, fmt.Errorf("sqlite: read segment %s: %w", name, err)
		}
		if !ok || (chained && r.seq != next) {
			return recs, nil
		}
		r.seg = seg
		recs = append(recs, r)
		chained, next, at = true, r.seq+1, r.end
	}
}

// readRecord reads the record at at of f (size bytes long), using buf;
// ok is false when none whole and of a batch to replay starts there.
func readRecord(f *os.File, buf []byte, at, size int64) (r segRecord, ok bool, err error) {
	if size-at < recPrefix {
		return r, false, nil
	}
	var prefix [recPrefix]byte
	if _, err := f.ReadAt(prefix[:], at); err != nil {
		return r, false, err
	}
	h, want, ok := parseHeader(prefix[:])
	if !ok || h.flags != recReplay || h.dataLen > size-at-recPrefix || h.metaLen > size-at-recPrefix-h.dataLen {
		return r, false, nil
	}
	r = segRecord{seq: h.seq, data: at + recPrefix, dataLen: h.dataLen, end: at + recPrefix + h.dataLen + h.metaLen}
	var crc uint32
	for off := r.data; off < r.data+h.dataLen; {
		p := buf[:min(int64(len(buf)), r.data+h.dataLen-off)]
		if _, err := f.ReadAt(p, off); err != nil {
			return r, false, err
		}
		crc = crc32.Update(crc, crcTable, p)
		off += int64(len(p))
	}
	r.meta = make([]byte, h.metaLen)
	if _, err := f.ReadAt(r.meta, r.data+h.dataLen); err != nil && !errors.Is(err, io.EOF) {
		return r, false, err
	}
	crc = crc32.Update(crc32.Update(crc, crcTable, r.meta), crcTable, prefix[:28])
	return r, crc == want, nil
}

// contains reports whether the sorted ids hold id.
func contains(ids []int64, id int64) bool {
	i := sort.Search(len(ids), func(i int) bool { return ids[i] >= id })
	return i < len(ids) && ids[i] == id
}

// segFiles lists the segment ids in dir, in order.
func segFiles(dir string) ([]int64, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("sqlite: segments: %w", err)
	}
	var ids []int64
	for _, e := range ents {
		name, ok := strings.CutSuffix(e.Name(), ".seg")
		if !ok {
			continue
		}
		id, err := strconv.ParseInt(name, 10, 64)
		if err != nil || id <= 0 {
			continue
		}
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	return ids, nil
}

// cutSegment cuts the segment file name to its committed size: what lies
// past it was written for a batch that never committed.
func cutSegment(name string, size int64) error {
	st, err := os.Stat(name)
	if err != nil {
		return fmt.Errorf("sqlite: segments: %w", err)
	}
	if st.Size() < size {
		return fmt.Errorf("sqlite: segment %s holds %d bytes, fewer than the %d committed", name, st.Size(), size)
	}
	if st.Size() == size {
		return nil
	}
	f, err := os.OpenFile(name, os.O_RDWR, 0)
	if err != nil {
		return fmt.Errorf("sqlite: segments: %w", err)
	}
	if err := errors.Join(f.Truncate(size), f.Sync(), f.Close()); err != nil {
		return fmt.Errorf("sqlite: cut segment %s: %w", name, err)
	}
	return nil
}
