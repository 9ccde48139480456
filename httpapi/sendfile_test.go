package httpapi

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/heraldstreams/herald/store"
)

// fileStore is a store that keeps stream bytes in files: its reads are
// sections of one file and a piece in memory.
type fileStore struct {
	*fakeStore
	t      *testing.T
	name   string
	ct     string
	mu     sync.Mutex
	opened []*os.File
}

// The stream's bytes: hello (64 KiB of 'h') from the file at 2, "big "
// in memory, world (4 KiB of 'w') from the file after hello and 2 more.
// A raw stream's hello is long enough to be sent with sendfile(2)
// (minSendfile), world is not.
var (
	fileHello     = strings.Repeat("h", minSendfile)
	fileWorld     = strings.Repeat("w", 4095) + "\n"
	fileStoreFile = ".." + fileHello + ".." + fileWorld
	fileStoreData = fileHello + "big " + fileWorld
)

func (f *fileStore) StreamReadFiles(_ context.Context, p *store.StreamReadParams) (*store.StreamFileRead, error) {
	file, err := os.Open(f.name)
	if err != nil {
		return nil, err
	}
	f.mu.Lock()
	f.opened = append(f.opened, file)
	f.mu.Unlock()
	n := int64(len(fileStoreData))
	return &store.StreamFileRead{
		Result: store.StreamReadResult{Stream: stream(1, p.Path, f.ct, n), Next: n},
		Sections: []store.Section{{File: file, Off: 2, N: int64(len(fileHello))}, {Data: []byte("big "), N: 4},
			{File: file, Off: int64(4 + len(fileHello)), N: int64(len(fileWorld))}},
		Len:   n,
		Files: []*os.File{file},
	}, nil
}

// readFromConn is a connection that records what net/http hands its
// ReadFrom: an *os.File behind an io.LimitedReader is what a TCP
// connection sends with sendfile(2).
type readFromConn struct {
	net.Conn
	mu    *sync.Mutex
	files *int
}

func (c readFromConn) ReadFrom(r io.Reader) (int64, error) {
	if lr, ok := r.(*io.LimitedReader); ok {
		if _, ok := lr.R.(*os.File); ok {
			c.mu.Lock()
			*c.files++
			c.mu.Unlock()
		}
	}
	return io.Copy(c.Conn, r)
}

type readFromListener struct {
	net.Listener
	mu    sync.Mutex
	files int
}

func (l *readFromListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return readFromConn{c, &l.mu, &l.files}, nil
}

// A catch-up read of a raw stream from a store that keeps its bytes in
// files sends the long file sections to the connection as files
// (sendfile), the rest as written, in order; a JSON stream's bytes are made into the
// array; an If-None-Match of the data's ETag is answered 304; every file
// of a read is closed once it is answered.
func TestCatchUpSendsFileSections(t *testing.T) {
	t.Parallel()
	name := filepath.Join(t.TempDir(), "seg")
	if err := os.WriteFile(name, []byte(fileStoreFile), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		ct, want  string
		sendfiles int
	}{
		{"application/octet-stream", fileStoreData, 1},
		{"application/json", "[" + strings.TrimSuffix(fileStoreData, "\n") + "]", 0},
	} {
		fs := &fileStore{fakeStore: &fakeStore{t: t}, t: t, name: name, ct: tc.ct}
		h := New(Config{Store: fs})
		srv := httptest.NewUnstartedServer(h)
		// Behind the server's connection limits, as herald serve runs it.
		ln := &readFromListener{Listener: srv.Listener}
		srv.Listener = h.LimitListener(ln)
		srv.Start()
		resp, err := http.Get(srv.URL + "/s?offset=-1")
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(resp.Body)
		if err := errors.Join(err, resp.Body.Close()); err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != 200 || string(body) != tc.want {
			t.Fatalf("%s: %d %.40q (%d bytes), want %d bytes", tc.ct, resp.StatusCode, body, len(body), len(tc.want))
		}
		req, _ := http.NewRequest("GET", srv.URL+"/s?offset=-1", nil)
		req.Header.Set("If-None-Match", resp.Header.Get("Etag"))
		resp2, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		if err := resp2.Body.Close(); err != nil || resp2.StatusCode != http.StatusNotModified {
			t.Fatalf("%s: If-None-Match of the ETag: %d, %v", tc.ct, resp2.StatusCode, err)
		}
		srv.Close()
		ln.mu.Lock()
		if ln.files != tc.sendfiles {
			t.Errorf("%s: %d file sections reached the connection as files, want %d", tc.ct, ln.files, tc.sendfiles)
		}
		ln.mu.Unlock()
		fs.mu.Lock()
		for _, f := range fs.opened {
			if _, err := f.Stat(); err == nil {
				t.Errorf("%s: a read's file is still open after its answer", tc.ct)
			}
		}
		fs.mu.Unlock()
	}
}
