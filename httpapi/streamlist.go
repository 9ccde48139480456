package httpapi

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/heraldstreams/herald/auth"
	"github.com/heraldstreams/herald/internal/httpjson"
	"github.com/heraldstreams/herald/protocol"
	"github.com/heraldstreams/herald/store"
)

// Limits of GET /_herald/v1/streams.
const (
	defaultStreamListLimit = 100
	maxStreamListLimit     = 1000
)

// streamListItem is one stream of GET /_herald/v1/streams.
type streamListItem struct {
	Path        string     `json:"path"`
	ContentType string     `json:"content_type"`
	NextOffset  string     `json:"next_offset"`
	Closed      bool       `json:"closed"`
	CreatedAt   time.Time  `json:"created_at"`
	ExpiresAt   *time.Time `json:"expires_at"`
}

type streamListPage struct {
	Data       []streamListItem `json:"data"`
	NextCursor *string          `json:"next_cursor"`
}

var (
	errStreamListParam   = &httpjson.Error{Status: http.StatusBadRequest, Code: "INVALID_PARAMETER", Message: "prefix must be a path starting with /, cursor a stream path, limit a whole number from 1 to 1000"}
	errStreamListUnknown = &httpjson.Error{Status: http.StatusBadRequest, Code: "UNKNOWN_PARAMETER", Message: "the streams list takes prefix, cursor and limit only"}
)

// listStreams answers GET /_herald/v1/streams: the live streams whose path
// starts with ?prefix=, by path, ?limit= at a time (default 100, at most
// 1,000), from ?cursor= (the next_cursor of the page before). A
// credential with a tenant or stream paths sees only the streams within
// its reach: its pages are filled from further on, so next_cursor only
// ever names a stream it may see, never one of another tenant's.
func (s *Server) listStreams(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	for name := range q {
		if name != "prefix" && name != "cursor" && name != "limit" {
			s.fail(w, r, errStreamListUnknown)
			return
		}
	}
	prefix, cursor := q.Get("prefix"), q.Get("cursor")
	if prefix == "" {
		prefix = "/"
	}
	limit := defaultStreamListLimit
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxStreamListLimit {
			s.fail(w, r, errStreamListParam)
			return
		}
		limit = n
	}
	if prefix[0] != '/' || len(prefix) > maxPathBytes || len(cursor) > maxPathBytes ||
		(cursor != "" && cursor[0] != '/') {
		s.fail(w, r, errStreamListParam)
		return
	}
	p, _ := auth.FromContext(r.Context())
	list, more, err := s.visibleStreams(r, p, prefix, cursor, limit)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	page := streamListPage{Data: []streamListItem{}}
	if more {
		next := list[len(list)-1].Path
		page.NextCursor = &next
	}
	for i := range list {
		st := &list[i]
		item := streamListItem{Path: st.Path, ContentType: st.ContentType, NextOffset: protocol.FormatOffset(st.Tail),
			Closed: st.Closed, CreatedAt: st.CreatedAt}
		if d := st.Deadline(); !d.IsZero() {
			item.ExpiresAt = &d
		}
		page.Data = append(page.Data, item)
	}
	writeJSON(w, http.StatusOK, page)
}

// visibleStreams returns up to limit streams under prefix after cursor
// that p may see, and whether more follow. For a tenant the scan starts
// at its namespace, so it does not walk other tenants' streams; streams
// outside p's reach are skipped, reading further until the page is full.
func (s *Server) visibleStreams(r *http.Request, p *auth.Principal, prefix, cursor string, limit int) ([]store.Stream, bool, error) {
	if p != nil && p.Tenant != "" {
		ns := p.Namespace()
		if ns == "" {
			return nil, false, nil // a tenant without a namespace has no stream
		}
		root := ns[:len(ns)-1] // the namespace's own path belongs to it too
		switch {
		case strings.HasPrefix(prefix, root):
		case strings.HasPrefix(root, prefix):
			prefix = root
		default:
			return nil, false, nil
		}
	}
	var out []store.Stream
	for {
		list, err := s.store.StreamList(r.Context(), &store.StreamListParams{Prefix: prefix, After: cursor, Limit: limit + 1, Now: s.now()})
		if err != nil {
			return nil, false, err
		}
		for _, st := range list {
			if p != nil && !p.AllowsPath(st.Path) {
				continue
			}
			if len(out) == limit {
				return out, true, nil
			}
			out = append(out, st)
		}
		if len(list) <= limit {
			return out, false, nil
		}
		cursor = list[len(list)-1].Path
	}
}
