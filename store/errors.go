package store

import (
	"errors"
	"fmt"
)

// Sentinel errors of the storage contract. Callers branch with errors.Is or
// errors.As; httpapi maps each to one HTTP status and JSON code.
var (
	// ErrNotFound: no live stream at the path (never created, deleted, or
	// expired).
	ErrNotFound = errors.New("store: stream not found")
	// ErrStreamGone: the stream is soft-deleted (forks still read it).
	ErrStreamGone = errors.New("store: stream is soft-deleted")
	// ErrStreamExists: a stream with another configuration is at the path.
	ErrStreamExists = errors.New("store: stream exists with another configuration")
	// ErrContentTypeMismatch: the request's content type is not the stream's.
	ErrContentTypeMismatch = errors.New("store: content type does not match the stream")
	// ErrSeqRegression: Stream-Seq is not greater than the last one.
	ErrSeqRegression = errors.New("store: sequence conflict: Stream-Seq is not greater than the last one")
	// ErrProducerEpochSeq: a new producer epoch must start at seq 0.
	ErrProducerEpochSeq = errors.New("store: a new producer epoch must start at seq 0")
	// ErrForkSourceGone: the fork source is soft-deleted.
	ErrForkSourceGone = errors.New("store: fork source is soft-deleted")
	// ErrForkOffsetBeyondTail: the fork offset is past the source's tail.
	ErrForkOffsetBeyondTail = errors.New("store: fork offset is beyond the source's tail")
	// ErrForkSubOffset: the sub-offset names a position past the next data
	// boundary.
	ErrForkSubOffset = errors.New("store: fork sub-offset is past the next data boundary")
	// ErrPositionBeyondTail: a read starts past the tail.
	ErrPositionBeyondTail = errors.New("store: position is beyond the tail")
	// ErrClosedStore: the store was closed.
	ErrClosedStore = errors.New("store: closed")
)

// ClosedError is returned when appending to a closed stream. Tail is the
// stream's final position.
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
