package sqlite

import (
	"fmt"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/heraldstreams/herald/store"
	"github.com/heraldstreams/herald/store/sqlstore"
	"github.com/heraldstreams/herald/streamrules"
)

// batchStreams is the core's state of the streams (sqlstore.StreamState)
// in the committer's batch: the cache entries as of the batch (its
// overlay over the published cache), changed by cloning them into the
// overlay; their rows are written once per batch (batch.flush) and the
// changes announced once it commits (batch.publish).
type batchStreams struct {
	b *batch
	// trace is the request's that made the change: the change carries it
	// to the listeners that follow it.
	trace trace.SpanContext
}

var _ sqlstore.StreamState[*entry] = (*batchStreams)(nil)

func (t *batchStreams) Load(path string) (*entry, bool, error) {
	e, err := t.b.get(path)
	return e, e != nil, err
}

func (t *batchStreams) View(e *entry, now time.Time) (store.Stream, error) { return t.b.s.view(e, now) }

func (t *batchStreams) ClosedBy(e *entry) *store.Producer { return e.closedBy() }

func (t *batchStreams) Producer(e *entry, id string) (streamrules.ProducerState, bool, error) {
	return t.b.producer(e, id)
}

func (t *batchStreams) ChunkRest(e *entry, pos int64) ([]byte, error) {
	chunk, start, err := t.b.chunkAt(e, pos)
	if err != nil || chunk == nil {
		return nil, err
	}
	return chunk[pos-start:], nil
}

func (t *batchStreams) Insert(st store.Stream, src *entry, data []byte) (store.Stream, error) {
	b := t.b
	e := &entry{
		path:        ownPath(st.Path),
		contentType: internContentType(st.ContentType),
		tail:        st.Tail,
		ttl:         st.TTL,
		accessedAt:  sqlstore.Nanos(st.AccessedAt),
		createdAt:   sqlstore.Nanos(st.CreatedAt),
		closed:      st.Closed,
	}
	if !st.ExpiresAt.IsZero() || src != nil {
		e.setRare(func(r *entryRare) {
			r.expiresAt = st.ExpiresAt
			if src != nil {
				r.sourceID, r.forkSource = src.id, src.path
				r.forkOffset, r.forkSubOffset, r.forkPosition = st.ForkOffset, st.ForkSubOffset, st.ForkPosition
			}
		})
	}
	res, err := b.s.stmts.insertStream.ExecContext(b.ctx, e.path, e.contentType, e.tail, e.closed,
		int64(e.ttl.Seconds()), sqlstore.Nanos(st.ExpiresAt), e.accessedAt, e.createdAt,
		nullID(e.sourceID()), st.ForkSource, st.ForkPosition, st.ForkOffset, st.ForkSubOffset)
	if err != nil {
		return st, fmt.Errorf("insert stream: %w", err)
	}
	if e.id, err = res.LastInsertId(); err != nil {
		return st, fmt.Errorf("insert stream: %w", err)
	}
	if len(data) > 0 {
		if _, err := b.insertChunk(e, data); err != nil {
			return st, err
		}
	}
	b.unlogged = true
	b.put(e, true)
	b.changes = append(b.changes, store.TailChange{StreamID: e.id, Path: e.path, Tail: e.tail, Closed: e.closed, Created: true, Trace: t.trace})
	return e.stream(), nil
}

// Apply changes a clone of e, which replaces it in the overlay; its row
// is written when the batch flushes.
func (t *batchStreams) Apply(e *entry, c sqlstore.StreamChange) (store.Stream, error) {
	b := t.b
	ne := e.clone()
	le := segEntry{stream: e.id, start: e.tail}
	if c.Decision.Write {
		off, err := b.insertChunk(ne, c.Data)
		if err != nil {
			return store.Stream{}, err
		}
		le.n, le.off = int64(len(c.Data)), off
	}
	if c.Decision.Close {
		ne.closed = true
		if c.Producer != nil {
			pr := *c.Producer
			ne.setRare(func(r *entryRare) { r.closedBy = &pr })
		}
	}
	if c.Seq != "" {
		ne.lastSeq = c.Seq
	}
	ne.accessedAt = sqlstore.Nanos(c.Now)
	if d := c.Decision; d.ProducerChanged {
		if err := b.setProducer(ne, c.Producer.ID, *d.Producer); err != nil {
			return store.Stream{}, fmt.Errorf("write producer: %w", err)
		}
		le.producerID, le.producer = c.Producer.ID, *d.Producer
	}
	// The record of the batch holds the change too: its segment's sync
	// makes it durable when the transaction commits without one.
	le.accessedAt, le.closed, le.closedBy, le.lastSeq = ne.accessedAt, c.Decision.Close, ne.closedBy(), c.Seq
	if err := b.s.seg.note(&le); err != nil {
		return store.Stream{}, err
	}
	b.put(ne, true)
	b.changes = append(b.changes, store.TailChange{StreamID: ne.id, Path: ne.path, Tail: ne.tail, Closed: ne.closed, Trace: t.trace})
	return ne.stream(), nil
}

func (t *batchStreams) Forks(e *entry) (int, error) {
	var forks int
	err := t.b.s.stmts.countForks.QueryRowContext(t.b.ctx, e.id).Scan(&forks)
	return forks, err
}

func (t *batchStreams) SoftDeleted(e *entry) bool { return e.softDeleted }

// SoftDelete marks a clone of e; the batch writes its row.
func (t *batchStreams) SoftDelete(e *entry) error {
	t.b.unlogged = true
	ne := e.clone()
	ne.softDeleted = true
	t.b.put(ne, true)
	t.b.changes = append(t.b.changes, store.TailChange{StreamID: e.id, Path: e.path, Tail: e.tail, Closed: e.closed, Deleted: true})
	return nil
}

func (t *batchStreams) Remove(e *entry) error {
	t.b.unlogged = true
	if err := t.b.flushChunk(); err != nil {
		return err
	}
	if _, err := t.b.s.stmts.dropLive.ExecContext(t.b.ctx, e.id); err != nil {
		return fmt.Errorf("free segment bytes: %w", err)
	}
	t.b.reclaim = true
	for _, stmt := range []string{"deleteChunks", "deleteProducers", "deleteStream"} {
		if _, err := t.b.s.stmts.byName(stmt).ExecContext(t.b.ctx, e.id); err != nil {
			return fmt.Errorf("%s: %w", stmt, err)
		}
	}
	t.b.remove(e)
	if !e.softDeleted {
		t.b.changes = append(t.b.changes, store.TailChange{StreamID: e.id, Path: e.path, Tail: e.tail, Closed: e.closed, Deleted: true})
	}
	return nil
}

func (t *batchStreams) Source(e *entry) (*entry, bool, error) {
	src, err := t.b.getID(e.sourceID())
	return src, src != nil, err
}
