package sqlite

import (
	"context"
	"testing"

	"go.opentelemetry.io/otel/trace"

	"github.com/heraldstreams/herald/store"
	"github.com/heraldstreams/herald/store/sqlstore"
)

// appendIn appends data to path in the batch b.
func appendIn(b *batch, path, data string) error {
	_, err := sqlstore.AppendStream(b.streamsFor(trace.SpanContext{}), &store.StreamAppendParams{Path: path,
		ContentType: "text/plain", Data: []byte(data), Messages: 1, Now: segTestNow})
	return err
}

// Appends to one stream that follow one another in a batch take one
// chunk row between them; an append to another stream in between ends
// the run. Every byte reads back, from every position.
func TestChunksOfOneBatchShareARow(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := openStore(t, Config{Dir: t.TempDir()})
	mustCreate(t, s, "/a", "")
	mustCreate(t, s, "/b", "")
	before := chunkRows(t, s)
	if err := s.write(ctx, func(b *batch) error {
		for _, a := range [][2]string{{"/a", "1,"}, {"/a", "2,"}, {"/a", "3,"}, {"/b", "b,"}, {"/a", "4,"}} {
			if err := appendIn(b, a[0], a[1]); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if n := chunkRows(t, s) - before; n != 3 {
		t.Fatalf("%d chunk rows for /a, /a, /a, /b, /a: want 3", n)
	}
	mustAppend(t, s, "/a", "5,")
	if got := readAll(t, s, "/a", 0); got != "1,2,3,4,5," {
		t.Fatalf("/a reads %q", got)
	}
	if got := readAll(t, s, "/b", 0); got != "b," {
		t.Fatalf("/b reads %q", got)
	}
	for from := range int64(10) {
		res, err := s.StreamRead(ctx, &store.StreamReadParams{Path: "/a", From: from, Now: segTestNow})
		if err != nil {
			t.Fatal(err)
		}
		if want := "1,2,3,4,5,"[from:]; string(res.Data) != want {
			t.Fatalf("/a from %d: %q, want %q", from, res.Data, want)
		}
	}
}
