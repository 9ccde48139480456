package sqlite

import (
	"context"
	"errors"
	"fmt"

	"go.opentelemetry.io/otel/trace"

	"github.com/heraldstreams/herald/store"
	"github.com/heraldstreams/herald/store/internal/codec"
	"github.com/heraldstreams/herald/store/sqlstore"
	"github.com/heraldstreams/herald/streamrules"
)

// StreamCreate implements store.Store.
func (s *Store) StreamCreate(ctx context.Context, params *store.StreamCreateParams) (*store.StreamCreateResult, error) {
	o := &createOp{p: params, done: make(chan struct{}), trace: trace.SpanContextFromContext(ctx)}
	if err := s.submit(ctx, o, o.done); err != nil {
		return nil, err
	}
	return o.res, o.err
}

// StreamAppend implements store.Store.
func (s *Store) StreamAppend(ctx context.Context, params *store.StreamAppendParams) (*store.StreamAppendResult, error) {
	o := &appendOp{p: params, done: make(chan struct{}), trace: trace.SpanContextFromContext(ctx)}
	if err := s.submit(ctx, o, o.done); err != nil {
		return nil, err
	}
	return o.res, o.err
}

// StreamDelete implements store.Store.
func (s *Store) StreamDelete(ctx context.Context, params *store.StreamDeleteParams) error {
	o := &deleteOp{p: params, done: make(chan struct{})}
	if err := s.submit(ctx, o, o.done); err != nil {
		return err
	}
	return o.err
}

// StreamDeleteExpired implements store.Store.
func (s *Store) StreamDeleteExpired(ctx context.Context, params *store.StreamDeleteExpiredParams) (int, error) {
	o := &expireOp{p: params, done: make(chan struct{})}
	if err := s.submit(ctx, o, o.done); err != nil {
		return 0, err
	}
	return o.n, o.err
}

type createOp struct {
	p     *store.StreamCreateParams
	done  chan struct{}
	trace trace.SpanContext // of the request that made the stream
	res   *store.StreamCreateResult
	err   error
}

func (o *createOp) finish(err error) {
	if err != nil {
		o.res, o.err = nil, err
	}
	close(o.done)
}

func (o *createOp) apply(b *batch) error {
	p := o.p
	if e := b.get(p.Path); e != nil {
		st, err := b.s.view(e, p.Now)
		switch {
		case errors.Is(err, store.ErrNotFound):
			// Expired: clear it away, then create afresh (unless forks
			// still hold it, which keeps the path taken).
			if err := b.deleteStream(e); err != nil {
				return err
			}
			if b.get(p.Path) != nil {
				o.err = store.ErrStreamGone
				return nil
			}
		case err != nil:
			o.err = err
			return nil
		default:
			if !streamrules.SameCreateConfig(st.Config(), p.Config()) {
				o.err = store.ErrStreamExists
				return nil
			}
			o.res = &store.StreamCreateResult{Stream: st}
			return nil
		}
	}

	e := &entry{
		path:        ownPath(p.Path),
		contentType: internContentType(p.ContentType),
		ttl:         p.TTL,
		accessedAt:  codec.Nanos(p.Now),
		createdAt:   codec.Nanos(p.Now),
		closed:      p.Closed,
	}
	if !p.ExpiresAt.IsZero() {
		e.setRare(func(r *entryRare) { r.expiresAt = p.ExpiresAt })
	}
	if p.ForkSource != "" {
		if err := b.resolveFork(e, p); err != nil {
			var rule ruleError
			if errors.As(err, &rule) {
				o.err = rule.err
				return nil
			}
			return err
		}
	}
	st := e.stream()
	res, err := b.s.stmts.insertStream.ExecContext(b.ctx, st.Path, st.ContentType, st.Tail, st.Closed,
		int64(st.TTL.Seconds()), codec.Nanos(st.ExpiresAt), e.accessedAt, e.createdAt,
		nullID(e.sourceID()), st.ForkSource, st.ForkPosition, st.ForkOffset, st.ForkSubOffset)
	if err != nil {
		return fmt.Errorf("insert stream: %w", err)
	}
	if e.id, err = res.LastInsertId(); err != nil {
		return fmt.Errorf("insert stream: %w", err)
	}
	if len(p.Data) > 0 {
		if err := b.insertChunk(e, p.Data); err != nil {
			return err
		}
	}
	b.put(e, true)
	b.changes = append(b.changes, store.TailChange{StreamID: e.id, Path: e.path, Tail: e.tail, Closed: e.closed, Created: true, Trace: o.trace})
	o.res = &store.StreamCreateResult{Stream: e.stream(), Created: true}
	return nil
}

// resolveFork fills e's fork fields from the source by the protocol's
// fork rules. A request that breaks a rule gets a ruleError; any other
// error is a database failure.
func (b *batch) resolveFork(e *entry, p *store.StreamCreateParams) error {
	src := b.get(p.ForkSource)
	srcStream, err := b.s.view(src, p.Now)
	if err != nil {
		return ruleError{store.ForkSourceError(err)}
	}
	var readErr error
	d, err := streamrules.DecideFork(srcStream.Config(), srcStream.Tail, p.Config(), func(anchor int64) ([]byte, error) {
		chunk, start, err := b.s.chunkAt(b.ctx, src, anchor)
		if err != nil {
			readErr = err
			return nil, err
		}
		return chunk[anchor-start:], nil
	})
	if readErr != nil {
		return readErr
	}
	if err != nil {
		return ruleError{err}
	}
	e.contentType = internContentType(d.ContentType)
	e.ttl = d.TTL
	e.setRare(func(r *entryRare) {
		r.expiresAt = d.ExpiresAt
		r.sourceID = src.id
		r.forkSource = src.path
		r.forkOffset = d.Anchor
		r.forkSubOffset = p.ForkSubOffset
		r.forkPosition = d.Position
	})
	e.tail = d.Position
	return nil
}

// ruleError carries a rule violation out of a helper so apply can tell it
// from a database failure.
type ruleError struct{ err error }

func (r ruleError) Error() string { return r.err.Error() }

func (b *batch) insertChunk(e *entry, data []byte) error {
	start := e.tail
	end := start + int64(len(data))
	if _, err := b.s.stmts.insertChunk.ExecContext(b.ctx, e.id, start, end, data); err != nil {
		return fmt.Errorf("insert chunk: %w", err)
	}
	e.tail = end
	if len(data) <= maxRecentChunk {
		// A copy of exactly its size: data may sit in a larger buffer
		// (the request body's), which the cache must not pin.
		b.recent = append(b.recent, &recentChunk{stream: e.id, start: start, end: end, data: append([]byte(nil), data...)})
	}
	return nil
}

type appendOp struct {
	p     *store.StreamAppendParams
	done  chan struct{}
	trace trace.SpanContext // of the request that appended
	res   *store.StreamAppendResult
	err   error
}

func (o *appendOp) finish(err error) {
	if err != nil {
		o.res, o.err = nil, err
	}
	close(o.done)
}

func (o *appendOp) apply(b *batch) error {
	p := o.p
	e := b.get(p.Path)
	if _, err := b.s.view(e, p.Now); err != nil {
		o.err = err
		return nil
	}
	var cur *streamrules.ProducerState
	if p.Producer != nil {
		ps, ok, err := b.producer(e, p.Producer.ID)
		if err != nil {
			return err
		}
		if ok {
			cur = &ps
		}
	}
	d, err := streamrules.DecideAppend(streamrules.AppendState{
		ContentType: e.contentType,
		Closed:      e.closed,
		LastSeq:     e.lastSeq,
		ClosedBy:    e.closedBy(),
		Producer:    cur,
	}, p.AppendRequest())
	if err != nil {
		var ce *store.ClosedError
		if errors.As(err, &ce) {
			err = &store.ClosedError{Tail: e.tail}
		}
		o.err = err
		return nil
	}
	res := &store.StreamAppendResult{Outcome: d.Outcome, Start: e.tail}
	if d.Producer != nil {
		res.ProducerEpoch, res.ProducerSeq = d.Producer.Epoch, d.Producer.LastSeq
	}
	if !d.Write && (!d.Close || e.closed) {
		// Duplicate, or closing a closed stream: nothing to write.
		res.Stream = e.stream()
		o.res = res
		return nil
	}
	ne := e.clone()
	if d.Write {
		if err := b.insertChunk(ne, p.Data); err != nil {
			return err
		}
	}
	if d.Close {
		ne.closed = true
		if p.Producer != nil {
			pr := *p.Producer
			ne.setRare(func(r *entryRare) { r.closedBy = &pr })
		}
	}
	if p.Seq != "" {
		ne.lastSeq = p.Seq
	}
	ne.accessedAt = codec.Nanos(p.Now)
	if d.ProducerChanged {
		if err := b.setProducer(ne, p.Producer.ID, *d.Producer); err != nil {
			return fmt.Errorf("write producer: %w", err)
		}
	}
	b.put(ne, true)
	b.changes = append(b.changes, store.TailChange{StreamID: ne.id, Path: ne.path, Tail: ne.tail, Closed: ne.closed, Trace: o.trace})
	res.Stream = ne.stream()
	o.res = res
	return nil
}

type deleteOp struct {
	p    *store.StreamDeleteParams
	done chan struct{}
	err  error
}

func (o *deleteOp) finish(err error) {
	if err != nil {
		o.err = err
	}
	close(o.done)
}

func (o *deleteOp) apply(b *batch) error {
	e := b.get(o.p.Path)
	if _, err := b.s.view(e, o.p.Now); err != nil {
		o.err = err
		return nil
	}
	return b.deleteStream(e)
}

// deleteStream deletes e by the rule of forks (sqlstore.DeleteStream),
// in the batch.
func (b *batch) deleteStream(e *entry) error {
	_, err := sqlstore.DeleteStream(batchDeleter{b}, e)
	return err
}

// batchDeleter deletes streams in a batch for sqlstore.DeleteStream.
type batchDeleter struct{ b *batch }

func (d batchDeleter) Forks(e *entry) (int, error) {
	var forks int
	err := d.b.s.stmts.countForks.QueryRowContext(d.b.ctx, e.id).Scan(&forks)
	return forks, err
}

func (d batchDeleter) SoftDeleted(e *entry) bool { return e.softDeleted }

func (d batchDeleter) SoftDelete(e *entry) error {
	ne := e.clone()
	ne.softDeleted = true
	d.b.put(ne, true)
	d.b.changes = append(d.b.changes, store.TailChange{StreamID: e.id, Path: e.path, Tail: e.tail, Closed: e.closed, Deleted: true})
	return nil
}

func (d batchDeleter) Remove(e *entry) error {
	for _, stmt := range []string{"deleteChunks", "deleteProducers", "deleteStream"} {
		if _, err := d.b.s.stmts.byName(stmt).ExecContext(d.b.ctx, e.id); err != nil {
			return fmt.Errorf("%s: %w", stmt, err)
		}
	}
	d.b.remove(e)
	if !e.softDeleted {
		d.b.changes = append(d.b.changes, store.TailChange{StreamID: e.id, Path: e.path, Tail: e.tail, Closed: e.closed, Deleted: true})
	}
	return nil
}

func (d batchDeleter) Source(e *entry) (*entry, bool, error) {
	src := d.b.getID(e.sourceID())
	return src, src != nil, nil
}

type expireOp struct {
	p    *store.StreamDeleteExpiredParams
	done chan struct{}
	n    int
	err  error
}

func (o *expireOp) finish(err error) {
	if err != nil {
		o.n, o.err = 0, err
	}
	close(o.done)
}

func (o *expireOp) apply(b *batch) error {
	var expired []*entry
	for _, e := range b.s.byPath {
		if e.softDeleted {
			continue
		}
		if b.s.expired(e, o.p.Now) {
			expired = append(expired, e)
			if o.p.Limit > 0 && len(expired) >= o.p.Limit {
				break
			}
		}
	}
	for _, e := range expired {
		if cur := b.get(e.path); cur == nil || cur.id != e.id || cur.softDeleted {
			continue
		}
		if err := b.deleteStream(b.get(e.path)); err != nil {
			return err
		}
		o.n++
	}
	return nil
}
