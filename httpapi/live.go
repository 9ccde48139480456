package httpapi

import (
	"net/http"
	"time"

	"github.com/heraldstreams/herald/auth"
	"github.com/heraldstreams/herald/protocol"
	"github.com/heraldstreams/herald/store"
)

// longPoll handles GET ?live=long-poll (docs/protocol.md, Live reads:
// long-poll): answer at once when there is data or the stream is closed at
// the offset; otherwise wait for the stream's next change, up to the
// long-poll timeout.
//
// Waiting never misses an append: the notifier's wait channel is taken
// before the state is read, so a change after the read closes a channel
// this request already holds. All long-polls of one stream share that one
// channel.
func (s *Server) longPoll(w http.ResponseWriter, r *http.Request, req readRequest) {
	from, err := s.start(r, req)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.liveLongPolls.Add(1)
	defer s.liveLongPolls.Add(-1)
	timeout := time.NewTimer(s.longPollTimeout)
	defer timeout.Stop()
	notifier := s.store.Notifier()

	// The first read resets a sliding TTL as the request begins
	// (docs/protocol.md, Expiry) and learns the stream's ID, which the wait
	// needs.
	var (
		id   int64
		wait <-chan struct{}
	)
	for {
		res, err := s.readAt(r, req.path, from)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		st := &res.Stream
		if len(res.Data) > 0 {
			s.writeData(w, r, res, from, s.cursorHeader(req.cursor))
			return
		}
		from = res.Next
		if st.Closed && from >= st.Tail {
			// Closed at the tail: EOF at once, never a wait.
			s.writeNoData(w, from, true, nil)
			return
		}
		if wait == nil || st.ID != id {
			// First pass, or the stream was re-created under the path:
			// take the wait channel, then read again.
			id = st.ID
			wait = notifier.Wait(id)
			continue
		}
		select {
		case <-wait:
			wait = notifier.Wait(id)
		case <-timeout.C:
			s.writeNoData(w, from, false, s.cursorHeader(req.cursor))
			return
		case <-s.shutdown:
			s.writeNoData(w, from, false, s.cursorHeader(req.cursor))
			return
		case <-req.live.Done():
			if err := auth.Revoked(req.live); err != nil {
				// The next request would be refused so: say it now.
				auth.WriteError(w, r, err)
			}
			return
		}
	}
}

// writeNoData writes the 204 of a long-poll that found no data.
func (s *Server) writeNoData(w http.ResponseWriter, tail int64, closed bool, cursor []string) {
	h := w.Header()
	h.Set(hdrNextOffset, protocol.FormatOffset(tail))
	h[hdrUpToDate] = valTrue
	if closed {
		h[hdrStreamClosed] = valTrue
	}
	if cursor != nil {
		h[hdrCursor] = cursor
	}
	h[hdrCacheControl] = valNoStore
	w.WriteHeader(http.StatusNoContent)
}

// sse handles GET ?live=sse (docs/protocol.md, Server-Sent Events): catch up
// from the offset as data events, each followed by a control event, then
// follow the stream until it closes, the client leaves, the server shuts
// down or SSEMaxDuration passes.
func (s *Server) sse(w http.ResponseWriter, r *http.Request, req readRequest) {
	from, res, ok := s.firstRead(w, r, req)
	if !ok {
		return
	}
	s.liveSSE.Add(1)
	defer s.liveSSE.Add(-1)
	id := res.Stream.ID
	enc := protocol.SSEEncodingFor(res.Stream.ContentType)

	h := w.Header()
	h["Content-Type"] = valEventStream
	h[hdrCacheControl] = valNoCache
	h["X-Accel-Buffering"] = valNo
	if enc == protocol.SSEBase64 {
		h[hdrSSEEncoding] = valBase64
	}
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)

	deadline := time.NewTimer(s.sseMaxDuration)
	defer deadline.Stop()
	// An idle response gets a comment now and then, so proxies that cut
	// quiet connections keep it open; clients ignore comments.
	keepAlive := time.NewTicker(s.sseKeepAlive)
	defer keepAlive.Stop()
	ping := func() bool {
		if _, err := w.Write(sseKeepAliveComment); err != nil {
			return false
		}
		return rc.Flush() == nil
	}
	notifier := s.store.Notifier()
	var buf []byte
	sentControl := false
	for {
		eof := res.Stream.Closed && res.Next >= res.Stream.Tail
		// Emit the data read, or a lone control event when the client
		// must learn where it stands: at the start, and at EOF.
		if len(res.Data) > 0 || eof || !sentControl {
			ev := s.sseEvents(&buf, res, enc, req.cursor)
			sentControl = true
			if _, err := w.Write(ev); err != nil {
				return
			}
			if err := rc.Flush(); err != nil {
				return
			}
		}
		if eof {
			// Clients must not reconnect after streamClosed; the
			// connection ends here.
			return
		}
		from = res.Next
		next, err := s.nextSSE(r, req.path, from, id, notifier, sseTimers{deadline.C, keepAlive.C, req.live.Done(), ping})
		if err != nil || next == nil {
			return // headers are sent: ending the response is all that is left
		}
		res = next
	}
}

// nextSSE waits until the stream has data at from, or closes, and returns
// the read; it returns nil when the response must end instead (the client
// left, its credential was revoked or expired, the server shuts down, the
// response is old enough, or the stream was deleted or re-created under
// the path).
func (s *Server) nextSSE(r *http.Request, path string, from, id int64, notifier store.Notifier, t sseTimers) (*store.StreamReadResult, error) {
	for {
		select {
		case <-t.done:
			// Checked before every read, not only while idle: a
			// revoked reader of a busy stream must not read on.
			return nil, nil
		default:
		}
		wait := notifier.Wait(id)
		res, err := s.readAt(r, path, from)
		if err != nil {
			return nil, err
		}
		if res.Stream.ID != id {
			return nil, nil
		}
		if len(res.Data) > 0 || (res.Stream.Closed && res.Next >= res.Stream.Tail) {
			return res, nil
		}
	idle:
		select {
		case <-wait:
		case <-t.keepAlive:
			if !t.ping() {
				return nil, nil
			}
			goto idle
		case <-t.deadline:
			return nil, nil
		case <-s.shutdown:
			return nil, nil
		case <-t.done:
			return nil, nil
		}
	}
}

// sseTimers are what an SSE response waits on besides the stream.
type sseTimers struct {
	deadline  <-chan time.Time
	keepAlive <-chan time.Time
	done      <-chan struct{} // the client left, or its credential ended (readRequest.live)
	ping      func() bool     // writes a keep-alive comment; false when the client is gone
}

// sseKeepAliveComment is an SSE comment line: ignored by clients.
var sseKeepAliveComment = []byte(": keep-alive\n\n")
