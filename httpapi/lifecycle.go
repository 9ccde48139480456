package httpapi

import (
	"errors"
	"net/http"

	"github.com/heraldstreams/herald/protocol"
	"github.com/heraldstreams/herald/store"
)

// create handles PUT: create a stream, a closed stream or a fork, or
// confirm an identical one (docs/protocol.md, Create and Forks).
// d is the body deadline ServeHTTP armed.
func (s *Server) create(w http.ResponseWriter, r *http.Request, path string, d *bodyDeadline, tenant string) {
	params, err := s.createParams(r, path)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	body, err := s.readBody(r, d)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	defer s.releaseBody(body)
	if len(body) > 0 {
		ct := params.ContentType
		if ct == "" {
			// A fork that inherits its source's content type: the body is
			// framed by that type.
			src, err := s.store.StreamGet(r.Context(), &store.StreamGetParams{Path: params.ForkSource, Now: params.Now})
			if err != nil {
				s.fail(w, r, forkSourceError(err))
				return
			}
			ct = src.ContentType
		}
		if protocol.IsJSON(ct) {
			params.Data, params.Messages, err = protocol.FrameJSON(body, true)
			if err == nil {
				err = checkTenant(params.Data, tenant)
			}
			if err != nil {
				s.fail(w, r, err)
				return
			}
		} else {
			params.Data = body
		}
	}

	res, err := s.store.StreamCreate(r.Context(), params)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	h := w.Header()
	h.Set(hdrContentType, res.Stream.ContentType)
	h.Set(hdrNextOffset, protocol.FormatOffset(res.Stream.Tail))
	if res.Stream.Closed {
		h[hdrStreamClosed] = valTrue
	}
	if !res.Created {
		w.WriteHeader(http.StatusOK)
		return
	}
	h.Set("Location", requestURL(r))
	w.WriteHeader(http.StatusCreated)
}

// createParams parses the headers of a create request.
func (s *Server) createParams(r *http.Request, path string) (*store.StreamCreateParams, error) {
	hdr := r.Header
	p := &store.StreamCreateParams{Path: path, ForkOffset: -1, Now: s.now()}

	closed, _ := header(hdr, hdrStreamClosed)
	p.Closed = protocol.ParseClosed(closed)

	ttl, hasTTL := header(hdr, hdrTTL)
	expires, hasExpires := header(hdr, hdrExpiresAt)
	expiry, err := protocol.ParseExpiry(ttl, hasTTL, expires, hasExpires)
	if err != nil {
		return nil, err
	}
	p.TTL, p.ExpiresAt = expiry.TTL, expiry.ExpiresAt

	source, isFork := header(hdr, hdrForkedFrom)
	forkOffset, hasForkOffset := header(hdr, hdrForkOffset)
	subOffset, hasSubOffset := header(hdr, hdrForkSubOffset)
	if !isFork && (hasForkOffset || hasSubOffset) {
		return nil, errForkHeaders
	}
	if isFork {
		if isReserved(source) || validateStreamPath(source, "") != nil {
			return nil, errInvalidForkSource
		}
		p.ForkSource = source
		if hasForkOffset {
			off, err := protocol.ParseOffset(forkOffset)
			if err != nil {
				return nil, err
			}
			switch off.Kind {
			case protocol.OffsetKindStart:
				p.ForkOffset = 0
			case protocol.OffsetKindPosition:
				p.ForkOffset = off.Position
			}
		}
		if hasSubOffset {
			sub, err := protocol.ParseSubOffset(subOffset)
			if err != nil {
				return nil, err
			}
			// The default anchor is the source's tail, past which there
			// is nothing to refine (docs/protocol.md, Forks).
			if sub > 0 && !hasForkOffset {
				return nil, errForkHeaders
			}
			p.ForkSubOffset = sub
		}
	}

	if ct, ok := header(hdr, hdrContentType); ok && ct != "" {
		if p.ContentType, err = protocol.NormalizeContentType(ct); err != nil {
			return nil, err
		}
	} else if !isFork {
		p.ContentType = protocol.DefaultContentType
	}
	return p, nil
}

// forkSourceError turns the error of looking up a fork source into the
// error of the create: a soft-deleted source is ErrForkSourceGone.
func forkSourceError(err error) error {
	if errors.Is(err, store.ErrStreamGone) {
		return store.ErrForkSourceGone
	}
	return err
}

// head handles HEAD: the stream's metadata, without resetting its TTL
// (docs/protocol.md, Metadata).
func (s *Server) head(w http.ResponseWriter, r *http.Request, path string) {
	st, err := s.store.StreamGet(r.Context(), &store.StreamGetParams{Path: path, Now: s.now()})
	if err != nil {
		s.fail(w, r, err)
		return
	}
	h := w.Header()
	h.Set(hdrContentType, st.ContentType)
	h.Set(hdrNextOffset, protocol.FormatOffset(st.Tail))
	if st.TTL > 0 {
		h.Set(hdrTTL, protocol.FormatTTL(st.TTL))
	}
	if !st.ExpiresAt.IsZero() {
		h.Set(hdrExpiresAt, protocol.FormatExpiresAt(st.ExpiresAt))
	}
	if st.Closed {
		h[hdrStreamClosed] = valTrue
	}
	h[hdrCacheControl] = valNoStore
	w.WriteHeader(http.StatusOK)
}

// delete handles DELETE (docs/protocol.md, Delete).
func (s *Server) delete(w http.ResponseWriter, r *http.Request, path string) {
	if err := s.store.StreamDelete(r.Context(), &store.StreamDeleteParams{Path: path, Now: s.now()}); err != nil {
		s.fail(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// requestURL is the absolute URL of the request, for Location headers.
func requestURL(r *http.Request) string {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + r.Host + r.URL.EscapedPath()
}
