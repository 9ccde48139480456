package streamrules

import (
	"errors"
	"fmt"
)

// The errors of requests that break an append or fork rule. Package store
// names them as its own sentinel errors (store.ErrSeqRegression is
// ErrSeqRegression), so callers of a store branch on them with errors.Is
// or errors.As whichever package they name.
var (
	// ErrContentTypeMismatch: the request's content type is not the
	// stream's.
	ErrContentTypeMismatch = errors.New("store: content type does not match the stream")
	// ErrSeqRegression: Stream-Seq is not greater than the last one.
	ErrSeqRegression = errors.New("store: sequence conflict: Stream-Seq is not greater than the last one")
	// ErrProducerEpochSeq: a new producer epoch must start at seq 0.
	ErrProducerEpochSeq = errors.New("store: a new producer epoch must start at seq 0")
	// ErrForkOffsetBeyondTail: the fork offset is past the source's tail.
	ErrForkOffsetBeyondTail = errors.New("store: fork offset is beyond the source's tail")
	// ErrForkSubOffset: the sub-offset names a position past the next
	// data boundary.
	ErrForkSubOffset = errors.New("store: fork sub-offset is past the next data boundary")
)

// ClosedError is returned when appending to a closed stream. Tail is the
// stream's final position (the rules leave it 0; the store that knows the
// tail fills it in).
type ClosedError struct {
	Tail int64
}

func (e *ClosedError) Error() string {
	return fmt.Sprintf("store: stream is closed at position %d", e.Tail)
}

// ProducerEpochStaleError is returned when a producer's epoch is older than
// the stream's record of it (zombie fencing).
type ProducerEpochStaleError struct {
	Current int64
}

func (e *ProducerEpochStaleError) Error() string {
	return fmt.Sprintf("store: producer epoch is stale, current epoch is %d", e.Current)
}

// ProducerSeqGapError is returned when a producer skips a sequence number.
type ProducerSeqGapError struct {
	Expected, Received int64
}

func (e *ProducerSeqGapError) Error() string {
	return fmt.Sprintf("store: sequence conflict: producer sequence gap: expected %d, received %d", e.Expected, e.Received)
}
