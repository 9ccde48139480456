package httpapi

import (
	"context"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/heraldstreams/herald/auth"
	"github.com/heraldstreams/herald/protocol"
	"github.com/heraldstreams/herald/store"
)

// readRequest is a parsed GET.
type readRequest struct {
	path   string
	offset protocol.Offset
	// cursor is the client's echoed Stream-Cursor, "" when none.
	cursor string
	// live ends when a live read must: the client left, or its
	// credential was revoked or expired (see auth.Watch and
	// auth.Revoked).
	live context.Context
}

// read handles GET: catch-up, long-poll or SSE (docs/protocol.md).
// p is the reader's principal, nil with access control off.
func (s *Server) read(w http.ResponseWriter, r *http.Request, path string, p *auth.Principal) {
	q := parseReadQuery(r.URL.RawQuery)
	req := readRequest{path: path, offset: protocol.Offset{Kind: protocol.OffsetKindStart}, cursor: q.cursor, live: r.Context()}
	if q.offsets > 1 {
		s.fail(w, r, errMultipleOffsets)
		return
	}
	hasOffset := q.offsets == 1
	if hasOffset {
		off, err := protocol.ParseOffset(q.offset)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		req.offset = off
	}
	switch live := q.live; live {
	case "":
		s.catchUp(w, r, req)
	case "long-poll", "sse":
		if !hasOffset {
			s.fail(w, r, errOffsetRequired)
			return
		}
		if s.shuttingDown.Load() {
			s.fail(w, r, errShuttingDown)
			return
		}
		if p != nil {
			// A live read outlasts the check of its credential: it ends
			// when the key is revoked or expires.
			var stop func()
			req.live, stop = s.auth.Watch(r.Context(), p)
			defer stop()
		}
		if live == "sse" {
			s.sse(w, r, req)
		} else {
			s.longPoll(w, r, req)
		}
	default:
		s.fail(w, r, errInvalidLive)
	}
}

// readQuery is what a read takes from its query string: the first value
// of offset, live and cursor, and how many offsets it carries.
type readQuery struct {
	offset, live, cursor string
	offsets              int
	hasLive, hasCursor   bool
}

// parseReadQuery reads a read's parameters from a raw query string as
// url.ParseQuery reads them (pairs split at '&'; a pair holding ';', or
// whose name or value does not unescape, ignored), without making its
// map of every parameter: live readers send one request per append, by
// the thousand.
func parseReadQuery(raw string) readQuery {
	var q readQuery
	for raw != "" {
		var pair string
		pair, raw, _ = strings.Cut(raw, "&")
		if pair == "" || strings.Contains(pair, ";") {
			continue
		}
		k, v, _ := strings.Cut(pair, "=")
		k, err := url.QueryUnescape(k)
		if err != nil || (k != "offset" && k != "live" && k != "cursor") {
			continue
		}
		if v, err = url.QueryUnescape(v); err != nil {
			continue
		}
		switch {
		case k == "offset":
			if q.offsets == 0 {
				q.offset = v
			}
			q.offsets++
		case k == "live" && !q.hasLive:
			q.live, q.hasLive = v, true
		case k == "cursor" && !q.hasCursor:
			q.cursor, q.hasCursor = v, true
		}
	}
	return q
}

// start resolves the offset of a read into a position for the store: -1
// for the stream's start, the tail for "now".
func (s *Server) start(r *http.Request, req readRequest) (int64, error) {
	switch req.offset.Kind {
	case protocol.OffsetKindStart:
		return -1, nil
	case protocol.OffsetKindNow:
		st, err := s.store.StreamGet(r.Context(), &store.StreamGetParams{Path: req.path, Now: s.now()})
		if err != nil {
			return 0, err
		}
		return st.Tail, nil
	default:
		return req.offset.Position, nil
	}
}

// readAt reads from a position, resetting a sliding TTL.
func (s *Server) readAt(r *http.Request, path string, from int64) (*store.StreamReadResult, error) {
	return s.store.StreamRead(r.Context(), &store.StreamReadParams{Path: path, From: from, MaxBytes: s.maxReadBytes, Now: s.now()})
}

// catchUp handles a GET without live (docs/protocol.md, Catch-up reads).
// firstRead resolves the request's offset and reads from it; on an error
// it has answered the request and returns false.
func (s *Server) firstRead(w http.ResponseWriter, r *http.Request, req readRequest) (int64, *store.StreamReadResult, bool) {
	from, err := s.start(r, req)
	if err != nil {
		s.fail(w, r, err)
		return 0, nil, false
	}
	res, err := s.readAt(r, req.path, from)
	if err != nil {
		s.fail(w, r, err)
		return 0, nil, false
	}
	return from, res, true
}

func (s *Server) catchUp(w http.ResponseWriter, r *http.Request, req readRequest) {
	if fr, ok := s.store.(store.StreamFileReader); ok && req.offset.Kind != protocol.OffsetKindNow {
		s.catchUpFiles(w, r, req, fr)
		return
	}
	from, res, ok := s.firstRead(w, r, req)
	if !ok {
		return
	}
	if req.offset.Kind == protocol.OffsetKindNow {
		// offset=now skips every existing message: an empty, uncacheable
		// answer at the tail (docs/protocol.md, Catch-up reads), whatever
		// the read found.
		st := &res.Stream
		h := w.Header()
		h.Set(hdrContentType, st.ContentType)
		h.Set(hdrNextOffset, protocol.FormatOffset(from))
		h[hdrUpToDate] = valTrue
		if st.Closed && st.Tail == from {
			h[hdrStreamClosed] = valTrue
		}
		h[hdrCacheControl] = valNoStore
		body := []byte(nil)
		if protocol.IsJSON(st.ContentType) {
			body = protocol.AppendJSONArray(nil, nil)
		}
		writeBody(w, http.StatusOK, body)
		return
	}
	s.writeData(w, r, res, from, nil)
}

// writeData writes a 200 response carrying the data of a read. A non-nil
// cursor marks a live response, which carries Stream-Cursor. Its headers,
// and its body when small, are made once for every reader of the same
// data (sharedResponses).
func (s *Server) writeData(w http.ResponseWriter, r *http.Request, res *store.StreamReadResult, from int64, cursor []string) {
	d := s.shared.data(res, from, true)
	if !s.dataHeaders(w, r, res, d, int64(len(res.Data)), cursor) {
		return
	}
	if d.hasBody {
		if cursor == nil || len(d.body) > netHTTPBuffered {
			w.Header()["Content-Length"] = d.length
		}
		w.WriteHeader(http.StatusOK)
		// A failed write means the client is gone; there is no one to tell.
		_, _ = w.Write(d.body)
		return
	}
	if !protocol.IsJSON(res.Stream.ContentType) {
		writeBody(w, http.StatusOK, res.Data)
		return
	}
	buf := getArrayBuf(protocol.JSONArrayLen(len(res.Data)))
	*buf = protocol.AppendJSONArray(*buf, res.Data)
	writeBody(w, http.StatusOK, *buf)
	putArrayBuf(buf)
}

// netHTTPBuffered is how much of a body net/http buffers before it sends
// the headers: a handler that writes no more than that and no
// Content-Length gets one made by net/http, outside the header map. A
// live response, which carries Stream-Cursor, then has 8 headers of its
// own (as many as a catch-up response with its Content-Length), which a
// Go map holds in one group: with a 9th, the map, and the copy net/http
// makes of it when the headers are written, would each grow into a
// table, for every reader an append wakes.
const netHTTPBuffered = 2048

// dataHeaders sets the headers of a response carrying n bytes of data
// of a read, from d; it answers 304 and returns false when the client's
// copy is current.
func (s *Server) dataHeaders(w http.ResponseWriter, r *http.Request, res *store.StreamReadResult, d *sharedData, n int64, cursor []string) bool {
	h := w.Header()
	h[hdrContentType] = d.contentType
	h[hdrNextOffset] = d.nextOffset
	if d.upToDate {
		h[hdrUpToDate] = valTrue
	}
	if d.eof {
		h[hdrStreamClosed] = valTrue
	}
	if cursor != nil {
		h[hdrCursor] = cursor
	}
	h["Etag"] = d.etag
	if cc := cacheControl(&res.Stream, n > 0 || d.eof, s.now()); cc == cacheStable {
		h[hdrCacheControl] = valCacheStable
	} else {
		h.Set(hdrCacheControl, cc)
	}
	if cursor == nil {
		if inm, ok := header(r.Header, hdrIfNoneMatch); ok && protocol.ETagMatches(inm, d.etag[0]) {
			w.WriteHeader(http.StatusNotModified)
			return false
		}
	}
	return true
}

// arrayBufs holds buffers for JSON array bodies, so that catch-up reads of
// JSON streams neither allocate nor zero megabytes per response. net/http
// does not keep a written slice, so a buffer is free once Write returns.
var arrayBufs sync.Pool

// maxPooledArrayBuf bounds the buffers kept in arrayBufs.
const maxPooledArrayBuf = 2*DefaultMaxReadBytes + 1<<16

// getArrayBuf returns an empty buffer of capacity at least n.
func getArrayBuf(n int) *[]byte {
	if p, ok := arrayBufs.Get().(*[]byte); ok {
		if cap(*p) >= n {
			*p = (*p)[:0]
			return p
		}
		// Too small for this body: let it go; the larger buffer made
		// below takes its place.
	}
	b := make([]byte, 0, n)
	return &b
}

// putArrayBuf returns a buffer to arrayBufs unless it is too large to keep.
func putArrayBuf(p *[]byte) {
	if cap(*p) <= maxPooledArrayBuf {
		arrayBufs.Put(p)
	}
}

// writeBody writes a response with an exact Content-Length.
func writeBody(w http.ResponseWriter, status int, body []byte) {
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	// A failed write means the client is gone; there is no one to tell.
	_, _ = w.Write(body)
}

// cacheMaxAge is how long caches may keep catch-up data (docs/protocol.md,
// Caching, cursors and ETags).
const cacheMaxAge = 60 * time.Second

// cacheControl is the Cache-Control of a read response. Data, and the
// closure signal, never change at a given offset, so they are cacheable
// (docs/protocol.md, Caching, cursors and ETags), but no longer than the
// stream lives. An empty answer at the tail of an open stream changes with
// the next append: never cached.
func cacheControl(st *store.Stream, stable bool, now time.Time) string {
	if !stable {
		return "no-store"
	}
	maxAge := cacheMaxAge
	if d := st.Deadline(); !d.IsZero() {
		if left := d.Sub(now); left < maxAge {
			maxAge = max(left, 0)
		}
	}
	if maxAge < cacheMaxAge {
		return "public, max-age=" + strconv.Itoa(int(maxAge/time.Second))
	}
	return cacheStable
}

// cacheStable is the Cache-Control of data that lives at least
// cacheMaxAge (cacheControl); valCacheStable the header value.
const cacheStable = "public, max-age=60, stale-while-revalidate=300"

var valCacheStable = []string{cacheStable}

// cursor is the Stream-Cursor of a live response (docs/protocol.md, Caching,
// cursors and ETags), with a random jitter of 1 to 3600 seconds in case the
// client is ahead.
func (s *Server) cursor(client string) string {
	jitter := time.Duration(1+rand.Int64N(int64(protocol.MaxCursorJitter/time.Second))) * time.Second
	return protocol.NextCursor(s.now(), client, jitter)
}
