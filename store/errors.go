package store

import (
	"errors"

	"github.com/heraldstreams/herald/streamrules"
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
	ErrContentTypeMismatch = streamrules.ErrContentTypeMismatch
	// ErrSeqRegression: Stream-Seq is not greater than the last one.
	ErrSeqRegression = streamrules.ErrSeqRegression
	// ErrProducerEpochSeq: a new producer epoch must start at seq 0.
	ErrProducerEpochSeq = streamrules.ErrProducerEpochSeq
	// ErrForkSourceGone: the fork source is soft-deleted.
	ErrForkSourceGone = errors.New("store: fork source is soft-deleted")
	// ErrForkOffsetBeyondTail: the fork offset is past the source's tail.
	ErrForkOffsetBeyondTail = streamrules.ErrForkOffsetBeyondTail
	// ErrForkSubOffset: the sub-offset names a position past the next data
	// boundary.
	ErrForkSubOffset = streamrules.ErrForkSubOffset
	// ErrPositionBeyondTail: a read starts past the tail.
	ErrPositionBeyondTail = errors.New("store: position is beyond the tail")
	// ErrClosedStore: the store was closed.
	ErrClosedStore = errors.New("store: closed")
	// ErrUnavailable: the database cannot be reached (it is down,
	// restarting or unreachable). The call's transaction is written
	// whole or not at all (a connection lost during the commit leaves
	// which unknown), and the same call may succeed once the database is
	// back. A backend wraps the cause with it.
	ErrUnavailable = errors.New("store: the database cannot be reached")
)

// ClosedError is returned when appending to a closed stream. Tail is the
// stream's final position.
type ClosedError = streamrules.ClosedError

// ProducerEpochStaleError is returned when a producer's epoch is older than
// the stream's record of it (zombie fencing).
type ProducerEpochStaleError = streamrules.ProducerEpochStaleError

// ProducerSeqGapError is returned when a producer skips a sequence number.
type ProducerSeqGapError = streamrules.ProducerSeqGapError

// ForkSourceError turns the error of looking up a fork's source (as a
// client would see it) into the error of the fork request: a soft-deleted
// source is ErrForkSourceGone, a missing one stays ErrNotFound.
func ForkSourceError(err error) error {
	if errors.Is(err, ErrStreamGone) {
		return ErrForkSourceGone
	}
	return err
}
