package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/trace"

	"github.com/heraldstreams/herald/store"
	"github.com/heraldstreams/herald/store/sqlstore"
)

// lostCommits leaves the data directory of a store as a machine crash
// may: write ran and was acknowledged, but the database lost the commits
// made meanwhile (appends commit without syncing it), while the segment
// records, synced before each answer, hold them. It is made by putting
// back the database files as they were before write.
func lostCommits(t *testing.T, cfg Config, before, write func(*Store)) string {
	t.Helper()
	cfg.Dir = t.TempDir()
	s, err := Open(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	before(s)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	saved := make(map[string][]byte)
	for _, name := range []string{dbFile, dbFile + "-wal"} {
		b, err := os.ReadFile(filepath.Join(cfg.Dir, name))
		if err == nil {
			saved[name] = b
		} else if !errors.Is(err, os.ErrNotExist) {
			t.Fatal(err)
		}
	}
	if s, err = Open(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	write(s)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{dbFile, dbFile + "-wal", dbFile + "-shm"} {
		if err := os.Remove(filepath.Join(cfg.Dir, name)); err != nil && !errors.Is(err, os.ErrNotExist) {
			t.Fatal(err)
		}
	}
	for name, b := range saved {
		if err := os.WriteFile(filepath.Join(cfg.Dir, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return cfg.Dir
}

func appendWith(t *testing.T, s *Store, p store.StreamAppendParams) *store.StreamAppendResult {
	t.Helper()
	p.ContentType, p.Messages, p.Now = "text/plain", 1, segTestNow
	res, err := s.StreamAppend(context.Background(), &p)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// chunkRows counts the chunks the database indexes.
func chunkRows(t *testing.T, s *Store) int {
	t.Helper()
	var n int
	if err := s.reader.QueryRow(`SELECT count(*) FROM chunks`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// Appends acknowledged while the database's commits were not synced
// survive their loss: the open writes them again from the segment
// records, with what else they changed (a producer's state, Stream-Seq,
// the closure by a producer), and a second open changes nothing more.
func TestRecoverReplaysLostCommits(t *testing.T) {
	t.Parallel()
	prod := &store.Producer{ID: "p1", Epoch: 3, Seq: 0}
	dir := lostCommits(t, Config{}, func(s *Store) {
		mustCreate(t, s, "/a", "one,")
		mustCreate(t, s, "/b", "")
	}, func(s *Store) {
		mustAppend(t, s, "/a", "two,")
		appendWith(t, s, store.StreamAppendParams{Path: "/a", Data: []byte("three,"), Producer: prod})
		appendWith(t, s, store.StreamAppendParams{Path: "/b", Data: []byte("b1,"), Seq: "0005"})
		appendWith(t, s, store.StreamAppendParams{Path: "/a", Data: []byte("end"), Close: true,
			Producer: &store.Producer{ID: "p1", Epoch: 3, Seq: 1}})
	})
	for round := range 2 {
		s, err := Open(context.Background(), Config{Dir: dir})
		if err != nil {
			t.Fatal(err)
		}
		if got := readAll(t, s, "/a", 0); got != "one,two,three,end" {
			t.Fatalf("round %d: /a reads %q after the lost commits", round, got)
		}
		if got := readAll(t, s, "/b", 0); got != "b1," {
			t.Fatalf("round %d: /b reads %q", round, got)
		}
		if n := chunkRows(t, s); n != 5 {
			t.Fatalf("round %d: %d chunks indexed, want 5", round, n)
		}
		// The producer's retry is a duplicate, its closure stands, and
		// Stream-Seq goes on from 0005.
		res := appendWith(t, s, store.StreamAppendParams{Path: "/a", Data: []byte("end"), Close: true,
			Producer: &store.Producer{ID: "p1", Epoch: 3, Seq: 1}})
		if res.Outcome != store.Duplicate || !res.Stream.Closed {
			t.Fatalf("round %d: the producer's retry: %+v", round, res)
		}
		_, err = s.StreamAppend(context.Background(), &store.StreamAppendParams{Path: "/b", ContentType: "text/plain",
			Data: []byte("x"), Messages: 1, Seq: "0004", Now: segTestNow})
		if !errors.Is(err, store.ErrSeqRegression) {
			t.Fatalf("round %d: a Stream-Seq below the replayed one: %v", round, err)
		}
		var live, size int64
		if err := s.reader.QueryRow(`SELECT sum(live), sum(size) FROM segments`).Scan(&live, &size); err != nil {
			t.Fatal(err)
		}
		if live != int64(len("one,two,three,endb1,")) {
			t.Fatalf("round %d: %d live bytes, want the streams' %d", round, live, len("one,two,three,endb1,"))
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		st, err := os.Stat(segName(filepath.Join(dir, segDir), 1))
		if err != nil {
			t.Fatal(err)
		}
		if st.Size() != size {
			t.Fatalf("round %d: the segment holds %d bytes after a close, its row %d", round, st.Size(), size)
		}
	}
}

// recordEnds lists where the records of segment 1 of dir end, from
// offset from on.
func recordEnds(t *testing.T, dir string, from int64) []int64 {
	t.Helper()
	recs, err := readRecords(segName(filepath.Join(dir, segDir), 1), 1, from, false, 0)
	if err != nil {
		t.Fatal(err)
	}
	ends := make([]int64, len(recs))
	for i, r := range recs {
		ends[i] = r.end
	}
	return ends
}

// committedSize is the size the database of dir gives segment 1.
func committedSize(t *testing.T, dir string) int64 {
	t.Helper()
	rows, _, err := segRowsOf(t, dir)
	if err != nil {
		t.Fatal(err)
	}
	return rows[1].size
}

func segRowsOf(t *testing.T, dir string) (map[int64]segRow, int64, error) {
	t.Helper()
	db, err := openReadOnly(filepath.Join(dir, dbFile), false)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := db.Close(); err != nil {
			t.Error(err)
		}
	}()
	conn, err := db.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := conn.Close(); err != nil {
			t.Error(err)
		}
	}()
	return segRows(context.Background(), conn)
}

// damage changes segment 1 of dir with fn.
func damage(t *testing.T, dir string, fn func(f *os.File)) {
	t.Helper()
	f, err := os.OpenFile(segName(filepath.Join(dir, segDir), 1), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	fn(f)
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// A record cut mid-way (a write torn by the crash) and what follows a
// record whose checksum fails are not replayed, and are cut off: the
// records before them are, and appends go on after them.
func TestRecoverStopsAtATornOrCorruptRecord(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		// damage breaks the record ending at ends[1] (ends: the ends of
		// the three lost records).
		damage func(t *testing.T, f *os.File, ends []int64)
		want   string
	}{
		{"torn", func(t *testing.T, f *os.File, ends []int64) {
			if err := f.Truncate(ends[2] - 3); err != nil {
				t.Fatal(err)
			}
		}, "one,two,three,"},
		{"checksum", func(t *testing.T, f *os.File, ends []int64) {
			// A byte of the second record's data.
			if _, err := f.WriteAt([]byte("X"), ends[0]+recPrefix); err != nil {
				t.Fatal(err)
			}
		}, "one,two,"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := lostCommits(t, Config{}, func(s *Store) { mustCreate(t, s, "/a", "one,") }, func(s *Store) {
				mustAppend(t, s, "/a", "two,")
				mustAppend(t, s, "/a", "three,")
				mustAppend(t, s, "/a", "four,")
			})
			ends := recordEnds(t, dir, committedSize(t, dir))
			if len(ends) != 3 {
				t.Fatalf("%d records past the committed size, want the 3 lost", len(ends))
			}
			damage(t, dir, func(f *os.File) { tc.damage(t, f, ends) })
			s := openStore(t, Config{Dir: dir})
			if got := readAll(t, s, "/a", 0); got != tc.want {
				t.Fatalf("read %q, want %q", got, tc.want)
			}
			mustAppend(t, s, "/a", "more,")
			if got := readAll(t, s, "/a", 0); got != tc.want+"more," {
				t.Fatalf("read %q after an append, want %q", got, tc.want+"more,")
			}
		})
	}
}

// Lost commits whose records went on into segments the database never
// heard of are replayed across them, and the segments are known again.
func TestRecoverReplaysAcrossSegments(t *testing.T) {
	t.Parallel()
	want := "s,"
	dir := lostCommits(t, Config{SegmentSize: 100}, func(s *Store) { mustCreate(t, s, "/a", "s,") }, func(s *Store) {
		for i := range 12 {
			chunk := string(rune('a'+i)) + "-0123456789,"
			mustAppend(t, s, "/a", chunk)
			want += chunk
		}
	})
	if ids := segCount(t, dir); len(ids) < 4 {
		t.Fatalf("segments %v: the lost appends did not span segments", ids)
	}
	s := openStore(t, Config{Dir: dir, SegmentSize: 100})
	if got := readAll(t, s, "/a", 0); got != want {
		t.Fatalf("read %q, want %q", got, want)
	}
	// Every file holding bytes has its row, with its size.
	for _, id := range segCount(t, dir) {
		st, err := os.Stat(segName(filepath.Join(dir, segDir), id))
		if err != nil {
			t.Fatal(err)
		}
		var size int64
		err = s.reader.QueryRow(`SELECT size FROM segments WHERE id = ?1`, id).Scan(&size)
		if st.Size() > 0 && (err != nil || size != st.Size()) {
			t.Fatalf("segment %d of %d bytes: row size %d (%v)", id, st.Size(), size, err)
		}
	}
}

// A batch whose commit syncs the database (a creation) is acknowledged
// only once it did: the database lacking it means it never committed,
// so neither it nor anything after it is replayed.
func TestRecoverStopsAtASyncedBatch(t *testing.T) {
	t.Parallel()
	dir := lostCommits(t, Config{}, func(s *Store) { mustCreate(t, s, "/a", "one,") }, func(s *Store) {
		mustAppend(t, s, "/a", "two,")
		mustCreate(t, s, "/b", "bee")
		mustAppend(t, s, "/a", "three,")
	})
	s := openStore(t, Config{Dir: dir})
	if got := readAll(t, s, "/a", 0); got != "one,two," {
		t.Fatalf("read %q, want the appends before the creation", got)
	}
	if _, err := s.StreamGet(context.Background(), &store.StreamGetParams{Path: "/b", Now: segTestNow}); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("/b: %v", err)
	}
}

// A data directory of segments written before records (format 1: bare
// bytes) reads as before; bytes past a segment's committed size are cut
// as before, and appends go on in a new segment of records, never in
// the old one.
func TestRecoverKeepsSegmentsOfBareBytes(t *testing.T) {
	t.Parallel()
	dir := storeAt(t, "0029_event_log",
		`INSERT INTO streams (id, path, content_type, tail, accessed_at, created_at) VALUES (1, '/a', 'text/plain', 4, 1, 1)`,
		`INSERT INTO chunks (stream_id, start_pos, end_pos, data, seg, seg_off) VALUES (1, 0, 4, X'', 1, 0)`,
		`INSERT INTO segments (id, size, live) VALUES (1, 4, 4)`)
	if err := os.MkdirAll(filepath.Join(dir, segDir), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(segName(filepath.Join(dir, segDir), 1), []byte("old,never-acknowledged"), 0o600); err != nil {
		t.Fatal(err)
	}
	for round := range 2 {
		s, err := Open(context.Background(), Config{Dir: dir})
		if err != nil {
			t.Fatal(err)
		}
		want := "old,"
		if round == 1 {
			want = "old,new,"
		}
		if got := readAll(t, s, "/a", 0); got != want {
			t.Fatalf("round %d: read %q, want %q", round, got, want)
		}
		if round == 0 {
			mustAppend(t, s, "/a", "new,")
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
	rows, _, err := segRowsOf(t, dir)
	if err != nil {
		t.Fatal(err)
	}
	if rows[1] != (segRow{size: 4, format: 1}) || rows[2].format != segFormat {
		t.Fatalf("segments %+v: want the old one of 4 bytes, format 1, and a new one of records", rows)
	}
}

// A batch whose record was synced but whose commit then failed has its
// record wiped before anything else is written: no open replays what was
// answered with an error, and the next batch's record, numbered next
// after the last committed one, is replayed after it.
func TestSegmentsFailedCommitWipesItsRecord(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	l := &segLog{dir: dir, max: segmentSize, files: make(map[int64]*os.File), recAt: -1, curID: 1, seq: 7}
	if err := l.openCurrent(true); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := l.close(); err != nil {
			t.Error(err)
		}
	})
	batch := func(data string, commit bool) {
		t.Helper()
		if err := l.begin(true); err != nil {
			t.Fatal(err)
		}
		_, off, err := l.add([]byte(data))
		if err != nil {
			t.Fatal(err)
		}
		if err := l.note(&segEntry{stream: 1, n: int64(len(data)), off: off}); err != nil {
			t.Fatal(err)
		}
		if err := l.seal(); err != nil {
			t.Fatal(err)
		}
		l.done(commit)
	}
	batch("kept", true)
	batch("failed-and-longer", false)
	name := segName(dir, 1)
	if recs, err := readRecords(name, 1, 0, false, 0); err != nil || len(recs) != 1 {
		t.Fatalf("records %+v (%v) after a failed commit: want the committed one alone", recs, err)
	}
	batch("next", true)
	recs, err := readRecords(name, 1, 0, false, 0)
	if err != nil || len(recs) != 2 || recs[1].seq != recs[0].seq+1 {
		t.Fatalf("records %+v (%v): want two, in sequence", recs, err)
	}
}

// A change the segment record does not hold (a creation) fails a batch
// that would commit without syncing the database, rather than commit it
// where a machine crash could lose it after its answer.
func TestUnloggedChangeNeedsASyncedCommit(t *testing.T) {
	t.Parallel()
	s := openStore(t, Config{Dir: t.TempDir()})
	err := s.writeRelaxed(context.Background(), func(b *batch) error {
		_, err := sqlstore.CreateStream(b.streamsFor(trace.SpanContext{}), &store.StreamCreateParams{Path: "/a",
			ContentType: "text/plain", Now: segTestNow})
		return err
	})
	if err == nil || !strings.Contains(err.Error(), "without a sync") {
		t.Fatalf("a creation in a batch without a sync: %v", err)
	}
	if _, err := s.StreamGet(context.Background(), &store.StreamGetParams{Path: "/a", Now: segTestNow}); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("/a: %v", err)
	}
}

// A whole record that does not fit the database (it appends to a stream
// the database does not hold) is refused at open, rather than dropped
// or guessed at.
func TestRecoverRefusesARecordTheDatabaseContradicts(t *testing.T) {
	t.Parallel()
	dir := lostCommits(t, Config{}, func(s *Store) { mustCreate(t, s, "/a", "one,") }, func(s *Store) {
		mustAppend(t, s, "/a", "two,")
	})
	db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, dbFile))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`DELETE FROM streams WHERE path = '/a'`); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	s, err := Open(context.Background(), Config{Dir: dir})
	if err == nil {
		_ = s.Close()
	}
	if err == nil || !strings.Contains(err.Error(), "does not hold") {
		t.Fatalf("open: %v, want the record refused", err)
	}
}
