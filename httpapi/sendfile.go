package httpapi

import (
	"io"
	"net/http"
	"strconv"

	"github.com/heraldstreams/herald/protocol"
	"github.com/heraldstreams/herald/store"
)

// catchUpFiles is catchUp for a store that keeps stream bytes in files
// (store.StreamFileReader): a raw stream's bytes go from the files to
// the socket without passing through Herald's memory (net/http copies an
// *os.File behind an io.LimitedReader with sendfile(2) on a plain TCP
// connection), a JSON stream's are read into a pooled buffer to be made
// into the array.
func (s *Server) catchUpFiles(w http.ResponseWriter, r *http.Request, req readRequest, fr store.StreamFileReader) {
	from, err := s.start(r, req)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	read, err := fr.StreamReadFiles(r.Context(), &store.StreamReadParams{Path: req.path, From: from, MaxBytes: s.maxReadBytes, Now: s.now()})
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
	if protocol.IsJSON(res.Stream.ContentType) {
		buf := getArrayBuf(int(read.Len))
		defer putArrayBuf(buf)
		if *buf, err = read.AppendTo(*buf); err != nil {
			s.fail(w, r, err)
			return
		}
		res.Data = *buf
		s.writeData(w, r, res, from, "")
		return
	}
	if !s.dataHeaders(w, r, res, read.Len, from, "") {
		return
	}
	w.Header().Set("Content-Length", strconv.FormatInt(read.Len, 10))
	w.WriteHeader(http.StatusOK)
	// A failed write means the client is gone; there is no one to tell.
	for _, sec := range read.Sections {
		if sec.File == nil {
			if _, err := w.Write(sec.Data); err != nil {
				return
			}
			continue
		}
		if _, err := sec.File.Seek(sec.Off, io.SeekStart); err != nil {
			return
		}
		if _, err := io.Copy(w, &io.LimitedReader{R: sec.File, N: sec.N}); err != nil {
			return
		}
	}
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
