package sqlite

import (
	"context"
	"errors"
	"fmt"

	"go.opentelemetry.io/otel/trace"

	"github.com/heraldstreams/herald/store"
	"github.com/heraldstreams/herald/store/sqlstore"
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
	o, _ := s.appendOps.Get().(*appendOp)
	if o == nil {
		o = &appendOp{done: make(chan struct{}, 1)}
	}
	o.p, o.trace = params, trace.SpanContextFromContext(ctx)
	err := s.submit(ctx, o, o.done)
	res, opErr := o.res, o.err
	// submit returned: the committer is done with the op (or never had
	// it), so it serves the next append.
	*o = appendOp{done: o.done}
	s.appendOps.Put(o)
	if err != nil {
		return nil, err
	}
	return res, opErr
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

// split tells a write's error from the core apart: a broken rule is the
// op's own (kept in it; the batch goes on), any other error a database
// failure that aborts the batch.
func split(err error) (rule, failure error) {
	var r *sqlstore.RuleError
	if errors.As(err, &r) {
		return r.Err, nil
	}
	return nil, err
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
	res, err := sqlstore.CreateStream(b.streamsFor(o.trace), o.p)
	if err != nil {
		o.err, err = split(err)
		return err
	}
	o.res = res
	return nil
}

// insertChunk appends data to e's bytes and returns where in the
// segment it lies. Its chunk row is written later (see pendingChunk).
func (b *batch) insertChunk(e *entry, data []byte) (int64, error) {
	start := e.tail
	end := start + int64(len(data))
	seg, off, err := b.s.seg.add(data)
	if err != nil {
		return 0, err
	}
	if p := &b.pend; p.stream == e.id && p.end == start && p.seg == seg && p.off+(p.end-p.start) == off {
		p.end = end
	} else {
		if err := b.flushChunk(); err != nil {
			return 0, err
		}
		b.pend = pendingChunk{stream: e.id, start: start, end: end, seg: seg, off: off}
	}
	e.tail = end
	if len(data) <= maxRecentChunk {
		// A copy of exactly its size: data may sit in a larger buffer
		// (the request body's), which the cache must not pin.
		b.recent = append(b.recent, &recentChunk{stream: e.id, start: start, end: end, data: append([]byte(nil), data...)})
	}
	return off, nil
}

// pendingChunk is the batch's last chunk, whose row is not written yet:
// appends to one stream that follow one another in a batch lie
// contiguous in its segment, and take one chunk row between them rather
// than a row (an insert) each. The row is written when an append to
// another stream comes, before any other op (which may read the chunks,
// or roll back to its savepoint), and when the batch flushes.
type pendingChunk struct{ stream, start, end, seg, off int64 }

// flushChunk writes the pending chunk's row.
func (b *batch) flushChunk() error {
	p := b.pend
	if p.stream == 0 {
		return nil
	}
	b.pend = pendingChunk{}
	if _, err := b.s.stmts.insertChunk.ExecContext(b.ctx, p.stream, p.start, p.end, p.seg, p.off); err != nil {
		return fmt.Errorf("insert chunk: %w", err)
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
	o.done <- struct{}{}
}

// loggedOK: an append's changes are all in its batch's segment record.
func (o *appendOp) loggedOK() bool { return true }

// apply appends through the core on the batch's state of the streams,
// which the batch holds: the append allocates nothing for it.
func (o *appendOp) apply(b *batch) error {
	res, err := sqlstore.AppendStream(b.streamsFor(o.trace), o.p)
	if err != nil {
		o.err, err = split(err)
		return err
	}
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
	err := sqlstore.DeleteStreamAt(b.streamsFor(trace.SpanContext{}), o.p.Path, o.p.Now)
	o.err, err = split(err)
	return err
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

// apply selects the streams whose rows expired through the index of
// their deadlines, and deletes them through the core, which checks each
// again as of the batch (with the renewals not written yet, and this
// batch's changes).
func (o *expireOp) apply(b *batch) error {
	expired, err := sqlstore.ExpiredPaths(txOf(b), o.p.Now, o.p.Limit)
	if err != nil {
		return fmt.Errorf("find expired streams: %w", err)
	}
	t := b.streamsFor(trace.SpanContext{})
	for _, path := range expired {
		deleted, err := sqlstore.ExpireStream(t, path, o.p.Now)
		if err != nil {
			return err
		}
		if deleted {
			o.n++
		}
	}
	return nil
}
