package store

import (
	"context"
	"errors"
	"os"
)

// StreamFileReader is implemented by a store that keeps stream bytes in
// files (the embedded one). StreamReadFiles is StreamRead whose data is
// given as sections of those files rather than read into memory, for a
// caller that copies them to a socket (with sendfile(2), which net/http
// uses for an *os.File behind an io.LimitedReader).
type StreamFileReader interface {
	StreamReadFiles(ctx context.Context, params *StreamReadParams) (*StreamFileRead, error)
}

// StreamFileRead is the output of StreamFileReader.StreamReadFiles:
// Result as StreamRead returns it but with Data nil, its bytes being
// Sections, in order, Len in all. The caller closes it when done.
type StreamFileRead struct {
	Result   StreamReadResult
	Sections []Section
	Len      int64
	// Files are the files the sections read, opened for this read alone
	// (a section's reader moves its file's offset); Close closes them.
	Files []*os.File
}

// Section is part of a read's data: Data when it is in memory (File
// nil), else N bytes of File at Off.
type Section struct {
	Data   []byte
	File   *os.File
	Off, N int64
}

// Close releases the read's files.
func (r *StreamFileRead) Close() error {
	var errs []error
	for _, f := range r.Files {
		errs = append(errs, f.Close())
	}
	r.Files = nil
	return errors.Join(errs...)
}

// AppendTo appends the read's bytes to dst (positioned reads; the files'
// offsets do not move) and returns it.
func (r *StreamFileRead) AppendTo(dst []byte) ([]byte, error) {
	for _, s := range r.Sections {
		if s.File == nil {
			dst = append(dst, s.Data...)
			continue
		}
		at := len(dst)
		dst = append(dst, make([]byte, s.N)...)
		if _, err := s.File.ReadAt(dst[at:], s.Off); err != nil {
			return dst[:at], err
		}
	}
	return dst, nil
}
