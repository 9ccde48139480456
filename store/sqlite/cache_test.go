package sqlite

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/heraldstreams/herald/store"
	"github.com/heraldstreams/herald/store/sqlstore"
)

// createStreams creates n streams prefix0..prefix(n-1), each with one
// message.
func createStreams(t *testing.T, s *Store, prefix string, n int, now time.Time) {
	t.Helper()
	for i := range n {
		if _, err := s.StreamCreate(context.Background(), &store.StreamCreateParams{Path: fmt.Sprintf("%s%d", prefix, i),
			ContentType: "text/plain", Data: []byte("x"), Now: now}); err != nil {
			t.Fatal(err)
		}
	}
}

// storeOver returns a store opened (with cfg) over n streams
// prefix0..prefix(n-1) made by another, closed since.
func storeOver(t *testing.T, prefix string, n int, now time.Time, cfg Config) *Store {
	t.Helper()
	s := openStore(t, Config{Dir: t.TempDir()})
	createStreams(t, s, prefix, n, now)
	return reopen(t, s, cfg)
}

// reopen closes s and opens its directory again with cfg.
func reopen(t *testing.T, s *Store, cfg Config) *Store {
	t.Helper()
	cfg.Dir = s.Dir()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return openStore(t, cfg)
}

// A store opened over many streams reads none of them: the cache fills
// with the streams used, one read at a time.
func TestOpenLoadsNoStream(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	now := time.Now()
	s := storeOver(t, "/open/s", 200, now, Config{})
	if n := s.cache.size(); n != 0 {
		t.Fatalf("cache holds %d streams after open, want 0", n)
	}
	st, err := s.StreamGet(ctx, &store.StreamGetParams{Path: "/open/s7", Now: now})
	if err != nil || st.Tail != 1 {
		t.Fatalf("get after open: %+v, %v", st, err)
	}
	if n := s.cache.size(); n != 1 {
		t.Fatalf("cache holds %d streams after one get, want 1", n)
	}
	if _, err := s.StreamGet(ctx, &store.StreamGetParams{Path: "/open/none", Now: now}); err != store.ErrNotFound {
		t.Fatalf("get of a missing stream: %v, want not found", err)
	}
}

// The cache never holds more than its bound, however many streams are
// created, read, appended to (by a producer) and listed; nor does the
// producer cache.
func TestStreamCacheBound(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	now := time.Now()
	const bound = 16
	s := openStore(t, Config{Dir: t.TempDir(), StreamCache: bound})
	check := func(what string) {
		t.Helper()
		if n := s.cache.size(); n > bound {
			t.Fatalf("%s: cache holds %d streams, bound %d", what, n, bound)
		}
	}
	for i := range 100 {
		createStreams(t, s, fmt.Sprintf("/bound/%d/", i), 1, now)
		check("create")
	}
	for i := range 100 {
		path := fmt.Sprintf("/bound/%d/0", i)
		if _, err := s.StreamAppend(ctx, &store.StreamAppendParams{Path: path, ContentType: "text/plain", Data: []byte("y"),
			Producer: &store.Producer{ID: "p"}, Now: now}); err != nil {
			t.Fatal(err)
		}
		check("append")
		var producers int
		if err := s.write(ctx, func(b *batch) error { producers = len(b.s.producers); return nil }); err != nil {
			t.Fatal(err)
		}
		if producers > bound {
			t.Fatalf("the producer cache holds %d streams, bound %d", producers, bound)
		}
		res, err := s.StreamRead(ctx, &store.StreamReadParams{Path: path, Now: now})
		if err != nil || string(res.Data) != "xy" {
			t.Fatalf("read %s: %q, %v", path, res.Data, err)
		}
		check("read")
	}
	list, err := s.StreamList(ctx, &store.StreamListParams{Prefix: "/bound/", Now: now})
	if err != nil || len(list) != 100 {
		t.Fatalf("list: %d streams, %v", len(list), err)
	}
	check("list")
}

// A reader that read a stream's row before a commit changed it, and
// inserts it after that commit's entry was published and evicted, must
// not put its older entry in the cache: the next read would see the
// stream go back in time.
func TestStaleReadNotCached(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	now := time.Now()
	s := storeOver(t, "/stale/s", 1, now, Config{})
	var once sync.Once
	s.cache.loaded = func() {
		once.Do(func() {
			// The reader holds the row of tail 1; a commit makes it 2.
			if _, err := s.StreamAppend(ctx, &store.StreamAppendParams{Path: "/stale/s0", ContentType: "text/plain", Data: []byte("y"), Now: now}); err != nil {
				t.Error(err)
			}
			// The published entry is evicted before the reader inserts.
			s.cache.mu.Lock()
			e := s.cache.byPath["/stale/s0"]
			delete(s.cache.byPath, e.path)
			delete(s.cache.byID, e.id)
			s.cache.mu.Unlock()
		})
	}
	first, err := s.StreamGet(ctx, &store.StreamGetParams{Path: "/stale/s0", Now: now})
	if err != nil {
		t.Fatal(err)
	}
	if first.Tail != 1 {
		t.Fatalf("first get: tail %d, want 1 (read before the append)", first.Tail)
	}
	second, err := s.StreamGet(ctx, &store.StreamGetParams{Path: "/stale/s0", Now: now})
	if err != nil {
		t.Fatal(err)
	}
	if second.Tail != 2 {
		t.Fatalf("second get: tail %d, want 2: a stale entry was cached", second.Tail)
	}
}

// Reads racing appends never see a stream's tail go back, whatever the
// cache evicts meanwhile (a bound of 2 over 8 streams evicts all the
// time).
func TestReadsNeverGoBack(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	now := time.Now()
	s := openStore(t, Config{Dir: t.TempDir(), StreamCache: 2})
	const streams, appends = 8, 40
	createStreams(t, s, "/race/s", streams, now)
	var wg, writers sync.WaitGroup
	done := make(chan struct{})
	for i := range streams {
		path := fmt.Sprintf("/race/s%d", i)
		wg.Add(1)
		writers.Add(1)
		go func() {
			defer writers.Done()
			for range appends {
				if _, err := s.StreamAppend(ctx, &store.StreamAppendParams{Path: path, ContentType: "text/plain", Data: []byte("y"), Now: now}); err != nil {
					t.Error(err)
					return
				}
			}
		}()
		go func() {
			defer wg.Done()
			var last int64
			for {
				select {
				case <-done:
					return
				default:
				}
				st, err := s.StreamGet(ctx, &store.StreamGetParams{Path: path, Now: now})
				if err != nil {
					t.Error(err)
					return
				}
				if st.Tail < last {
					t.Errorf("%s: tail went back from %d to %d", path, last, st.Tail)
					return
				}
				last = st.Tail
			}
		}()
	}
	writers.Wait()
	close(done)
	wg.Wait()
}

// A fork read or appended to after a restart finds its source, which is
// not cached: it is read by id.
func TestForkSourceLoadedByID(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	now := time.Now()
	s := openStore(t, Config{Dir: t.TempDir()})
	createStreams(t, s, "/fork/src", 1, now)
	if _, err := s.StreamCreate(ctx, &store.StreamCreateParams{Path: "/fork/f", ContentType: "text/plain",
		ForkSource: "/fork/src0", ForkOffset: -1, Now: now}); err != nil {
		t.Fatal(err)
	}
	s = reopen(t, s, Config{})
	res, err := s.StreamRead(ctx, &store.StreamReadParams{Path: "/fork/f", Now: now})
	if err != nil || string(res.Data) != "x" {
		t.Fatalf("read fork after reopen: %q, %v", res.Data, err)
	}
	s = reopen(t, s, Config{})
	if _, err := s.StreamAppend(ctx, &store.StreamAppendParams{Path: "/fork/f", ContentType: "text/plain", Data: []byte("z"), Now: now}); err != nil {
		t.Fatal(err)
	}
	res, err = s.StreamRead(ctx, &store.StreamReadParams{Path: "/fork/f", Now: now})
	if err != nil || string(res.Data) != "xz" {
		t.Fatalf("read fork after append: %q, %v", res.Data, err)
	}
}

// The expiry sweep honours a sliding-TTL renewal that the touch loop has
// not written yet: the row says the stream expired, the store does not.
// The stream list shows it too.
func TestSweepHonoursPendingRenewal(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	t0 := time.Now()
	s := openStore(t, Config{Dir: t.TempDir(), TouchFlushInterval: time.Hour})
	if _, err := s.StreamCreate(ctx, &store.StreamCreateParams{Path: "/ttl/s", ContentType: "text/plain",
		TTL: 10 * time.Second, Now: t0}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.StreamRead(ctx, &store.StreamReadParams{Path: "/ttl/s", Now: t0.Add(8 * time.Second)}); err != nil {
		t.Fatal(err)
	}
	at := t0.Add(12 * time.Second)
	n, err := s.StreamDeleteExpired(ctx, &store.StreamDeleteExpiredParams{Now: at})
	if err != nil || n != 0 {
		t.Fatalf("sweep at 12 s: deleted %d, %v; want 0 (renewed at 8 s)", n, err)
	}
	list, err := s.StreamList(ctx, &store.StreamListParams{Prefix: "/ttl/", Now: at})
	if err != nil || len(list) != 1 || !list[0].AccessedAt.Equal(t0.Add(8*time.Second)) {
		t.Fatalf("list at 12 s: %+v, %v; want the stream, accessed at 8 s", list, err)
	}
	n, err = s.StreamDeleteExpired(ctx, &store.StreamDeleteExpiredParams{Now: t0.Add(19 * time.Second)})
	if err != nil || n != 1 {
		t.Fatalf("sweep at 19 s: deleted %d, %v; want 1", n, err)
	}
}

// The expiry sweep and the stream pages read SQLite's indexes: what they
// cost follows what they return, not how many streams are stored.
func TestStreamQueriesUseIndexes(t *testing.T) {
	t.Parallel()
	s := openStore(t, Config{Dir: t.TempDir()})
	plan := func(q string, args ...any) string {
		t.Helper()
		return queryPlan(t, s, q, args...)
	}
	if p := plan(sqlstore.ExpiredStreamsSQL, int64(1), 10); !strings.Contains(p, "USING INDEX streams_deadline") ||
		strings.Contains(p, "TEMP B-TREE") {
		t.Errorf("expiry sweep plan: %s; want the deadline index, in its order", p)
	}
	// The streams changed since a mark: a few of many, read from the
	// index of change sequences.
	q, args := sqlstore.StreamPageQuery("/", "", 5, 10)
	if p := plan(q, args...); !strings.Contains(p, "USING INDEX streams_changed") {
		t.Errorf("changed streams plan: %s; want the change sequence index", p)
	}
	for _, prefix := range []string{"/a/", ""} {
		q, args := sqlstore.StreamPageQuery(prefix, "", 0, 10)
		p := plan(q, args...)
		if !strings.Contains(p, "USING INDEX sqlite_autoindex_streams") || strings.Contains(p, "TEMP B-TREE") ||
			(prefix != "" && !strings.Contains(p, "path<?")) {
			t.Errorf("stream page plan (prefix %q): %s; want the path index, in its order", prefix, p)
		}
	}
}

// A stream's change sequence number moves on only at a mark: appends
// between two marks keep it, so the index of the numbers is not written
// at every append.
func TestChangeSeqMovesOnlyAtMarks(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	now := time.Now()
	s := openStore(t, Config{Dir: t.TempDir()})
	createStreams(t, s, "/seq/s", 1, now)
	mark, err := s.StreamChangeMark(ctx)
	if err != nil {
		t.Fatal(err)
	}
	rowSeq := func() int64 {
		t.Helper()
		var seq int64
		if err := s.reader.QueryRow(`SELECT changed_seq FROM streams WHERE path = '/seq/s0'`).Scan(&seq); err != nil {
			t.Fatal(err)
		}
		return seq
	}
	for range 3 {
		if _, err := s.StreamAppend(ctx, &store.StreamAppendParams{Path: "/seq/s0", ContentType: "text/plain", Data: []byte("y"), Now: now}); err != nil {
			t.Fatal(err)
		}
		if got := rowSeq(); got != mark {
			t.Fatalf("changed_seq after an append = %d, want the mark %d", got, mark)
		}
	}
	next, err := s.StreamChangeMark(ctx)
	if err != nil || next <= mark {
		t.Fatalf("next mark = %d, %v; want above %d", next, err, mark)
	}
	if _, err := s.StreamAppend(ctx, &store.StreamAppendParams{Path: "/seq/s0", ContentType: "text/plain", Data: []byte("z"), Now: now}); err != nil {
		t.Fatal(err)
	}
	if got := rowSeq(); got != next {
		t.Fatalf("changed_seq after the next mark = %d, want %d", got, next)
	}
}
