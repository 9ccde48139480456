package httpapi

import (
	"strconv"
	"sync/atomic"

	"github.com/heraldstreams/herald/protocol"
	"github.com/heraldstreams/herald/store"
)

// Bounds of the responses readers share.
const (
	// sharedSlots is how many streams' latest data responses are kept,
	// a stream in the slot its id falls in.
	sharedSlots = 256
	// maxSharedBody bounds the body a kept response holds: the data of
	// small appends, which live readers wake for by the thousand.
	maxSharedBody = 32 << 10
)

// sharedData is what every response carrying the same data of a stream
// says: its header values and, for a body small enough to keep, the body
// itself (a JSON stream's data made into the array). The bytes of a
// stream at given positions never change and a stream's id is never
// reused, so a response made for one reader serves every reader at the
// same offset: when an append wakes a thousand long-polls, the first to
// run makes the response and the others write it as it is. Nothing in it
// is modified once it is made (net/http never modifies header value
// slices).
type sharedData struct {
	id, from, next int64
	upToDate, eof  bool
	contentType    []string
	nextOffset     []string
	etag           []string
	// hasBody says body and length are made.
	hasBody bool
	body    []byte
	length  []string
}

// sharedResponses keeps the latest sharedData of sharedSlots streams.
type sharedResponses [sharedSlots]atomic.Pointer[sharedData]

// data returns the shared header values of a response carrying the data
// [from, res.Next) of res's stream, with the body (hasBody) when
// withBody and it is small enough to keep; else the caller makes its
// own.
func (sr *sharedResponses) data(res *store.StreamReadResult, from int64, withBody bool) *sharedData {
	st := &res.Stream
	from = max(from, 0)
	upToDate := res.Next >= st.Tail
	eof := upToDate && st.Closed
	keep := withBody && protocol.JSONArrayLen(len(res.Data)) <= maxSharedBody
	slot := &sr[uint64(st.ID)%sharedSlots]
	if d := slot.Load(); d != nil && d.id == st.ID && d.from == from && d.next == res.Next &&
		d.upToDate == upToDate && d.eof == eof && (d.hasBody || !keep) {
		return d
	}
	d := &sharedData{id: st.ID, from: from, next: res.Next, upToDate: upToDate, eof: eof,
		contentType: []string{st.ContentType},
		nextOffset:  []string{protocol.FormatOffset(res.Next)},
		etag:        []string{protocol.ETag(st.ID, from, res.Next, eof)},
	}
	if keep {
		// A copy: the read's buffer may be far larger than its data.
		d.hasBody = true
		if protocol.IsJSON(st.ContentType) {
			d.body = protocol.AppendJSONArray(make([]byte, 0, protocol.JSONArrayLen(len(res.Data))), res.Data)
		} else {
			d.body = append([]byte(nil), res.Data...)
		}
		d.length = []string{strconv.Itoa(len(d.body))}
	}
	slot.Store(d)
	return d
}

// cursorNow is the Stream-Cursor of live responses to clients that echo
// none, made once an interval.
type cursorNow struct {
	interval int64
	value    []string
}

// cursorHeader is the Stream-Cursor value of a live response to a
// client that echoed client ("" when none): shared by every such client
// within a cursor interval, drawn with its own jitter otherwise.
func (s *Server) cursorHeader(client string) []string {
	if client != "" {
		return []string{s.cursor(client)}
	}
	now := protocol.CurrentCursor(s.now())
	if c := s.cursorNow.Load(); c != nil && c.interval == now {
		return c.value
	}
	c := &cursorNow{interval: now, value: []string{strconv.FormatInt(now, 10)}}
	s.cursorNow.Store(c)
	return c.value
}

// sharedEvent is an SSE data event and the control event after it, as
// every reader that echoed no cursor gets them: made by the first reader
// an append wakes, written as they are by the others.
type sharedEvent struct {
	id, from, next int64
	upToDate, eof  bool
	enc            protocol.SSEEncoding
	cursor         int64 // the interval of the control's Stream-Cursor
	bytes          []byte
}

// sharedEvents keeps the latest sharedEvent of sharedSlots streams.
type sharedEvents [sharedSlots]atomic.Pointer[sharedEvent]

// sseEvents returns the events of res for an SSE reader that echoed
// cursor ("" when none): the data event when there is data, then the
// control event. They are shared by every reader that echoed no cursor
// when the data is small enough to keep (never to be modified), else
// made in the reader's own *buf.
func (s *Server) sseEvents(own *[]byte, res *store.StreamReadResult, enc protocol.SSEEncoding, cursor string) []byte {
	st := &res.Stream
	upToDate := res.Next >= st.Tail
	eof := upToDate && st.Closed
	from := res.Next - int64(len(res.Data))
	share := cursor == "" && len(res.Data) <= maxSharedBody
	var interval int64
	var slot *atomic.Pointer[sharedEvent]
	if share {
		interval = protocol.CurrentCursor(s.now())
		slot = &s.sharedSSE[uint64(st.ID)%sharedSlots]
		if e := slot.Load(); e != nil && e.id == st.ID && e.from == from && e.next == res.Next &&
			e.upToDate == upToDate && e.eof == eof && e.enc == enc && e.cursor == interval {
			return e.bytes
		}
	}
	buf := (*own)[:0]
	if len(res.Data) > 0 {
		buf = protocol.AppendSSEData(buf, res.Data, enc)
	}
	ctl := protocol.SSEControl{StreamNextOffset: protocol.FormatOffset(res.Next), UpToDate: upToDate, StreamClosed: eof}
	if !eof {
		if share {
			ctl.StreamCursor = strconv.FormatInt(interval, 10)
		} else {
			ctl.StreamCursor = s.cursor(cursor)
		}
	}
	buf = protocol.AppendSSEControl(buf, ctl)
	*own = buf
	if share {
		slot.Store(&sharedEvent{id: st.ID, from: from, next: res.Next, upToDate: upToDate, eof: eof, enc: enc,
			cursor: interval, bytes: append([]byte(nil), buf...)})
	}
	return buf
}
