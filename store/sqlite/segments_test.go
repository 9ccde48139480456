package sqlite

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/heraldstreams/herald/store"
)

// segTestNow is the clock of the segment tests.
var segTestNow = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func mustCreate(t *testing.T, s *Store, path, data string) {
	t.Helper()
	if _, err := s.StreamCreate(context.Background(), &store.StreamCreateParams{Path: path, ContentType: "text/plain",
		Data: []byte(data), Now: segTestNow}); err != nil {
		t.Fatal(err)
	}
}

func mustAppend(t *testing.T, s *Store, path, data string) {
	t.Helper()
	if _, err := s.StreamAppend(context.Background(), &store.StreamAppendParams{Path: path, ContentType: "text/plain",
		Data: []byte(data), Messages: 1, Now: segTestNow}); err != nil {
		t.Fatal(err)
	}
}

// readAll reads a stream from its start, page by page (max bytes each).
func readAll(t *testing.T, s *Store, path string, max int) string {
	t.Helper()
	var out []byte
	for from := int64(-1); ; {
		res, err := s.StreamRead(context.Background(), &store.StreamReadParams{Path: path, From: from, MaxBytes: max, Now: segTestNow})
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, res.Data...)
		if res.Next >= res.Stream.Tail {
			return string(out)
		}
		from = res.Next
	}
}

func segCount(t *testing.T, dir string) []int64 {
	t.Helper()
	ids, err := segFiles(filepath.Join(dir, segDir))
	if err != nil {
		t.Fatal(err)
	}
	return ids
}

// closedStore opens a store in a new directory, writes to it with write
// and closes it, as a stopped server leaves its data directory.
func closedStore(t *testing.T, write func(*Store)) string {
	t.Helper()
	dir := t.TempDir()
	s, err := Open(context.Background(), Config{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	write(s)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return dir
}

// Bytes a crash left past what the database committed (written and
// synced for a batch whose transaction never committed), and a segment
// file the database does not know, are gone at the next open: reads end
// at the acknowledged tail and the next append takes their place.
func TestSegmentsOpenCutsUncommittedBytes(t *testing.T) {
	t.Parallel()
	dir := closedStore(t, func(s *Store) {
		mustCreate(t, s, "/a", "one,")
		mustAppend(t, s, "/a", "two,")
	})
	ids := segCount(t, dir)
	if len(ids) != 1 {
		t.Fatalf("segments %v, want one", ids)
	}
	f, err := os.OpenFile(segName(filepath.Join(dir, segDir), ids[0]), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString("never-acknowledged"); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	stray := segName(filepath.Join(dir, segDir), ids[0]+1)
	if err := os.WriteFile(stray, []byte("stray"), 0o600); err != nil {
		t.Fatal(err)
	}

	s := openStore(t, Config{Dir: dir})
	if got := readAll(t, s, "/a", 0); got != "one,two," {
		t.Fatalf("read %q after the crash, want the acknowledged %q", got, "one,two,")
	}
	if _, err := os.Stat(stray); !os.IsNotExist(err) {
		t.Fatalf("the segment the database does not know is still there: %v", err)
	}
	mustAppend(t, s, "/a", "three,")
	if got := readAll(t, s, "/a", 0); got != "one,two,three," {
		t.Fatalf("read %q, want %q", got, "one,two,three,")
	}
}

// A segment the database counts bytes in but that is gone is refused at
// open, rather than read as a stream with holes.
func TestSegmentsOpenRefusesAMissingSegment(t *testing.T) {
	t.Parallel()
	dir := closedStore(t, func(s *Store) { mustCreate(t, s, "/a", "data") })
	if err := os.RemoveAll(filepath.Join(dir, segDir)); err != nil {
		t.Fatal(err)
	}
	if s, err := Open(context.Background(), Config{Dir: dir}); err == nil || !strings.Contains(err.Error(), "missing") {
		if err == nil {
			_ = s.Close()
		}
		t.Fatalf("open without its segment: %v", err)
	}
}

// Past SegmentSize the log goes on in a new file; a stream's bytes read
// the same across files, by pages that end inside a chunk or between
// files; deleting streams deletes the segments left with no live byte
// and keeps the one still holding another stream's bytes, and the one
// being written.
func TestSegmentsRotateAndReclaim(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := openStore(t, Config{Dir: dir, SegmentSize: 64})
	mustCreate(t, s, "/keep", "k0,")
	mustCreate(t, s, "/gone", "")
	var want strings.Builder
	for i := range 40 {
		chunk := fmt.Sprintf("%02d-%s,", i, strings.Repeat("x", 20))
		want.WriteString(chunk)
		mustAppend(t, s, "/gone", chunk)
	}
	mustAppend(t, s, "/keep", "k1,")
	files := segCount(t, dir)
	if len(files) < 10 {
		t.Fatalf("%d segment files after 1000 bytes of 64-byte segments", len(files))
	}
	for _, max := range []int{0, 7, 25, 100} {
		if got := readAll(t, s, "/gone", max); got != want.String() {
			t.Fatalf("read by pages of %d: %q, want %q", max, got, want.String())
		}
	}
	if err := s.StreamDelete(context.Background(), &store.StreamDeleteParams{Path: "/gone", Now: segTestNow}); err != nil {
		t.Fatal(err)
	}
	left := segCount(t, dir)
	// The first segment holds /keep's k0, the last the one being
	// written (k1): every other went with /gone.
	if len(left) != 2 || left[0] != files[0] || left[1] != files[len(files)-1] {
		t.Fatalf("segments %v after deleting /gone, from %v: want the first and the last", left, files)
	}
	if got := readAll(t, s, "/keep", 0); got != "k0,k1," {
		t.Fatalf("/keep reads %q", got)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s2 := openStore(t, Config{Dir: dir, SegmentSize: 64})
	if got := readAll(t, s2, "/keep", 0); got != "k0,k1," {
		t.Fatalf("/keep reads %q after a restart", got)
	}
}

// A store written before segments (its chunks' bytes in the database)
// has them moved into segments at its first open: every stream reads as
// before, forks through their sources, and appends go on after them.
func TestMigrationMovesChunksIntoSegments(t *testing.T) {
	t.Parallel()
	big := strings.Repeat("b", 3<<20) // more than one move transaction
	dir := storeAt(t, "0026_stream_changes",
		`INSERT INTO streams (id, path, content_type, tail, accessed_at, created_at) VALUES
			(1, '/a', 'text/plain', 10, 1, 1), (2, '/big', 'text/plain', `+fmt.Sprint(3*len(big))+`, 1, 1)`,
		`INSERT INTO streams (id, path, content_type, tail, accessed_at, created_at, fork_source_id, fork_source_path, fork_position, fork_offset)
			VALUES (3, '/fork', 'text/plain', 8, 1, 1, 1, '/a', 6, 6)`,
		`INSERT INTO chunks (stream_id, start_pos, end_pos, data) VALUES
			(1, 0, 6, CAST('hello,' AS BLOB)), (1, 6, 10, CAST('you,' AS BLOB)), (3, 6, 8, CAST('f,' AS BLOB)),
			(2, 0, `+fmt.Sprint(len(big))+`, CAST(printf('%.*c', `+fmt.Sprint(len(big))+`, 'b') AS BLOB)),
			(2, `+fmt.Sprint(len(big))+`, `+fmt.Sprint(2*len(big))+`, CAST(printf('%.*c', `+fmt.Sprint(len(big))+`, 'b') AS BLOB)),
			(2, `+fmt.Sprint(2*len(big))+`, `+fmt.Sprint(3*len(big))+`, CAST(printf('%.*c', `+fmt.Sprint(len(big))+`, 'b') AS BLOB))`,
	)
	s := openStore(t, Config{Dir: dir})
	for path, want := range map[string]string{"/a": "hello,you,", "/fork": "hello,f,", "/big": big + big + big} {
		if got := readAll(t, s, path, 1<<20); got != want {
			t.Fatalf("%s reads %d bytes %.20q, want %d", path, len(got), got, len(want))
		}
	}
	var inDB, unmoved int64
	if err := s.reader.QueryRow(`SELECT coalesce(sum(length(data)), 0), count(*) FILTER (WHERE seg IS NULL) FROM chunks`).Scan(&inDB, &unmoved); err != nil {
		t.Fatal(err)
	}
	if inDB != 0 || unmoved != 0 {
		t.Fatalf("%d bytes and %d chunks left in the database", inDB, unmoved)
	}
	mustAppend(t, s, "/a", "more,")
	if got := readAll(t, s, "/a", 0); got != "hello,you,more," {
		t.Fatalf("/a reads %q after an append", got)
	}
}

// An op rolled back to its savepoint takes its bytes back from the log:
// the next append is written where they were.
func TestSegmentsRollbackForgetsTheBytes(t *testing.T) {
	t.Parallel()
	l := &segLog{max: segmentSize, recAt: 60}
	l.buf, l.bufAt = []byte("keep"), 100
	l.end, l.added = 104, 4
	m := l.mark()
	l.buf = append(l.buf, "drop"...)
	l.end, l.added = 108, 8
	l.rollback(m)
	if string(l.buf) != "keep" || l.end != 104 || l.added != 4 {
		t.Fatalf("after rollback: buf %q, end %d, added %d", l.buf, l.end, l.added)
	}
	// Bytes already written to the file: the next ones go over them.
	l.buf, l.bufAt, l.end, l.added = nil, 108, 108, 8
	l.rollback(m)
	if len(l.buf) != 0 || l.bufAt != 104 || l.end != 104 || l.added != 4 {
		t.Fatalf("after rollback of written bytes: buf %q at %d, end %d, added %d", l.buf, l.bufAt, l.end, l.added)
	}
}

// StreamReadFiles gives, as sections of segment files and memory, the
// bytes StreamRead reads, for every start and page size, through a
// fork's source and across segments, and the same next position; the
// read's files are its own and closed by Close.
func TestStreamReadFilesMatchesStreamRead(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := openStore(t, Config{Dir: t.TempDir(), SegmentSize: 100})
	mustCreate(t, s, "/src", "source-")
	for i := range 20 {
		mustAppend(t, s, "/src", fmt.Sprintf("s%02d-%s,", i, strings.Repeat("y", 10)))
	}
	if _, err := s.StreamCreate(ctx, &store.StreamCreateParams{Path: "/fork", ContentType: "text/plain", ForkSource: "/src", ForkOffset: 100, ForkSubOffset: 5, Now: segTestNow}); err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		mustAppend(t, s, "/fork", fmt.Sprintf("f%d,", i))
	}
	for _, path := range []string{"/src", "/fork"} {
		for _, max := range []int{0, 1, 30, 1000} {
			for from := int64(-1); from < 300; from += 37 {
				p := &store.StreamReadParams{Path: path, From: from, MaxBytes: max, Now: segTestNow}
				want, err := s.StreamRead(ctx, p)
				if err != nil {
					if from > 0 {
						continue // past the tail
					}
					t.Fatal(err)
				}
				fr, err := s.StreamReadFiles(ctx, p)
				if err != nil {
					t.Fatal(err)
				}
				got, err := fr.AppendTo(nil)
				if err != nil {
					t.Fatal(err)
				}
				if string(got) != string(want.Data) || fr.Len != int64(len(got)) || fr.Result.Next != want.Next {
					t.Fatalf("%s from %d max %d: files give %q (len %d, next %d), read %q (next %d)",
						path, from, max, got, fr.Len, fr.Result.Next, want.Data, want.Next)
				}
				files := fr.Files
				if err := fr.Close(); err != nil {
					t.Fatal(err)
				}
				for _, f := range files {
					if _, err := f.Stat(); err == nil {
						t.Fatal("a read's file is open after Close")
					}
				}
			}
		}
	}
}

// A batch that grows the segment writes zeros a megabyte past its bytes,
// so the batches after it sync bytes within the file's size; the zeros
// are never read, and an open cuts them off.
func TestSegmentsZeroAhead(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s, err := Open(context.Background(), Config{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	mustCreate(t, s, "/a", "one,")
	name := segName(filepath.Join(dir, segDir), 1)
	size := func() int64 {
		st, err := os.Stat(name)
		if err != nil {
			t.Fatal(err)
		}
		return st.Size()
	}
	// The creation's record: its prefix and its 4 bytes, no entry.
	first := int64(recPrefix + 4)
	if got := size(); got != first+zeroStep {
		t.Fatalf("segment of %d bytes after a 4-byte append, want %d", got, first+zeroStep)
	}
	mustAppend(t, s, "/a", "two,")
	if got := size(); got != first+zeroStep {
		t.Fatalf("segment of %d bytes after an append within the zeros, want %d", got, first+zeroStep)
	}
	var committed int64
	if err := s.reader.QueryRowContext(context.Background(), `SELECT size FROM segments WHERE id = 1`).Scan(&committed); err != nil {
		t.Fatal(err)
	}
	if got := readAll(t, s, "/a", 0); got != "one,two," {
		t.Fatalf("read %q", got)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openStore(t, Config{Dir: dir})
	if got := size(); got != committed {
		t.Fatalf("segment of %d bytes after an open, want its %d committed", got, committed)
	}
	mustAppend(t, s, "/a", "three,")
	if got := readAll(t, s, "/a", 0); got != "one,two,three," {
		t.Fatalf("read %q after a restart", got)
	}
}

// A read from files stops at its bound of sections, short of its bound
// of bytes: the bytes of its sections and no more, the next position
// right after them, and none of a fork's own bytes when the bound cut
// the read within the fork's source (they would leave a gap).
func TestStreamReadFilesStopsAtItsSections(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := openStore(t, Config{Dir: t.TempDir()})
	mustCreate(t, s, "/a", "")
	mustCreate(t, s, "/b", "")
	for i := range 6 {
		// /b's appends between /a's: each of /a's is a run of its own.
		mustAppend(t, s, "/a", fmt.Sprintf("a%d,", i))
		mustAppend(t, s, "/b", fmt.Sprintf("b%d,", i))
	}
	if _, err := s.StreamCreate(ctx, &store.StreamCreateParams{Path: "/fork", ContentType: "text/plain", ForkSource: "/a", ForkOffset: 12, Now: segTestNow}); err != nil {
		t.Fatal(err)
	}
	mustAppend(t, s, "/fork", "f0,")
	for _, tc := range []struct {
		path     string
		sections int
		want     string
	}{
		{"/a", 2, "a0,a1,"},
		{"/a", 6, "a0,a1,a2,a3,a4,a5,"},
		{"/fork", 3, "a0,a1,a2,"},
		{"/fork", 4, "a0,a1,a2,a3,"},
		{"/fork", 5, "a0,a1,a2,a3,f0,"},
	} {
		fr, err := s.readFiles(ctx, &store.StreamReadParams{Path: tc.path, From: -1, MaxBytes: 1 << 20, Now: segTestNow}, tc.sections)
		if err != nil {
			t.Fatal(err)
		}
		got, err := fr.AppendTo(nil)
		if err := errors.Join(err, fr.Close()); err != nil {
			t.Fatal(err)
		}
		if string(got) != tc.want || fr.Result.Next != int64(len(tc.want)) || len(fr.Sections) > tc.sections {
			t.Errorf("%s in %d sections: %q in %d sections, next %d; want %q", tc.path, tc.sections, got, len(fr.Sections), fr.Result.Next, tc.want)
		}
	}
}
