package sqlite

import (
	"context"
	"testing"
)

// The writer maps the database (see writerMmap); readers do not.
func TestWriterMapsTheDatabase(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := openStore(t, Config{Dir: t.TempDir()})
	var writer, reader int64
	if err := s.write(ctx, func(b *batch) error {
		return b.s.wconn.QueryRowContext(b.ctx, `PRAGMA mmap_size`).Scan(&writer)
	}); err != nil {
		t.Fatal(err)
	}
	if err := s.reader.QueryRowContext(ctx, `PRAGMA mmap_size`).Scan(&reader); err != nil {
		t.Fatal(err)
	}
	if writer != writerMmap || reader != 0 {
		t.Fatalf("mmap_size: writer %d, reader %d; want %d and 0", writer, reader, writerMmap)
	}
}
