package httpapi

import (
	"errors"
	"io"
	"net/http"
	"os"
	"sync/atomic"
	"time"
)

// Request bodies are the one thing a client can make Herald hold in
// memory, so three rules bound them:
//
//   - memory follows the bytes that arrive, never what Content-Length
//     announces: a body buffer starts small and grows as it fills;
//   - every buffered byte is charged to one budget shared by all requests
//     (MaxBufferedBytes); a request that finds it spent gets 503
//     SERVER_BUSY with Retry-After instead of waiting;
//   - a body must keep arriving: it may take BodyReadTimeout plus the time
//     its bytes need at MinBodyRate, and is cut (408 BODY_TIMEOUT) past
//     that. The deadline is the connection's read deadline, so it bounds
//     the bytes net/http discards after a handler that did not read a
//     body too; it is lifted once the body is read, so a handler that
//     then takes its time is not cancelled.
//
// Live reads have no body, so long-polls and SSE responses are never
// subject to the deadline.

// Defaults of the body limits of Config.
const (
	DefaultMaxBufferedBytes = 128 << 20
	DefaultBodyReadTimeout  = 10 * time.Second
	DefaultMinBodyRate      = 16 << 10
)

const (
	// firstBodyChunk is the most memory a body gets before any of it is
	// read: appends up to this size are read with one allocation.
	firstBodyChunk = 4 << 10
	// bodyGrowth is the factor a full body buffer grows by, so that a
	// buffer is never more than bodyGrowth times the bytes received.
	bodyGrowth = 4
)

// bodyBudget counts the bytes of request bodies buffered now. It is one
// atomic counter: a request that finds it spent is refused, it never
// waits, so there is nothing to wake.
type bodyBudget struct {
	used     atomic.Int64
	limit    int64
	refusals atomic.Int64
}

// reserve charges n bytes, or reports false (and charges nothing) when
// that would pass the limit. Two requests racing near the limit may both
// be refused where one would fit: the price of a lock-free counter.
func (b *bodyBudget) reserve(n int64) bool {
	if b.used.Add(n) > b.limit {
		b.used.Add(-n)
		b.refusals.Add(1)
		return false
	}
	return true
}

// release returns n bytes charged by reserve.
func (b *bodyBudget) release(n int64) { b.used.Add(-n) }

// releaseBody returns the budget of a body read by readBody, once the
// handler no longer needs it.
func (s *Server) releaseBody(body []byte) { s.bodies.release(int64(cap(body))) }

// bodyDeadline keeps a request's read deadline in step with its body.
type bodyDeadline struct {
	// w is the request's ResponseWriter; its controller is made at each
	// use, on the stack, so that arming a deadline does not allocate.
	w     http.ResponseWriter
	start time.Time
	// unsupported is set when the ResponseWriter cannot set deadlines (a
	// test recorder has no connection); the body is then read without one.
	unsupported bool
}

// The deadlines are on the network connection, so they use the real
// clock, not the server's injected one.

// armBodyDeadline sets the first deadline of a request that has a body:
// BodyReadTimeout from now.
func (s *Server) armBodyDeadline(w http.ResponseWriter) bodyDeadline {
	d := bodyDeadline{w: w, start: time.Now()}
	d.set(d.start.Add(s.bodyReadTimeout))
	return d
}

// extend moves the deadline after received bytes have arrived: the body
// may take BodyReadTimeout plus the time its bytes need at MinBodyRate.
func (d *bodyDeadline) extend(s *Server, received int64) {
	// Whole seconds first, so that a large body cannot overflow.
	need := time.Duration(received/s.minBodyRate)*time.Second + time.Duration(received%s.minBodyRate)*time.Second/time.Duration(s.minBodyRate)
	d.set(d.start.Add(s.bodyReadTimeout + need))
}

// lift removes the deadline once the body is read.
func (d *bodyDeadline) lift() { d.set(time.Time{}) }

func (d *bodyDeadline) set(t time.Time) {
	if d.unsupported || d.w == nil {
		return
	}
	if err := http.NewResponseController(d.w).SetReadDeadline(t); err != nil {
		d.unsupported = true
	}
}

// bodyReadError turns the error of reading a body into the error of the
// request, counting the bodies cut for arriving too slowly.
func (s *Server) bodyReadError(err error) error {
	if errors.Is(err, os.ErrDeadlineExceeded) {
		s.bodiesCut.Add(1)
		return errBodyTimeout
	}
	return errBodyRead
}

// readBody reads the body of a create or append (at most maxBodyBytes)
// under the rules above. The ServeHTTP that called the handler armed the
// deadline at d. The caller returns the budget with releaseBody once it is
// done with the body (a nil body holds none).
func (s *Server) readBody(r *http.Request, d *bodyDeadline) ([]byte, error) {
	announced := r.ContentLength
	switch {
	case announced > s.maxBodyBytes:
		return nil, errBodyTooLarge
	case announced == 0:
		return nil, nil
	}
	limit := s.maxBodyBytes
	if announced > 0 {
		limit = announced
	}
	size := min(limit, firstBodyChunk)
	if !s.bodies.reserve(size) {
		return nil, errServerBusy
	}
	buf := make([]byte, 0, size)
	for {
		if len(buf) == cap(buf) {
			if int64(len(buf)) == limit {
				if announced > 0 {
					break // every announced byte is here
				}
				if err := s.expectEOF(r.Body); err != nil {
					s.releaseBody(buf)
					return nil, err
				}
				break
			}
			grown := min(limit, int64(cap(buf))*bodyGrowth)
			if !s.bodies.reserve(grown - int64(cap(buf))) {
				s.releaseBody(buf)
				return nil, errServerBusy
			}
			next := make([]byte, len(buf), grown)
			copy(next, buf)
			buf = next
		}
		n, err := r.Body.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			break
		}
		if err != nil {
			s.releaseBody(buf)
			return nil, s.bodyReadError(err)
		}
		if n > 0 {
			d.extend(s, int64(len(buf)))
		}
	}
	d.lift()
	if len(buf) == 0 {
		// A chunked body with no data: nothing to keep.
		s.releaseBody(buf)
		return nil, nil
	}
	return buf, nil
}

// expectEOF checks that a body of unknown length has ended after
// maxBodyBytes.
func (s *Server) expectEOF(body io.Reader) error {
	var one [1]byte
	for {
		n, err := body.Read(one[:])
		switch {
		case n > 0:
			return errBodyTooLarge
		case err == io.EOF:
			return nil
		case err != nil:
			return s.bodyReadError(err)
		}
	}
}

// guardedBody applies the body rules to a request whose handler reads the
// body itself (Herald's API, callbacks, subscriptions): the deadline moves
// with the bytes read and is lifted at the end, and the bytes read are
// charged to the budget until the request is over.
type guardedBody struct {
	s       *Server
	body    io.ReadCloser
	d       bodyDeadline
	read    int64
	charged int64
	// err ends the body: io.EOF, or the error that cut it short. After a
	// cut the deadline stays, so what net/http discards of the rest after
	// the handler is bounded too.
	err error
}

// guardBody arms the body deadline of r and wraps its body; the caller
// calls done when the handler has returned.
func (s *Server) guardBody(w http.ResponseWriter, r *http.Request) *guardedBody {
	g := &guardedBody{s: s, body: r.Body, d: s.armBodyDeadline(w)}
	r.Body = g
	return g
}

// Read implements io.Reader.
func (g *guardedBody) Read(p []byte) (int, error) {
	if g.err != nil {
		return 0, g.err
	}
	n, err := g.body.Read(p)
	if n > 0 {
		if !g.s.bodies.reserve(int64(n)) {
			g.err = errServerBusy
			return 0, g.err
		}
		g.charged += int64(n)
		g.read += int64(n)
	}
	switch {
	case err == io.EOF:
		g.d.lift()
		g.err = err
	case errors.Is(err, os.ErrDeadlineExceeded):
		g.s.bodiesCut.Add(1)
		g.err = errBodyTimeout
		return n, g.err
	case err != nil:
		g.err = err
	case n > 0:
		g.d.extend(g.s, g.read)
	}
	return n, err
}

// Close implements io.Closer.
func (g *guardedBody) Close() error { return g.body.Close() }

// done returns the budget the body was charged.
func (g *guardedBody) done() { g.s.bodies.release(g.charged) }
