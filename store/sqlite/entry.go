package sqlite

import (
	"database/sql"
	"errors"
	"strings"
	"time"
	"unique"

	"github.com/heraldstreams/herald/store"
	"github.com/heraldstreams/herald/store/sqlstore"
)

// entry is the in-memory metadata of one stream. Once published in the
// cache an entry is never modified (readers hold it without a lock); the
// committer clones it to change it.
//
// Every cached stream has one, so it is kept small (112 bytes, one allocation
// with its path): times are Unix nanoseconds, content types are interned,
// and what few streams have (a fork origin, a closing producer, an
// absolute expiry) sits behind one pointer. Producer state and recent
// chunks live in the Store, only for the streams that use them.
type entry struct {
	id          int64
	path        string
	contentType string // interned: streams share a handful of types
	tail        int64
	ttl         time.Duration
	accessedAt  int64 // Unix ns
	createdAt   int64 // Unix ns
	lastSeq     string
	// changedSeq is the change sequence number in the stream's row (see
	// changes.go).
	changedSeq  int64
	rare        *entryRare // nil for most streams; never modified once set
	closed      bool
	softDeleted bool
}

// entryRare holds the metadata that most streams do not have.
type entryRare struct {
	// sourceID is the fork source's id, 0 when the stream is not a fork.
	sourceID      int64
	forkSource    string
	forkPosition  int64
	forkOffset    int64
	forkSubOffset int64
	closedBy      *store.Producer
	// expiresAt is kept as given: Stream-Expires-At may lie past what
	// Unix nanoseconds can hold.
	expiresAt time.Time
}

func (e *entry) clone() *entry {
	c := *e
	return &c
}

// setRare changes the rare fields of e (a clone the committer owns) with
// fn, copying them first: a published entry's rare fields never change.
func (e *entry) setRare(fn func(r *entryRare)) {
	var r entryRare
	if e.rare != nil {
		r = *e.rare
	}
	fn(&r)
	if r == (entryRare{}) {
		e.rare = nil
		return
	}
	e.rare = &r
}

// sourceID is the fork source's id, 0 when e is not a fork.
func (e *entry) sourceID() int64 {
	if e.rare == nil {
		return 0
	}
	return e.rare.sourceID
}

// forkPosition is where e diverged from its fork source (0 when none).
func (e *entry) forkPosition() int64 {
	if e.rare == nil {
		return 0
	}
	return e.rare.forkPosition
}

func (e *entry) closedBy() *store.Producer {
	if e.rare == nil {
		return nil
	}
	return e.rare.closedBy
}

func (e *entry) expiresAt() time.Time {
	if e.rare == nil {
		return time.Time{}
	}
	return e.rare.expiresAt
}

// stream returns e as the contract's Stream (AccessedAt as last written).
func (e *entry) stream() store.Stream {
	st := store.Stream{
		ID:          e.id,
		Path:        e.path,
		ContentType: e.contentType,
		Tail:        e.tail,
		Closed:      e.closed,
		TTL:         e.ttl,
		AccessedAt:  sqlstore.FromNanos(e.accessedAt),
		CreatedAt:   sqlstore.FromNanos(e.createdAt),
		LastSeq:     e.lastSeq,
	}
	if r := e.rare; r != nil {
		st.ExpiresAt = r.expiresAt
		st.ForkSource = r.forkSource
		st.ForkPosition = r.forkPosition
		st.ForkOffset = r.forkOffset
		st.ForkSubOffset = r.forkSubOffset
	}
	return st
}

// internContentType returns the canonical copy of a content type, so that
// streams of one type share its bytes (and never pin a request's buffer).
func internContentType(ct string) string {
	return unique.Make(ct).Value()
}

// ownPath returns a copy of a stream path that shares no memory with the
// string it came from (a request line, which is larger).
func ownPath(p string) string { return strings.Clone(p) }

// newEntry returns the cache entry of a stream's row.
func newEntry(r *sqlstore.StreamRow) *entry {
	e := &entry{
		id:          r.ID,
		path:        r.Path,
		contentType: internContentType(r.ContentType),
		tail:        r.Tail,
		ttl:         r.TTL,
		accessedAt:  sqlstore.Nanos(r.AccessedAt),
		createdAt:   sqlstore.Nanos(r.CreatedAt),
		lastSeq:     r.LastSeq,
		changedSeq:  r.ChangedSeq,
		closed:      r.Closed,
		softDeleted: r.SoftDeleted,
	}
	e.setRare(func(dst *entryRare) {
		*dst = entryRare{sourceID: r.SourceID, forkSource: r.ForkSource, forkPosition: r.ForkPosition,
			forkOffset: r.ForkOffset, forkSubOffset: r.ForkSubOffset, closedBy: r.ClosedBy, expiresAt: r.ExpiresAt}
	})
	return e
}

// accessedAt is the stream's last access (Unix ns) including renewals not
// yet written by the touch loop.
func (s *Store) accessedAt(e *entry) int64 {
	if e.ttl <= 0 {
		return e.accessedAt // only a sliding TTL reads it; touch skips these
	}
	return max(s.pendingAccess(e.id), e.accessedAt)
}

// pendingAccess is the last read-driven access of stream id (Unix ns)
// that the touch loop has not written yet, 0 when none
// (sqlstore.Config.PendingAccess).
func (s *Store) pendingAccess(id int64) int64 {
	s.touchMu.Lock()
	defer s.touchMu.Unlock()
	return s.touches[id]
}

// view returns the stream as clients see it at now: its snapshot with the
// effective access time, or an error when it is missing, soft-deleted or
// expired.
func (s *Store) view(e *entry, now time.Time) (store.Stream, error) {
	if err := sqlstore.ViewError(e != nil, e != nil && e.softDeleted, e != nil && s.expired(e, now)); err != nil {
		return store.Stream{}, err
	}
	st := e.stream()
	st.AccessedAt = sqlstore.FromNanos(s.accessedAt(e))
	return st, nil
}

// expired reports whether e has expired at now, without building its
// Stream (the expiry sweep asks this of every stream).
func (s *Store) expired(e *entry, now time.Time) bool {
	if e.rare != nil && !e.rare.expiresAt.IsZero() {
		return !now.Before(e.rare.expiresAt)
	}
	if e.ttl <= 0 {
		return false
	}
	return !now.Before(sqlstore.FromNanos(s.accessedAt(e)).Add(e.ttl))
}

// touch records a read-driven TTL renewal; the touch loop writes it.
func (s *Store) touch(e *entry, now time.Time) {
	if e.ttl <= 0 {
		return
	}
	n := now.UnixNano()
	s.touchMu.Lock()
	if n > s.touches[e.id] {
		s.touches[e.id] = n
	}
	s.touchMu.Unlock()
}

// errNoRows keeps sql.ErrNoRows checks in one place.
func isNoRows(err error) bool { return errors.Is(err, sql.ErrNoRows) }
