package sqlite_test

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/heraldstreams/herald/protocol"
	"github.com/heraldstreams/herald/store"
)

// readBenchBytes is the size of the stream the read benchmarks catch up
// on, appended in readBenchChunk appends (a thousand 100-byte messages
// each, as herald-bench seed writes them).
const (
	readBenchBytes = 10 << 20
	readBenchChunk = 100 << 10
	// readBenchPage is a catch-up response's bound (httpapi's default).
	readBenchPage = 4 << 20
)

// BenchmarkStreamReadCatchUp measures the store's catch-up read path:
// one reader reading a 10 MB stream from its start to its tail, page by
// page (4 MB each, as the read handler asks). MB/s is data read.
func BenchmarkStreamReadCatchUp(b *testing.B) {
	b.Run("raw", func(b *testing.B) { benchCatchUp(b, "application/octet-stream", nil) })
	// A JSON stream's pages are made into the array the response
	// carries, in one reused buffer, as the read handler does.
	var buf []byte
	b.Run("json", func(b *testing.B) {
		benchCatchUp(b, "application/json", func(data []byte) { buf = protocol.AppendJSONArray(buf[:0], data) })
	})
	// What the read handler asks the store for over HTTP: where the
	// bytes lie in the segments (StreamReadFiles), in one read of up to
	// 64 MiB; the handler then sends them (httpapi's benchmarks).
	b.Run("files", func(b *testing.B) { benchCatchUp(b, "application/octet-stream", nil) })
}

func benchCatchUp(b *testing.B, contentType string, frame func([]byte)) {
	s := open(b, b.TempDir())
	ctx := context.Background()
	now := time.Now()
	if _, err := s.StreamCreate(ctx, &store.StreamCreateParams{Path: "/big", ContentType: contentType, Now: now}); err != nil {
		b.Fatal(err)
	}
	// Framed JSON messages of 100 bytes (a value and its '\n'), which a
	// raw stream stores as they are.
	msg := append(append([]byte(`"`), bytes.Repeat([]byte("x"), 97)...), '"', '\n')
	chunk := bytes.Repeat(msg, readBenchChunk/len(msg))
	for written := 0; written < readBenchBytes; written += len(chunk) {
		if _, err := s.StreamAppend(ctx, &store.StreamAppendParams{Path: "/big", ContentType: contentType,
			Data: chunk, Messages: len(chunk) / len(msg), Now: now}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	var total int64
	files := strings.HasSuffix(b.Name(), "/files")
	for b.Loop() {
		for from := int64(0); ; {
			var res *store.StreamReadResult
			if files {
				fr, err := s.(store.StreamFileReader).StreamReadFiles(ctx, &store.StreamReadParams{Path: "/big", From: from, MaxBytes: 64 << 20, Now: now})
				if err != nil {
					b.Fatal(err)
				}
				if err := fr.Close(); err != nil {
					b.Fatal(err)
				}
				res = &fr.Result
				total += fr.Len
			} else {
				var err error
				if res, err = s.StreamRead(ctx, &store.StreamReadParams{Path: "/big", From: from, MaxBytes: readBenchPage, Now: now}); err != nil {
					b.Fatal(err)
				}
				if frame != nil {
					frame(res.Data)
				}
				total += int64(len(res.Data))
			}
			from = res.Next
			if from >= res.Stream.Tail {
				break
			}
		}
	}
	b.ReportMetric(float64(total)/1e6/b.Elapsed().Seconds(), "MB/s")
}
