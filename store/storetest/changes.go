package storetest

import (
	"context"
	"slices"
	"testing"

	"github.com/heraldstreams/herald/store"
)

// changedPaths lists the live streams under /changes/ changed at or
// after mark.
func changedPaths(t *testing.T, s store.Store, mark int64) []string {
	t.Helper()
	list, err := s.StreamList(context.Background(), &store.StreamListParams{Prefix: "/changes/", ChangedFrom: mark, Now: t0})
	if err != nil {
		t.Fatalf("list changed from %d: %v", mark, err)
	}
	var paths []string
	for _, st := range list {
		paths = append(paths, st.Path)
	}
	return paths
}

func changeMark(t *testing.T, s store.Store) int64 {
	t.Helper()
	mark, err := s.StreamChangeMark(context.Background())
	if err != nil || mark <= 0 {
		t.Fatalf("change mark = %d, %v; want a positive mark", mark, err)
	}
	return mark
}

// includes reports whether every path of want is in got.
func includes(got []string, want ...string) bool {
	for _, w := range want {
		if !slices.Contains(got, w) {
			return false
		}
	}
	return true
}

// A stream created or appended to after a mark is listed from it (one
// changed before may be listed too: a backend's mark may lag what is
// committed, never what is not). Marks never go back across a restart,
// even when the stream changed last is gone.
func testStreamChanges(t *testing.T, f Factory) {
	s := f.Open(t)
	ctx := context.Background()
	first := changeMark(t, s)
	mustCreate(t, s, &store.StreamCreateParams{Path: "/changes/a", ContentType: "text/plain"})
	mustCreate(t, s, &store.StreamCreateParams{Path: "/changes/b", ContentType: "text/plain"})
	if got := changedPaths(t, s, first); !slices.Equal(got, []string{"/changes/a", "/changes/b"}) {
		t.Fatalf("changed from the first mark: %v, want both", got)
	}
	afterCreate := changeMark(t, s)
	mustAppend(t, s, &store.StreamAppendParams{Path: "/changes/a", ContentType: "text/plain", Data: []byte("x")})
	if got := changedPaths(t, s, afterCreate); !includes(got, "/changes/a") {
		t.Fatalf("changed after the append: %v, want /changes/a in it", got)
	}
	// The stream changed last goes, the store restarts: the next change
	// still comes after every mark taken before.
	mustCreate(t, s, &store.StreamCreateParams{Path: "/changes/c", ContentType: "text/plain"})
	beforeRestart := changeMark(t, s)
	if err := s.StreamDelete(ctx, &store.StreamDeleteParams{Path: "/changes/c", Now: t0}); err != nil {
		t.Fatal(err)
	}
	s = f.Reopen(t, s)
	mustAppend(t, s, &store.StreamAppendParams{Path: "/changes/b", ContentType: "text/plain", Data: []byte("y")})
	if got := changedPaths(t, s, beforeRestart); !includes(got, "/changes/b") {
		t.Fatalf("changed after the restart: %v, want /changes/b in it", got)
	}
	// Without a mark, every stream.
	if got := changedPaths(t, s, 0); !slices.Equal(got, []string{"/changes/a", "/changes/b"}) {
		t.Fatalf("changed from 0: %v, want every stream", got)
	}
}

// A checked mark is 0 until recorded, only advances, and is durable.
func testCheckedMarks(t *testing.T, f Factory) {
	s := f.Open(t)
	ctx := context.Background()
	get := func(want int64) {
		t.Helper()
		if got, err := s.CheckedMark(ctx, "test.checked"); err != nil || got != want {
			t.Fatalf("checked mark = %d, %v; want %d", got, err, want)
		}
	}
	get(0)
	for _, m := range []int64{5, 3} {
		if err := s.CheckedMarkAdvance(ctx, "test.checked", m); err != nil {
			t.Fatal(err)
		}
	}
	get(5)
	s = f.Reopen(t, s)
	get(5)
	if got, err := s.CheckedMark(ctx, "test.other"); err != nil || got != 0 {
		t.Fatalf("another name's mark = %d, %v; want 0", got, err)
	}
}
