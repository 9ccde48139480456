package httpapi

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/heraldstreams/herald/protocol"
	"github.com/heraldstreams/herald/store"
)

// sectionsOf writes data to a file and returns it as sections of that
// file cut at the given lengths, the piece at mem held in memory
// instead, and the file.
func sectionsOf(t *testing.T, data []byte, cuts []int, mem int) []store.Section {
	t.Helper()
	name := filepath.Join(t.TempDir(), "seg")
	// The file holds the data after 3 bytes that are not the stream's.
	if err := os.WriteFile(name, append([]byte("xyz"), data...), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.Close() })
	var secs []store.Section
	at := 0
	for i, n := range append(cuts, len(data)-sum(cuts)) {
		if i == mem {
			secs = append(secs, store.Section{Data: data[at : at+n], N: int64(n)})
		} else {
			secs = append(secs, store.Section{File: f, Off: int64(3 + at), N: int64(n)})
		}
		at += n
	}
	return secs
}

func sum(v []int) (n int) {
	for _, x := range v {
		n += x
	}
	return n
}

// The section writer writes a read's sections as they are: a raw
// stream's bytes in order, whatever the sections' lengths against its
// buffer's and the shortest sendfile; a JSON stream's messages made
// into the array, exactly as AppendJSONArray makes it, when the messages
// and the sections cross the buffer's bounds anywhere.
func TestSectionWriterWritesTheSections(t *testing.T) {
	t.Parallel()
	var data []byte
	for i := 0; len(data) < 3*sectionBufSize+1000; i++ {
		data = fmt.Appendf(data, `{"n":%d,"pad":"%s"}`+"\n", i, bytes.Repeat([]byte("p"), i%300))
	}
	for _, tc := range []struct {
		name string
		cuts []int
		mem  int
	}{
		{"one section", nil, -1},
		{"one section in memory", nil, 0},
		{"short and long sections", []int{10, minSendfile + 7, 100, sectionBufSize + 3, 5}, 2},
		{"a long section in memory", []int{1, sectionBufSize*2 + 11}, 1},
	} {
		for _, json := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s json=%v", tc.name, json), func(t *testing.T) {
				t.Parallel()
				var out bytes.Buffer
				sw := newSectionWriter(&out, json)
				if err := sw.write(sectionsOf(t, data, tc.cuts, tc.mem)); err != nil {
					t.Fatal(err)
				}
				sw.release()
				want := data
				if json {
					want = protocol.AppendJSONArray(nil, data)
					if len(want) != protocol.JSONArrayLen(len(data)) {
						t.Fatalf("the array is %d bytes, JSONArrayLen says %d", len(want), protocol.JSONArrayLen(len(data)))
					}
				}
				if !bytes.Equal(out.Bytes(), want) {
					t.Fatalf("wrote %d bytes (%.30q…%.30q), want %d", out.Len(), out.Bytes(), out.Bytes()[max(out.Len()-30, 0):], len(want))
				}
			})
		}
	}
}

// boundStore records the bound of the reads it is asked for.
type boundStore struct {
	*fakeStore
	max chan int
}

func (b *boundStore) StreamReadFiles(_ context.Context, p *store.StreamReadParams) (*store.StreamFileRead, error) {
	b.max <- p.MaxBytes
	data := []byte("{}\n")
	return &store.StreamFileRead{
		Result:   store.StreamReadResult{Stream: stream(1, p.Path, "application/json", 3), Next: 3},
		Sections: []store.Section{{Data: data, N: 3}},
		Len:      3,
	}, nil
}

// A catch-up read from files is bounded by MaxCatchUpBytes, not by
// MaxReadBytes (the bound of reads held in memory), and answers exactly
// its Content-Length.
func TestCatchUpFromFilesIsBoundByMaxCatchUpBytes(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		cfg  Config
		want int
	}{
		{Config{MaxReadBytes: 10}, DefaultMaxCatchUpBytes},
		{Config{MaxReadBytes: 10, MaxCatchUpBytes: 12345}, 12345},
	} {
		bs := &boundStore{fakeStore: &fakeStore{t: t}, max: make(chan int, 1)}
		tc.cfg.Store = bs
		w := httptest.NewRecorder()
		New(tc.cfg).ServeHTTP(w, httptest.NewRequest("GET", "/s?offset=-1", nil))
		if got := <-bs.max; got != tc.want {
			t.Errorf("read bound %d, want %d", got, tc.want)
		}
		if w.Code != http.StatusOK || w.Body.String() != "[{}]" || w.Header().Get("Content-Length") != "4" {
			t.Errorf("answer %d %q, Content-Length %q", w.Code, w.Body, w.Header().Get("Content-Length"))
		}
	}
}
