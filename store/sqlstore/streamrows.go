package sqlstore

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/heraldstreams/herald/store"
)

// The streams read from their rows, written once: the row shape and its
// mapping to the contract's Stream, the rule of what clients see, and
// the statements that get, list, renew and find expired streams. A
// backend that keeps its streams in memory (SQLite) fills its cache with
// ScanStream and decides with ViewError; one that reads its rows in each
// transaction (PostgreSQL) uses the rest.

// StreamRow is one stream's row: the contract's Stream and what only the
// store needs.
type StreamRow struct {
	store.Stream
	// SourceID is the fork source's id, 0 when the stream is not a fork.
	SourceID    int64
	ClosedBy    *store.Producer
	SoftDeleted bool
	// ChangedSeq is the number of the stream's last change (see
	// store.StreamChangeStore).
	ChangedSeq int64
}

// ScanStream scans a row of StreamColumns into dst.
func ScanStream(r Row, dst *StreamRow) error {
	var (
		closedByID                 sql.NullString
		closedByEpoch, closedBySeq sql.NullInt64
		sourceID                   sql.NullInt64
		ttl, expires, acc, created int64
	)
	*dst = StreamRow{}
	st := &dst.Stream
	err := r.Scan(&st.ID, &st.Path, &st.ContentType, &st.Tail, &st.Closed, &closedByID, &closedByEpoch, &closedBySeq,
		&ttl, &expires, &acc, &created, &sourceID, &st.ForkSource, &st.ForkPosition,
		&st.ForkOffset, &st.ForkSubOffset, &st.LastSeq, &dst.SoftDeleted, &dst.ChangedSeq)
	if err != nil {
		return err
	}
	st.TTL = time.Duration(ttl) * time.Second
	st.ExpiresAt, st.AccessedAt, st.CreatedAt = FromNanos(expires), FromNanos(acc), FromNanos(created)
	dst.SourceID = sourceID.Int64
	if closedByID.Valid {
		dst.ClosedBy = &store.Producer{ID: closedByID.String, Epoch: closedByEpoch.Int64, Seq: closedBySeq.Int64}
	}
	return nil
}

// ViewError is the rule of what clients see of a stream: a missing or
// expired one is not found, a soft-deleted one (kept for its forks) is
// gone; nil when it is live.
func ViewError(found, softDeleted, expired bool) error {
	switch {
	case !found:
		return store.ErrNotFound
	case softDeleted:
		return store.ErrStreamGone
	case expired:
		return store.ErrNotFound
	}
	return nil
}

// View returns the stream as clients see it at now (r may be nil), or
// ViewError's error.
func (r *StreamRow) View(now time.Time) (store.Stream, error) {
	if err := ViewError(r != nil, r != nil && r.SoftDeleted, r != nil && r.Expired(now)); err != nil {
		return store.Stream{}, err
	}
	return r.Stream, nil
}

// The statements that read one stream's row, by path and by id: a
// backend with a cache of streams reads a missing one with them too.
const (
	StreamByPathSQL = `SELECT ` + StreamColumns + ` FROM streams WHERE path = $1`
	StreamByIDSQL   = `SELECT ` + StreamColumns + ` FROM streams WHERE id = $1`
)

// LoadStream reads the stream at path (nil when none); lock ends the
// SELECT with the dialect's ForUpdate, for a write that changes it.
func (s *Store) LoadStream(x Executor, path string, lock bool) (*StreamRow, error) {
	return s.loadStream(x, StreamByPathSQL, path, lock)
}

// LoadStreamID reads the stream with an id (nil when none), as
// LoadStream.
func (s *Store) LoadStreamID(x Executor, id int64, lock bool) (*StreamRow, error) {
	return s.loadStream(x, StreamByIDSQL, id, lock)
}

func (s *Store) loadStream(x Executor, q string, key any, lock bool) (*StreamRow, error) {
	if lock && s.d.ForUpdate != "" {
		q += ` ` + s.d.ForUpdate
	}
	var r StreamRow
	err := ScanStream(x.QueryRow(q, key), &r)
	if s.d.IsNoRows(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read stream: %w", err)
	}
	return &r, nil
}

// GetStream implements store.Store.StreamGet from the stream's row.
func (s *Store) GetStream(ctx context.Context, params *store.StreamGetParams) (*store.Stream, error) {
	var r *StreamRow
	err := s.b.Read(ctx, func(x Executor) error {
		var err error
		r, err = s.LoadStream(x, params.Path, false)
		return err
	})
	if err != nil {
		return nil, s.errorf("get stream", err)
	}
	st, err := r.View(params.Now)
	if err != nil {
		return nil, err
	}
	return &st, nil
}

// Touched reports whether a read of st is an access that renews its TTL:
// a read by a client (not Herald's own, internal) of a stream with a
// sliding TTL.
func Touched(st *store.Stream, internal bool) bool { return !internal && st.TTL > 0 }

// TouchStreamSQL renews the sliding TTL of stream $1 to an access at $2
// (Unix ns), never moving it back.
const TouchStreamSQL = `UPDATE streams SET accessed_at = $2 WHERE id = $1 AND accessed_at < $2`

// TouchStream renews the sliding TTL of a stream read at now, when the
// read is an access (Touched).
func (s *Store) TouchStream(ctx context.Context, st *store.Stream, internal bool, now time.Time) error {
	if !Touched(st, internal) {
		return nil
	}
	return s.b.Read(ctx, func(x Executor) error {
		if _, err := x.Exec(TouchStreamSQL, st.ID, Nanos(now)); err != nil {
			return s.errorf("renew TTL", err)
		}
		return nil
	})
}

// ExpiredSQL is the condition of a stream's row that expired at $1 (Unix
// ns): at its absolute expiry, else a sliding TTL after its last access.
const ExpiredSQL = `CASE WHEN expires_at > 0 THEN expires_at <= $1
	WHEN ttl_seconds > 0 THEN CAST(accessed_at AS numeric) + CAST(ttl_seconds AS numeric) * 1000000000 <= $1
	ELSE false END`

// DeadlineSQL is when a stream's row expires (Unix ns): at its absolute
// expiry, else a sliding TTL after its last access; NULL when it never
// does. Both backends index it for the streams that can expire
// (streams_deadline, in their migrations, which must spell it exactly as
// here for the sweep's query to use the index).
const DeadlineSQL = `(CASE WHEN expires_at > 0 THEN CAST(expires_at AS numeric) WHEN ttl_seconds > 0 THEN CAST(accessed_at AS numeric) + CAST(ttl_seconds AS numeric) * 1000000000 END)`

// ExpiredStreamsSQL selects the paths of up to $2 live streams whose
// rows expired at $1 (Unix ns), earliest deadline first, through the
// index of the deadlines: it reads the expired streams, not every one.
const ExpiredStreamsSQL = `SELECT path FROM streams WHERE NOT soft_deleted AND (expires_at > 0 OR ttl_seconds > 0)
	AND ` + DeadlineSQL + ` <= $1 ORDER BY ` + DeadlineSQL + ` LIMIT $2`

// expiredQuery is ExpiredStreamsSQL for up to limit (1000 when 0)
// streams expired at now.
func expiredQuery(now time.Time, limit int) *query {
	if limit <= 0 {
		limit = 1000
	}
	return &query{sql: ExpiredStreamsSQL, args: []any{Nanos(now), limit}}
}

func scanPath(r Row) (string, error) {
	var p string
	return p, r.Scan(&p)
}

// ExpiredPaths returns the paths of up to limit (1000 when 0) live
// streams whose rows expired at now (ExpiredStreamsSQL). A row may lag
// what a backend holds in memory (a renewal not written yet): the caller
// deletes each through ExpireStream, which checks it again.
func ExpiredPaths(x Executor, now time.Time, limit int) ([]string, error) {
	return collect(x, expiredQuery(now, limit), scanPath)
}

// ExpiredStreams returns ExpiredPaths read on the backend's read.
func (s *Store) ExpiredStreams(ctx context.Context, now time.Time, limit int) ([]string, error) {
	return list(ctx, s, expiredQuery(now, limit), "find expired streams", scanPath)
}

// WriteStreams runs fn in a durable write with the backend's state of
// the streams in it (state), for a backend that writes a stream's rows in
// the write's own transaction; a RuleError comes back as the contract's
// error it carries.
func WriteStreams[S any, T StreamState[S]](ctx context.Context, s *Store, state func(Tx) T, fn func(T) error) error {
	return s.write(ctx, Durable, func(tx Tx) error { return fn(state(tx)) })
}

// ExpireStreams implements store.Store.StreamDeleteExpired for a backend
// whose streams are rows: it selects them (ExpiredStreams), then deletes
// each in a write of its own (ExpireStream checks again that it expired).
func ExpireStreams[S any, T StreamState[S]](ctx context.Context, s *Store, params *store.StreamDeleteExpiredParams, state func(Tx) T) (int, error) {
	paths, err := s.ExpiredStreams(ctx, params.Now, params.Limit)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, p := range paths {
		var deleted bool
		err := WriteStreams(ctx, s, state, func(t T) error {
			var err error
			deleted, err = ExpireStream(t, p, params.Now)
			return err
		})
		if err != nil {
			return n, s.errorf("delete expired stream", err)
		}
		if deleted {
			n++
		}
	}
	return n, nil
}
