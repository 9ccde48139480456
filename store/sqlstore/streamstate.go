package sqlstore

import (
	"errors"
	"time"

	"github.com/heraldstreams/herald/store"
	"github.com/heraldstreams/herald/streamrules"
)

// The streams' writes, written once: create (and fork), append, delete,
// expire and publish decide here with package streamrules over a
// backend's StreamState. What a backend keeps is how it holds a stream
// in a write and how a change reaches its rows: SQLite's committer reads
// its cache and the batch's overlay and writes the rows once per batch;
// PostgreSQL reads the rows it locks and writes them at once.

// StreamState is how a backend holds its streams (S: SQLite's cache
// entry, PostgreSQL's row) in a write. A method returns an error only
// for a database failure; the rules' errors are the core's.
type StreamState[S any] interface {
	StreamDeleter[S]
	// Load returns the stream at path as this write sees it, locked for
	// the write where rows lock; ok is false when there is none.
	Load(path string) (s S, ok bool, err error)
	// View returns s as clients see it at now, or ViewError's error.
	View(s S, now time.Time) (store.Stream, error)
	// ClosedBy is the producer request that closed s, nil when none did.
	ClosedBy(s S) *store.Producer
	// Producer returns s's record of a producer, ok false when none.
	Producer(s S, id string) (p streamrules.ProducerState, ok bool, err error)
	// ChunkRest returns s's stored data from pos to the end of the chunk
	// that holds it (in a fork source when pos lies below the fork), nil
	// when no chunk holds pos.
	ChunkRest(s S, pos int64) ([]byte, error)
	// Insert stores the new stream st (forked from src when
	// st.ForkSource is set) with data at its tail, announces it, and
	// returns it as stored: its id given, its tail past data.
	Insert(st store.Stream, src S, data []byte) (store.Stream, error)
	// Apply writes an append's change to s, announces it, and returns
	// the stream changed.
	Apply(s S, c StreamChange) (store.Stream, error)
}

// StreamChange is what an append changes of a stream. It is passed by
// value: the append path allocates nothing for it.
type StreamChange struct {
	// Decision is the rules' decision: Write stores Data at the tail,
	// Close closes the stream, ProducerChanged stores the producer's
	// state (Decision.Producer).
	Decision streamrules.AppendDecision
	Data     []byte
	// Producer is the request's producer, nil when none: the closing
	// producer when Decision.Close.
	Producer *store.Producer
	// Seq is the request's Stream-Seq; "" keeps the stream's last one.
	Seq string
	// Now is the append's time, the stream's last access.
	Now time.Time
}

// load returns the stream at path and its view at now; err is a
// database failure or the rule error of a stream clients cannot see.
func load[S any, T StreamState[S]](t T, path string, now time.Time) (S, store.Stream, error) {
	s, ok, err := t.Load(path)
	if err != nil {
		return s, store.Stream{}, err
	}
	if !ok {
		return s, store.Stream{}, Rule(store.ErrNotFound)
	}
	st, err := t.View(s, now)
	if err != nil {
		return s, st, Rule(err)
	}
	return s, st, nil
}

// CreateStream creates a stream (store.Store.StreamCreate) in a write: a
// create with the same settings as the stream at its path returns that
// stream, an expired one is cleared away first, a fork takes its data
// and settings from its source by the fork rules. A broken rule is a
// RuleError.
func CreateStream[S any, T StreamState[S]](t T, p *store.StreamCreateParams) (*store.StreamCreateResult, error) {
	if cur, ok, err := t.Load(p.Path); err != nil {
		return nil, err
	} else if ok {
		st, err := t.View(cur, p.Now)
		switch {
		case errors.Is(err, store.ErrNotFound):
			// Expired: clear it away, then create afresh (unless forks
			// still hold it, which keeps the path taken).
			if gone, err := DeleteStream(t, cur); err != nil {
				return nil, err
			} else if !gone {
				return nil, Rule(store.ErrStreamGone)
			}
		case err != nil:
			return nil, Rule(err)
		case !streamrules.SameCreateConfig(st.Config(), p.Config()):
			return nil, Rule(store.ErrStreamExists)
		default:
			return &store.StreamCreateResult{Stream: st}, nil
		}
	}
	st := store.Stream{Path: p.Path, ContentType: p.ContentType, TTL: p.TTL, ExpiresAt: p.ExpiresAt,
		AccessedAt: p.Now, CreatedAt: p.Now, Closed: p.Closed}
	var src S
	if p.ForkSource != "" {
		var srcStream store.Stream
		var err error
		src, srcStream, err = load(t, p.ForkSource, p.Now)
		if err != nil {
			var r *RuleError
			if errors.As(err, &r) {
				return nil, Rule(store.ForkSourceError(r.Err))
			}
			return nil, err
		}
		var readErr error
		d, err := streamrules.DecideFork(srcStream.Config(), srcStream.Tail, p.Config(), func(anchor int64) ([]byte, error) {
			rest, err := t.ChunkRest(src, anchor)
			readErr = err
			return rest, err
		})
		if readErr != nil {
			return nil, readErr
		}
		if err != nil {
			return nil, Rule(err)
		}
		st.ContentType, st.TTL, st.ExpiresAt = d.ContentType, d.TTL, d.ExpiresAt
		st.ForkSource, st.ForkOffset, st.ForkSubOffset, st.ForkPosition = srcStream.Path, d.Anchor, p.ForkSubOffset, d.Position
		st.Tail = d.Position
	}
	st, err := t.Insert(st, src, p.Data)
	if err != nil {
		return nil, err
	}
	return &store.StreamCreateResult{Stream: st, Created: true}, nil
}

// AppendStream appends to a stream (store.Store.StreamAppend) in a
// write, by the append rules. A broken rule is a RuleError.
func AppendStream[S any, T StreamState[S]](t T, p *store.StreamAppendParams) (*store.StreamAppendResult, error) {
	s, st, err := load(t, p.Path, p.Now)
	if err != nil {
		return nil, err
	}
	var cur *streamrules.ProducerState
	if p.Producer != nil {
		ps, ok, err := t.Producer(s, p.Producer.ID)
		if err != nil {
			return nil, err
		}
		if ok {
			cur = &ps
		}
	}
	d, err := streamrules.DecideAppend(streamrules.AppendState{
		ContentType: st.ContentType,
		Closed:      st.Closed,
		LastSeq:     st.LastSeq,
		ClosedBy:    t.ClosedBy(s),
		Producer:    cur,
	}, p.AppendRequest())
	if err != nil {
		var ce *store.ClosedError
		if errors.As(err, &ce) {
			err = &store.ClosedError{Tail: st.Tail}
		}
		return nil, Rule(err)
	}
	res := &store.StreamAppendResult{Outcome: d.Outcome, Start: st.Tail}
	if d.Producer != nil {
		res.ProducerEpoch, res.ProducerSeq = d.Producer.Epoch, d.Producer.LastSeq
	}
	if !d.Write && (!d.Close || st.Closed) {
		// Duplicate, or closing a closed stream: nothing to write.
		res.Stream = st
		return res, nil
	}
	res.Stream, err = t.Apply(s, StreamChange{Decision: d, Data: p.Data, Producer: p.Producer, Seq: p.Seq, Now: p.Now})
	if err != nil {
		return nil, err
	}
	return res, nil
}

// DeleteStreamAt deletes the stream at path (store.Store.StreamDelete)
// in a write, by the rule of forks (DeleteStream). A stream clients
// cannot see is a RuleError.
func DeleteStreamAt[S any, T StreamState[S]](t T, path string, now time.Time) error {
	s, _, err := load(t, path, now)
	if err != nil {
		return err
	}
	_, err = DeleteStream(t, s)
	return err
}

// ExpireStream deletes the stream at path in a write when it expired at
// now (it may have been renewed, deleted or replaced since it was
// selected), and reports whether it did.
func ExpireStream[S any, T StreamState[S]](t T, path string, now time.Time) (bool, error) {
	s, ok, err := t.Load(path)
	if err != nil || !ok {
		return false, err
	}
	if _, err := t.View(s, now); !errors.Is(err, store.ErrNotFound) {
		return false, nil // live, or soft-deleted already
	}
	if _, err := DeleteStream(t, s); err != nil {
		return false, err
	}
	return true, nil
}

// PublishStream appends a published event (one JSON message) to its
// stream in a write, creating the stream (application/json) when there
// is none, and returns where the event starts (Backend.PublishAppend).
func PublishStream[S any, T StreamState[S]](t T, params *store.EventPublishParams) (int64, error) {
	if _, ok, err := t.Load(params.Stream); err != nil {
		return 0, err
	} else if !ok {
		c := &store.StreamCreateParams{Path: params.Stream, ContentType: "application/json", Now: params.Now}
		if _, err := CreateStream(t, c); err != nil {
			return 0, err
		}
	}
	a, err := AppendStream(t, &store.StreamAppendParams{Path: params.Stream, ContentType: "application/json",
		Data: params.Data, Messages: 1, Now: params.Now})
	if err != nil {
		return 0, err
	}
	return a.Start, nil
}
