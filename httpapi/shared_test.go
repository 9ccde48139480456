package httpapi

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/heraldstreams/herald/protocol"
	"github.com/heraldstreams/herald/store"
)

// Readers of the same data of a stream share one response: its header
// values and its body (a JSON stream's array made once, a raw stream's
// bytes copied once, never the read's buffer); other data, another end,
// the stream's closure or another stream each get their own.
func TestReadersOfTheSameDataShareOneResponse(t *testing.T) {
	t.Parallel()
	var sr sharedResponses
	read := func(id int64, ct string, data string, from, tail int64, closed bool) *store.StreamReadResult {
		st := stream(id, "/s", ct, tail)
		st.Closed = closed
		return &store.StreamReadResult{Stream: st, Data: []byte(data), Next: from + int64(len(data))}
	}
	first := read(1, "application/json", "{\"a\":1}\n{\"b\":2}\n", 10, 26, false)
	d := sr.data(first, 10, true)
	if string(d.body) != `[{"a":1},{"b":2}]` || d.length[0] != "17" || d.nextOffset[0] != protocol.FormatOffset(26) ||
		!d.upToDate || d.eof || d.etag[0] != protocol.ETag(1, 10, 26, false) {
		t.Fatalf("shared response %+v", d)
	}
	if again := sr.data(read(1, "application/json", "{\"a\":1}\n{\"b\":2}\n", 10, 26, false), 10, true); again != d {
		t.Error("a second reader of the same data made its own response")
	}
	for name, res := range map[string]*store.StreamReadResult{
		"the stream moved on":   read(1, "application/json", "{\"a\":1}\n{\"b\":2}\n", 10, 40, false),
		"the stream closed":     read(1, "application/json", "{\"a\":1}\n{\"b\":2}\n", 10, 26, true),
		"another stream":        read(1+sharedSlots, "application/json", "{\"a\":1}\n{\"b\":2}\n", 10, 26, false),
		"other data from there": read(1, "application/json", "{\"a\":1}\n", 10, 18, false),
	} {
		if other := sr.data(res, 10, true); other == d {
			t.Errorf("%s: the response of other data was shared", name)
		}
		sr.data(first, 10, true) // back in its slot
	}
	raw := read(2, "application/octet-stream", "hello", 0, 5, false)
	rd := sr.data(raw, -1, true)
	raw.Data[0] = 'j'
	if string(rd.body) != "hello" || rd.etag[0] != protocol.ETag(2, 0, 5, false) {
		t.Errorf("raw shared body %q, ETag %s: want a copy of the read's bytes, from the stream's start", rd.body, rd.etag[0])
	}
	big := read(3, "application/json", string(make([]byte, maxSharedBody)), 0, maxSharedBody, false)
	if bd := sr.data(big, 0, true); bd.hasBody {
		t.Error("a body larger than maxSharedBody is kept")
	}
}

// A thousand long-polls woken by one append answer the same bytes and
// headers, each its own Stream-Cursor slice only when it echoed a
// cursor.
func TestLongPollsWokenTogetherAnswerAlike(t *testing.T) {
	t.Parallel()
	s := New(Config{Store: &fakeStore{t: t, notifier: store.NewHub(), read: func(p *store.StreamReadParams) (*store.StreamReadResult, error) {
		return &store.StreamReadResult{Stream: stream(7, p.Path, "application/json", 8), Data: []byte("{\"x\":1}\n")[p.From:], Next: 8}, nil
	}}, Now: func() time.Time { return testNow }})
	var wg sync.WaitGroup
	bodies := make([]string, 100)
	cursors := make([]string, 100)
	for i := range bodies {
		wg.Go(func() {
			w := httptest.NewRecorder()
			s.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/s?offset="+protocol.FormatOffset(0)+"&live=long-poll", nil))
			bodies[i], cursors[i] = w.Body.String(), w.Header().Get(hdrCursor)
		})
	}
	wg.Wait()
	want := strconv.FormatInt(protocol.CurrentCursor(testNow), 10)
	for i := range bodies {
		if bodies[i] != `[{"x":1}]` || cursors[i] != want {
			t.Fatalf("reader %d: %q, cursor %q; want cursor %s", i, bodies[i], cursors[i], want)
		}
	}
	if a, b := s.cursorHeader(""), s.cursorHeader(""); &a[0] != &b[0] {
		t.Error("readers without a cursor do not share this interval's")
	}
	if c := s.cursorHeader(want); c[0] == want {
		t.Errorf("a client at this interval got cursor %s again, want one past it", c[0])
	}
}

// SSE readers that echoed no cursor share the events of one append,
// made once; a reader with a cursor of its own gets its events in its
// own buffer, which a later event reuses without touching the shared.
func TestSSEReadersShareTheEventsOfAnAppend(t *testing.T) {
	t.Parallel()
	s := New(Config{Store: &fakeStore{t: t}, Now: func() time.Time { return testNow }})
	res := &store.StreamReadResult{Stream: stream(9, "/s", "application/json", 8), Data: []byte("{\"x\":1}\n"), Next: 8}
	want := string(protocol.AppendSSEControl(protocol.AppendSSEData(nil, res.Data, protocol.SSEJSON),
		protocol.SSEControl{StreamNextOffset: protocol.FormatOffset(8), StreamCursor: strconv.FormatInt(protocol.CurrentCursor(testNow), 10), UpToDate: true}))
	var a, b, c []byte
	ea := s.sseEvents(&a, res, protocol.SSEJSON, "")
	eb, ec := s.sseEvents(&b, res, protocol.SSEJSON, ""), s.sseEvents(&c, res, protocol.SSEJSON, "")
	if string(ea) != want || string(eb) != want || &eb[0] != &ec[0] || len(b)+len(c) != 0 {
		t.Fatalf("events %q, want %q, shared by the next readers", eb, want)
	}
	var own []byte
	eo := s.sseEvents(&own, res, protocol.SSEJSON, strconv.FormatInt(protocol.CurrentCursor(testNow), 10))
	if &eo[0] == &eb[0] || &eo[0] != &own[0] {
		t.Fatal("a reader with its own cursor got the shared events, not its own")
	}
	next := &store.StreamReadResult{Stream: stream(9, "/s", "application/json", 16), Data: []byte("{\"y\":2}\n"), Next: 16}
	s.sseEvents(&own, next, protocol.SSEJSON, "1")
	if string(s.sseEvents(&b, res, protocol.SSEJSON, "")) != want {
		t.Error("the shared events changed")
	}
}

// A small shared body is answered with its exact Content-Length (which
// net/http makes) and not chunked; a larger one with the one it carries.
func TestSharedBodiesAnswerTheirLength(t *testing.T) {
	t.Parallel()
	for _, n := range []int{1, netHTTPBuffered - 10, netHTTPBuffered + 10, maxSharedBody - 10} {
		msg := []byte(`"` + strings.Repeat("x", n) + "\"\n")
		s := New(Config{Store: &fakeStore{t: t, notifier: store.NewHub(), read: func(p *store.StreamReadParams) (*store.StreamReadResult, error) {
			return &store.StreamReadResult{Stream: stream(4, p.Path, "application/json", int64(len(msg))), Data: msg[p.From:], Next: int64(len(msg))}, nil
		}}})
		srv := httptest.NewServer(s)
		resp, err := http.Get(srv.URL + "/s?offset=" + protocol.FormatOffset(0) + "&live=long-poll")
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(resp.Body)
		if err := errors.Join(err, resp.Body.Close()); err != nil {
			t.Fatal(err)
		}
		srv.Close()
		if resp.ContentLength != int64(len(msg)+1) || len(body) != len(msg)+1 || len(resp.TransferEncoding) != 0 {
			t.Errorf("%d bytes: Content-Length %d, %d bytes, transfer encoding %v", len(msg)+1, resp.ContentLength, len(body), resp.TransferEncoding)
		}
	}
}
