package sqlite

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/heraldstreams/herald/store"
	"github.com/heraldstreams/herald/store/sqlstore"
	"github.com/heraldstreams/herald/streamrules"
	"go.opentelemetry.io/otel/trace"
)

// op is one write submitted to the committer. apply runs inside the batch
// transaction: a rule violation is kept in the op (its own error, the batch
// goes on); a returned error is a database failure that aborts the batch.
// finish is called once, after the batch committed or failed.
type op interface {
	apply(b *batch) error
	finish(err error)
}

// batch is the state of one group-commit transaction. Entries changed in it
// live in the overlay until the commit succeeds, then replace the published
// ones; on failure the overlay is dropped and nothing is published.
type batch struct {
	s        *Store
	ctx      context.Context
	overlay  map[string]*entry // by path; nil value: removed in this batch
	overID   map[int64]*entry
	removed  map[int64]bool
	dirty    map[int64]*entry // stream rows to write before commit
	prod     map[prodKey]streamrules.ProducerState
	recent   []*recentChunk // small chunks written, for the recent cache
	changes  []store.TailChange
	afterRun []func() // run after a successful commit
	onAbort  []func() // run when the batch fails: nothing in it was stored
	tx       *batchTx // the core's executor of the batch (see txOf)
	// streams is the core's state of the streams in the batch, one for
	// all its ops (see streamsFor).
	streams batchStreams
	// reserved is the change sequence reservation the batch wrote, 0
	// when none (see changes.go).
	reserved int64
	// reclaim: the batch removed streams, whose segments may now hold
	// no live byte (see reclaimSegments).
	reclaim bool
	// pend is the chunk whose row is not written yet (see pendingChunk).
	pend pendingChunk
	// unlogged: the batch changed a stream in a way its segment record
	// does not hold (a creation, a removal), which only a synced commit
	// makes durable (see syncFor).
	unlogged bool
}

type prodKey struct {
	stream int64
	id     string
}

func (s *Store) newBatch() *batch {
	b := &batch{
		s:       s,
		ctx:     context.Background(),
		overlay: make(map[string]*entry),
		overID:  make(map[int64]*entry),
		removed: make(map[int64]bool),
		dirty:   make(map[int64]*entry),
		prod:    make(map[prodKey]streamrules.ProducerState),
	}
	b.streams.b = b
	return b
}

// streamsFor returns the batch's state of the streams for an op whose
// changes carry the trace sc (ops apply one at a time).
func (b *batch) streamsFor(sc trace.SpanContext) *batchStreams {
	b.streams.trace = sc
	return &b.streams
}

// get returns the stream at path as of this batch, or nil: the overlay,
// else the cache, else its committed row.
func (b *batch) get(path string) (*entry, error) {
	if e, ok := b.overlay[path]; ok {
		return e, nil
	}
	if e := b.s.cache.get(path); e != nil {
		return e, nil
	}
	return b.load(sqlstore.StreamByPathSQL, path)
}

// getID is get by the stream's id.
func (b *batch) getID(id int64) (*entry, error) {
	if b.removed[id] {
		return nil, nil
	}
	if e, ok := b.overID[id]; ok {
		return e, nil
	}
	if e := b.s.cache.getID(id); e != nil {
		return e, nil
	}
	return b.load(sqlstore.StreamByIDSQL, id)
}

// put records a changed or new entry and schedules its row write.
func (b *batch) put(e *entry, writeRow bool) {
	b.overlay[e.path] = e
	b.overID[e.id] = e
	if writeRow {
		b.dirty[e.id] = e
	}
}

func (b *batch) remove(e *entry) {
	b.overlay[e.path] = nil
	delete(b.overID, e.id)
	delete(b.dirty, e.id)
	b.removed[e.id] = true
}

// producer returns the stream's record of a producer as of this batch.
func (b *batch) producer(e *entry, id string) (streamrules.ProducerState, bool, error) {
	k := prodKey{e.id, id}
	if p, ok := b.prod[k]; ok {
		return p, true, nil
	}
	if p, ok := b.s.producers[e.id][id]; ok {
		return p, true, nil
	}
	var p streamrules.ProducerState
	err := b.s.stmts.getProducer.QueryRowContext(b.ctx, e.id, id).Scan(&p.Epoch, &p.LastSeq)
	if isNoRows(err) {
		return p, false, nil
	}
	if err != nil {
		return p, false, fmt.Errorf("read producer: %w", err)
	}
	b.s.cacheProducer(e.id, id, p) // the database already holds it: safe to cache now
	return p, true, nil
}

func (b *batch) setProducer(e *entry, id string, p streamrules.ProducerState) error {
	b.prod[prodKey{e.id, id}] = p
	_, err := b.s.stmts.upsertProducer.ExecContext(b.ctx, e.id, id, p.Epoch, p.LastSeq)
	return err
}

// cacheProducer records committed producer state; committer only. The
// cache holds the producers of at most as many streams as the stream
// cache: past that, the streams that go are the first the map's
// iteration yields (random), whose producers are read again when used.
func (s *Store) cacheProducer(stream int64, id string, p streamrules.ProducerState) {
	m := s.producers[stream]
	if m == nil {
		if len(s.producers) >= s.cache.max {
			for k := range s.producers {
				delete(s.producers, k)
				if len(s.producers) < s.cache.max-s.cache.max/16 {
					break
				}
			}
		}
		m = make(map[string]streamrules.ProducerState, 1)
		s.producers[stream] = m
	}
	m[id] = p
}

// invalidate tells the Notifier's invalidation feeds, once the batch
// commits, that a cached item changed.
func (b *batch) invalidate(kind store.CacheKind, id string) {
	b.afterRun = append(b.afterRun, func() { b.s.hub.Invalidate(store.Invalidation{Kind: kind, ID: id}) })
}

// flush writes the dirty stream rows, with the current change sequence
// number (see changes.go). The last flush of a batch (final) writes the
// number only into the rows that do not hold it yet, and records it in
// their entries; an earlier one (a walk over the rows in the batch)
// writes it into every row and records nothing, since the savepoint of
// the op it runs in may be rolled back.
func (b *batch) flush(final bool) error {
	seqSet := false
	for _, e := range b.dirty {
		stmt := b.s.stmts.updateKeepSeq
		if !final || e.changedSeq != b.s.seq {
			if !seqSet {
				if err := b.setChangeSeq(); err != nil {
					return err
				}
				seqSet = true
			}
			stmt = b.s.stmts.updateStream
			if final {
				e.changedSeq = b.s.seq
			}
		}
		cbID, cbEpoch, cbSeq := sqlstore.ClosedByArgs(e.closedBy())
		if _, err := stmt.ExecContext(b.ctx, e.tail, e.closed, cbID, cbEpoch, cbSeq,
			e.accessedAt, e.lastSeq, e.softDeleted, e.id); err != nil {
			return fmt.Errorf("update stream: %w", err)
		}
	}
	return nil
}

// publish installs the overlay in the cache after a successful commit.
func (b *batch) publish() {
	s := b.s
	s.cache.publish(b.overlay, b.removed)
	if b.reserved > s.reserved {
		s.reserved = b.reserved
	}
	s.recent.put(b.recent)
	for id := range b.removed {
		delete(s.producers, id)
		s.recent.drop(id)
	}
	for k, p := range b.prod {
		if !b.removed[k.stream] {
			s.cacheProducer(k.stream, k.id, p)
		}
	}
	for _, fn := range b.afterRun {
		fn()
	}
	if len(b.changes) > 0 {
		s.hub.Publish(b.changes...)
	}
}

// commitLoop is the single writer: it takes the first waiting op, gathers
// every op already queued behind it (up to MaxBatch) and commits them in one
// transaction, so concurrent appends share one fsync.
func (s *Store) commitLoop() {
	defer s.wg.Done()
	ops := make([]op, 0, s.cfg.MaxBatch)
	linger := time.NewTimer(time.Hour)
	linger.Stop()
	var lastRelaxed time.Time
	for {
		select {
		case o := <-s.ops:
			ops = s.gather(append(ops[:0], o))
			if relaxedOnly(ops) {
				ops = s.linger(ops, lastRelaxed, linger)
				if relaxedOnly(ops) {
					lastRelaxed = time.Now()
				}
			}
			s.runBatch(ops)
			s.afterBatch()
		case <-s.stop:
			// Finish everything submitted before Close.
			for {
				select {
				case o := <-s.ops:
					ops = s.gather(append(ops[:0], o))
					s.runBatch(ops)
				default:
					s.runBatch([]op{&touchOp{}})
					return
				}
			}
		}
	}
}

// logger is implemented by ops whose every change of the stream store is
// held by the batch's segment record (see segrecord.go): when the
// database loses the commit of their batch, the next open writes them
// again from the record.
type logger interface {
	loggedOK() bool
}

// loggedOnly reports whether the batch's commit needs no sync of the
// database: every op is relaxed, or logged in the segment, whose
// fdatasync makes it durable.
func loggedOnly(ops []op) bool {
	return !slices.ContainsFunc(ops, func(o op) bool { return !logged(o) && !relaxed(o) })
}

// relaxedOnly reports whether no op of the batch needs fsync.
func relaxedOnly(ops []op) bool {
	return !slices.ContainsFunc(ops, func(o op) bool { return !relaxed(o) })
}

func logged(o op) bool {
	l, ok := o.(logger)
	return ok && l.loggedOK()
}

func relaxed(o op) bool {
	r, ok := o.(relaxer)
	return ok && r.relaxedOK()
}

// linger holds a batch of relaxed writes until RelaxedInterval has passed
// since the last one was committed, gathering what comes meanwhile: a
// busy delivery engine then commits its bookkeeping a few hundred times a
// second, not after every send, and each page it changes is written to
// the WAL once per commit instead of once per write. A durable write ends
// the wait at once (the batch commits with it).
func (s *Store) linger(ops []op, last time.Time, t *time.Timer) []op {
	wait := time.Until(last.Add(s.cfg.RelaxedInterval))
	if wait <= 0 {
		return ops
	}
	t.Reset(wait)
	defer t.Stop()
	for len(ops) < s.cfg.MaxBatch {
		select {
		case o := <-s.ops:
			ops = append(ops, o)
			if r, ok := o.(relaxer); !ok || !r.relaxedOK() {
				return s.gather(ops)
			}
		case <-t.C:
			return s.gather(ops)
		case <-s.stop:
			return ops
		}
	}
	return ops
}

func (s *Store) gather(ops []op) []op {
	for len(ops) < s.cfg.MaxBatch {
		select {
		case o := <-s.ops:
			ops = append(ops, o)
		default:
			return ops
		}
	}
	return ops
}

func (s *Store) runBatch(ops []op) {
	b := s.newBatch()
	start := time.Now()
	err := s.syncFor(b.ctx, ops)
	var commit time.Duration
	if err == nil {
		commit, err = s.execBatch(b, ops)
	}
	if err != nil {
		err = fmt.Errorf("sqlite: commit: %w", err)
		s.log.Error("write batch failed; nothing in it was stored", "ops", len(ops), "err", err)
		for _, fn := range b.onAbort {
			fn()
		}
		// Producer records read during the failed batch may be cached on
		// entries; they came from committed rows, so they stay valid.
		for _, o := range ops {
			o.finish(err)
		}
		return
	}
	s.metrics.Observe(len(ops), time.Since(start), commit, s.syncFull)
	b.publish()
	for _, o := range ops {
		o.finish(nil)
	}
}

// syncFor sets whether the batch's commit waits for fsync: it does unless
// every op is relaxed (see writeRelaxed) or logged in the segment (an
// append, see logger). A batch of appends so has one durability point,
// its segment's fdatasync, and the WAL is synced by the next batch that
// needs it, or by a checkpoint (the WAL is written in order, so a sync
// makes every commit before it durable too).
func (s *Store) syncFor(ctx context.Context, ops []op) error {
	full := !loggedOnly(ops)
	if full == s.syncFull {
		return nil
	}
	mode := "NORMAL"
	if full {
		mode = "FULL"
	}
	if _, err := s.wconn.ExecContext(ctx, `PRAGMA synchronous = `+mode); err != nil {
		return fmt.Errorf("set synchronous: %w", err)
	}
	s.syncFull = full
	return nil
}

// execBatch runs the batch's ops in one transaction. The bytes they
// appended are made durable in their segment before the transaction that
// indexes them and publishes the new tails commits (see segLog).
func (s *Store) execBatch(b *batch, ops []op) (time.Duration, error) {
	if err := s.seg.begin(!s.syncFull); err != nil {
		return 0, err
	}
	d, err := execTxTimed(b.ctx, s.wconn, func() error {
		for _, o := range ops {
			if _, ok := o.(*appendOp); !ok {
				if err := b.flushChunk(); err != nil {
					return err
				}
			}
			if err := o.apply(b); err != nil {
				return err
			}
		}
		if err := b.flushChunk(); err != nil {
			return err
		}
		if err := b.flush(true); err != nil {
			return err
		}
		if b.reclaim {
			if err := b.reclaimSegments(); err != nil {
				return err
			}
		}
		if b.unlogged && !s.syncFull {
			return errors.New("a change the segment record does not hold, in a batch committed without a sync")
		}
		return s.seg.sync(b.ctx, s.stmts.upsertSegment)
	})
	s.seg.done(err == nil)
	return d, err
}

// submit hands an op to the committer and waits for it. An op that was
// handed over runs even if ctx ends first.
func (s *Store) submit(ctx context.Context, o op, done <-chan struct{}) error {
	s.closeMu.RLock()
	if s.closed {
		s.closeMu.RUnlock()
		return store.ErrClosedStore
	}
	select {
	case s.ops <- o:
		s.closeMu.RUnlock()
	case <-ctx.Done():
		s.closeMu.RUnlock()
		return ctx.Err()
	}
	// Once queued, the op runs: Close finishes every op submitted before
	// it. Wait for it even when ctx ends, since an op's function writes
	// the caller's variables (a claim's result), which the caller must
	// not read while the committer still may. A commit takes
	// milliseconds, so a cancelled caller is not held long.
	<-done
	return nil
}

// touchLoop periodically writes read-driven TTL renewals.
func (s *Store) touchLoop() {
	defer s.wg.Done()
	t := time.NewTicker(s.cfg.TouchFlushInterval)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
			s.touchMu.Lock()
			n := len(s.touches)
			s.touchMu.Unlock()
			if n == 0 {
				continue
			}
			o := &touchOp{done: make(chan struct{})}
			if err := s.submit(context.Background(), o, o.done); err != nil && !errors.Is(err, store.ErrClosedStore) {
				s.log.Warn("writing TTL renewals failed", "err", err)
			}
		}
	}
}

// touchOp writes pending read-driven access times.
type touchOp struct {
	done    chan struct{}
	written map[int64]int64
}

func (o *touchOp) apply(b *batch) error {
	s := b.s
	s.touchMu.Lock()
	o.written = make(map[int64]int64, len(s.touches))
	for id, t := range s.touches {
		o.written[id] = t
	}
	s.touchMu.Unlock()
	for id, t := range o.written {
		e, err := b.getID(id)
		if err != nil {
			return err
		}
		if e == nil || t <= e.accessedAt {
			continue
		}
		ne := e.clone()
		ne.accessedAt = t
		b.put(ne, true)
	}
	b.afterRun = append(b.afterRun, func() {
		// Forget renewals now in the cache, unless a newer one came in.
		s.touchMu.Lock()
		for id, t := range o.written {
			if s.touches[id] == t {
				delete(s.touches, id)
			}
		}
		s.touchMu.Unlock()
	})
	return nil
}

func (o *touchOp) finish(error) {
	if o.done != nil {
		close(o.done)
	}
}
