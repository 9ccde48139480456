// Package streamrules decides what a stream write does: the append rules
// (closure, content type, idempotent producer epochs and sequences,
// Stream-Seq) and the create and fork rules of docs/protocol.md. It is
// pure: every store backend calls it inside the transaction that applies
// its decision, so every backend enforces the same rules, and it does no
// I/O of its own.
package streamrules

import "github.com/heraldstreams/herald/protocol"

// Outcome says what an append did.
type Outcome int

const (
	// Appended means the data was written (and the stream closed if asked).
	Appended Outcome = iota
	// Duplicate means an idempotent producer retried a request already
	// applied; nothing was written.
	Duplicate
	// Closed means a close-only request closed the stream, or found it
	// already closed.
	Closed
)

// ProducerState is what a stream remembers of one idempotent producer.
type ProducerState struct {
	Epoch   int64
	LastSeq int64
}

// AppendState is the part of a stream's state that decides an append.
type AppendState struct {
	ContentType string
	Closed      bool
	LastSeq     string
	// ClosedBy is the producer request that closed the stream, if one did.
	ClosedBy *protocol.Producer
	// Producer is the stream's record of the request's producer; nil when
	// the request has none or the producer is new to the stream.
	Producer *ProducerState
}

// AppendRequest is the part of an append request that the rules look at.
type AppendRequest struct {
	ContentType string // "" when the body is empty
	HasData     bool
	Close       bool
	Seq         string
	Producer    *protocol.Producer
}

// AppendDecision is what the rules decided.
type AppendDecision struct {
	Outcome Outcome
	// Write is true when data must be stored (Outcome Appended with data).
	Write bool
	// Close is true when the stream must be marked closed.
	Close bool
	// Producer is the producer's state after the request, nil when the
	// request has no producer. ProducerChanged says it must be stored.
	Producer        *ProducerState
	ProducerChanged bool
}

// DecideAppend applies the append rules of docs/protocol.md (Append,
// Idempotent producers) to one append: closure first, then content type,
// then producer epoch and sequence, then Stream-Seq.
func DecideAppend(st AppendState, req AppendRequest) (AppendDecision, error) {
	var d AppendDecision
	p := req.Producer

	// 1. Closed stream.
	if st.Closed {
		if p != nil {
			// Only the retry of the request that closed the stream
			// succeeds; any other producer request, close-only included,
			// is refused, so a producer never sees a sequence number
			// Herald did not accept (docs/protocol.md, Idempotent
			// producers).
			if st.ClosedBy != nil && *st.ClosedBy == *p {
				return AppendDecision{Outcome: Duplicate, Producer: &ProducerState{Epoch: p.Epoch, LastSeq: p.Seq}}, nil
			}
			return d, &ClosedError{}
		}
		if !req.HasData && req.Close {
			return AppendDecision{Outcome: Closed}, nil
		}
		return d, &ClosedError{}
	}

	// 2. Content type (only when there is a body), by media type.
	if req.HasData && !protocol.SameMediaType(req.ContentType, st.ContentType) {
		return d, ErrContentTypeMismatch
	}

	// 3. Idempotent producer.
	if p != nil {
		cur := st.Producer
		switch {
		case cur == nil:
			if p.Seq != 0 {
				if p.Epoch == 0 {
					return d, &ProducerSeqGapError{Expected: 0, Received: p.Seq}
				}
				return d, ErrProducerEpochSeq
			}
		case p.Epoch < cur.Epoch:
			return d, &ProducerEpochStaleError{Current: cur.Epoch}
		case p.Epoch > cur.Epoch:
			if p.Seq != 0 {
				return d, ErrProducerEpochSeq
			}
		case p.Seq <= cur.LastSeq:
			return AppendDecision{Outcome: Duplicate, Producer: &ProducerState{Epoch: cur.Epoch, LastSeq: cur.LastSeq}}, nil
		case p.Seq > cur.LastSeq+1:
			return d, &ProducerSeqGapError{Expected: cur.LastSeq + 1, Received: p.Seq}
		}
		d.Producer = &ProducerState{Epoch: p.Epoch, LastSeq: p.Seq}
		d.ProducerChanged = true
	}

	// 4. Stream-Seq must strictly increase (byte-wise).
	if req.Seq != "" && st.LastSeq != "" && req.Seq <= st.LastSeq {
		return AppendDecision{}, ErrSeqRegression
	}

	d.Write = req.HasData
	d.Close = req.Close
	if req.HasData {
		d.Outcome = Appended
	} else {
		d.Outcome = Closed
	}
	return d, nil
}
