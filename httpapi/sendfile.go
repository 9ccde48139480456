package httpapi

import (
	"io"
	"net/http"
	"strconv"
	"sync"

	"github.com/heraldstreams/herald/protocol"
	"github.com/heraldstreams/herald/store"
)

// catchUpFiles is catchUp for a store that keeps stream bytes in files
// (store.StreamFileReader). The response is written as it is read, never
// held whole: a raw stream's long runs go from the files to the socket
// without passing through Herald's memory (net/http copies an *os.File
// behind an io.LimitedReader with sendfile(2) on a plain TCP connection);
// a JSON stream's bytes, and a raw stream's short runs, pass through one
// small pooled buffer (sectionWriter). So one response may carry far more
// than a read held in memory (maxCatchUpBytes, not maxReadBytes), and a
// client catches up in fewer round trips.
func (s *Server) catchUpFiles(w http.ResponseWriter, r *http.Request, req readRequest, fr store.StreamFileReader) {
	from, err := s.start(r, req)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	read, err := fr.StreamReadFiles(r.Context(), &store.StreamReadParams{Path: req.path, From: from, MaxBytes: s.maxCatchUpBytes, Now: s.now()})
	if err != nil {
		s.fail(w, r, err)
		return
	}
	defer func() {
		if err := read.Close(); err != nil {
			s.log.Warn("closing a read's segment files failed", "err", err)
		}
	}()
	res := &read.Result
	if !s.dataHeaders(w, r, res, s.shared.data(res, from, false), read.Len, nil) {
		return
	}
	isJSON := protocol.IsJSON(res.Stream.ContentType)
	n := read.Len
	if isJSON {
		n = int64(protocol.JSONArrayLen(int(read.Len)))
	}
	w.Header().Set("Content-Length", strconv.FormatInt(n, 10))
	w.WriteHeader(http.StatusOK)
	if isJSON && read.Len == 0 {
		_, _ = w.Write(emptyJSONArray)
		return
	}
	sw := newSectionWriter(w, isJSON)
	defer sw.release()
	// A failed write means the client is gone; there is no one to tell.
	_ = sw.write(read.Sections)
}

// emptyJSONArray is the body of a JSON read that found no data.
var emptyJSONArray = []byte("[]")

// Sizes of the catch-up path's buffers.
const (
	// sectionBufSize is the size of the buffer a response's bytes pass
	// through when they do not go to the socket straight from a file:
	// small enough that what pread(2) put in it is still in the CPU's
	// cache when the framing patches it and the socket's write copies it.
	sectionBufSize = 256 << 10
	// minSendfile is the shortest run of a raw stream sent with its own
	// sendfile(2): shorter runs (a stream of small appends interleaved
	// with other streams' in the segments) are gathered into the buffer
	// with their neighbours, one write for many.
	minSendfile = 64 << 10
)

// sectionBufs recycles the sectionWriters' buffers.
var sectionBufs = sync.Pool{New: func() any {
	b := make([]byte, sectionBufSize)
	return &b
}}

// sectionWriter writes a read's sections to a response. For a JSON
// stream it makes the stored messages (each ending in '\n', see
// protocol.FrameJSON) into the array as they pass through its buffer:
// '[' first, each '\n' a ',', the last one the closing ']'. The
// response is then exactly protocol.JSONArrayLen of the data long.
type sectionWriter struct {
	w    io.Writer
	json bool
	bp   *[]byte
	buf  []byte // bytes waiting to be written, in (*bp)
}

func newSectionWriter(w io.Writer, json bool) *sectionWriter {
	bp := sectionBufs.Get().(*[]byte)
	sw := &sectionWriter{w: w, json: json, bp: bp, buf: (*bp)[:0]}
	if json {
		sw.buf = append(sw.buf, '[')
	}
	return sw
}

// release returns the buffer to the pool.
func (sw *sectionWriter) release() {
	sectionBufs.Put(sw.bp)
	sw.bp, sw.buf = nil, nil
}

// write writes the sections in order, then what is left in the buffer.
func (sw *sectionWriter) write(sections []store.Section) error {
	for _, sec := range sections {
		if err := sw.section(sec); err != nil {
			return err
		}
	}
	if sw.json && len(sw.buf) > 1 && sw.buf[len(sw.buf)-1] == ',' {
		// The last message's end, made a ',' with the others, closes
		// the array instead (the buffer still holds it: a JSON stream's
		// bytes all pass through the buffer, and it is flushed only to
		// make room for more).
		sw.buf[len(sw.buf)-1] = ']'
	}
	return sw.flush()
}

// section writes one section.
func (sw *sectionWriter) section(sec store.Section) error {
	if sec.File == nil {
		for data := sec.Data; len(data) > 0; {
			if err := sw.room(); err != nil {
				return err
			}
			k := copy(sw.buf[len(sw.buf):cap(sw.buf)], data)
			sw.grow(k)
			data = data[k:]
		}
		return nil
	}
	if !sw.json && sec.N >= minSendfile {
		if err := sw.flush(); err != nil {
			return err
		}
		if _, err := sec.File.Seek(sec.Off, io.SeekStart); err != nil {
			return err
		}
		_, err := io.Copy(sw.w, &io.LimitedReader{R: sec.File, N: sec.N})
		return err
	}
	for off, left := sec.Off, sec.N; left > 0; {
		if err := sw.room(); err != nil {
			return err
		}
		k := int(min(int64(cap(sw.buf)-len(sw.buf)), left))
		dst := sw.buf[len(sw.buf) : len(sw.buf)+k]
		if _, err := sec.File.ReadAt(dst, off); err != nil {
			return err
		}
		sw.grow(k)
		off, left = off+int64(k), left-int64(k)
	}
	return nil
}

// room flushes the buffer when it is full.
func (sw *sectionWriter) room() error {
	if len(sw.buf) < cap(sw.buf) {
		return nil
	}
	return sw.flush()
}

// grow takes k bytes just put past the buffer's end into it, framing
// them for a JSON stream.
func (sw *sectionWriter) grow(k int) {
	at := len(sw.buf)
	sw.buf = sw.buf[:at+k]
	if sw.json {
		protocol.JoinJSONMessages(sw.buf[at:])
	}
}

// flush writes the buffer.
func (sw *sectionWriter) flush() error {
	if len(sw.buf) == 0 {
		return nil
	}
	_, err := sw.w.Write(sw.buf)
	sw.buf = sw.buf[:0]
	return err
}

// ReadFrom copies src to the response with the ResponseWriter's own
// ReadFrom (net/http's, which sends a file with sendfile(2)), counting
// the bytes.
func (w *statusWriter) ReadFrom(src io.Reader) (int64, error) {
	if w.code == 0 {
		w.code = http.StatusOK
	}
	n, err := io.Copy(w.ResponseWriter, src)
	w.bytes += n
	return n, err
}

// ReadFrom hands r to the connection's own ReadFrom (net.TCPConn's,
// which sends a file with sendfile(2)), which the wrapper would hide
// from net/http.
func (c *countedConn) ReadFrom(r io.Reader) (int64, error) {
	if rf, ok := c.Conn.(io.ReaderFrom); ok {
		return rf.ReadFrom(r)
	}
	return io.Copy(c.Conn, r)
}
