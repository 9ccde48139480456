package httpapi

import (
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/heraldstreams/herald/protocol"
	"github.com/heraldstreams/herald/store"
)

// append handles POST: append data, close the stream, or both, with
// optional idempotent-producer and Stream-Seq checks (docs/protocol.md,
// Append). The rules themselves run in the store, through
// streamrules.DecideAppend, atomically with the write.
// d is the body deadline ServeHTTP armed; tenant is the writer's tenant
// ("" for none), which JSON messages may not contradict.
func (s *Server) append(w http.ResponseWriter, r *http.Request, path string, d *bodyDeadline, tenant string) {
	hdr := r.Header
	closed, _ := header(hdr, hdrStreamClosed)
	var ph protocol.ProducerHeaders
	ph.ID, ph.HasID = header(hdr, hdrProducerID)
	ph.Epoch, ph.HasEpoch = header(hdr, hdrProducerEpoch)
	ph.Seq, ph.HasSeq = header(hdr, hdrProducerSeq)
	producer, err := protocol.ParseProducer(ph)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	params := store.StreamAppendParams{Path: path, Close: protocol.ParseClosed(closed), Producer: producer, Now: s.now()}
	params.Seq, _ = header(hdr, hdrStreamSeq)
	if err := protocol.CheckHeaderLength("Stream-Seq", params.Seq); err != nil {
		s.fail(w, r, err)
		return
	}

	body, err := s.readBody(r, d)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	defer s.releaseBody(body)
	if len(body) == 0 {
		// An empty body only closes (docs/protocol.md, Closing a stream);
		// its Content-Type, if any, is ignored.
		if !params.Close {
			s.failAppend(w, r, &params, errEmptyAppend)
			return
		}
	} else {
		ct, ok := header(hdr, hdrContentType)
		if !ok || ct == "" {
			s.failAppend(w, r, &params, errMissingContentType)
			return
		}
		if params.ContentType, err = protocol.NormalizeContentType(ct); err != nil {
			s.failAppend(w, r, &params, err)
			return
		}
		if protocol.IsJSON(params.ContentType) {
			if params.Data, params.Messages, err = protocol.FrameJSON(body, false); err != nil {
				s.failAppend(w, r, &params, err)
				return
			}
			if err := checkTenant(params.Data, tenant); err != nil {
				s.fail(w, r, err)
				return
			}
		} else {
			params.Data = body
		}
	}

	start := time.Now()
	res, err := s.store.StreamAppend(r.Context(), &params)
	s.appendDuration.Observe(time.Since(start).Seconds())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	h := w.Header()
	h.Set(hdrNextOffset, protocol.FormatOffset(res.Stream.Tail))
	if res.Stream.Closed {
		h[hdrStreamClosed] = valTrue
	}
	status := http.StatusNoContent
	if producer != nil {
		h.Set(hdrProducerEpoch, strconv.FormatInt(res.ProducerEpoch, 10))
		h.Set(hdrProducerSeq, strconv.FormatInt(res.ProducerSeq, 10))
		// New data from a producer is 200; a duplicate or a close-only
		// request is 204 (docs/protocol.md, Idempotent producers).
		if res.Outcome == store.Appended {
			status = http.StatusOK
		}
	}
	s.appends.Add(1)
	w.WriteHeader(status)
}

// failAppend answers an append whose request is invalid (reqErr) with the
// error a client needs most, following the precedence of docs/protocol.md,
// Append: a missing or soft-deleted stream, then a closed stream (so the
// client sees Stream-Closed), then a content type that differs from the
// stream's, then reqErr itself. Only failing requests pay for the lookup.
func (s *Server) failAppend(w http.ResponseWriter, r *http.Request, params *store.StreamAppendParams, reqErr error) {
	st, err := s.store.StreamGet(r.Context(), &store.StreamGetParams{Path: params.Path, Now: params.Now})
	switch {
	case err != nil:
		s.fail(w, r, err)
	case st.Closed:
		s.fail(w, r, &store.ClosedError{Tail: st.Tail})
	case params.ContentType != "" && !protocol.SameMediaType(params.ContentType, st.ContentType) && !errors.Is(reqErr, errEmptyAppend):
		s.fail(w, r, store.ErrContentTypeMismatch)
	default:
		s.fail(w, r, reqErr)
	}
}
