package subscription

import (
	"fmt"
	"strings"
)

// OffsetStart is the offset sentinel for "nothing processed yet"
// (docs/subscriptions.md, Consumers), the "-1" of docs/protocol.md, Offsets.
const OffsetStart = "-1"

// maxOffsetLength bounds an offset token (the protocol keeps offsets
// under 256 characters).
const maxOffsetLength = 256

// validOffsetSyntax reports whether s can be an offset at all: OffsetStart
// or a non-empty token of printable ASCII without the characters the
// protocol forbids in offsets (',', '&', '=', '?', '/'). Whether it is an
// offset of a given stream is checked against that stream's tail.
func validOffsetSyntax(s string) bool {
	if s == OffsetStart {
		return true
	}
	if s == "" || len(s) > maxOffsetLength {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c <= ' ' || c >= 0x7f || strings.IndexByte(",&=?/", c) >= 0 {
			return false
		}
	}
	return true
}

// isStart reports whether off is OffsetStart.
func isStart(off string) bool { return off == OffsetStart }

// CompareOffsets orders two offsets of one stream: -1, 0 or +1 as a is
// before, equal to or after b. Offsets are fixed-width tokens, so their
// lexicographic order is their stream order, with one exception handled
// explicitly: OffsetStart ("-1") is not a token and sorts before every
// offset, the tail of an empty stream included. A consumer spawned for a
// new stream (acked at OffsetStart) therefore has pending work from the
// stream's creation, even when it was created empty.
func (m *Machine) CompareOffsets(a, b string) int {
	as, bs := isStart(a), isStart(b)
	switch {
	case as && bs:
		return 0
	case as:
		return -1
	case bs:
		return 1
	}
	return strings.Compare(a, b)
}

// checkAck validates an ack offset against the stream's current tail.
// ErrInvalidOffset when it is malformed, of another width than the
// stream's offsets, or beyond the tail.
func (m *Machine) checkAck(path, off, tail string) error {
	if !validOffsetSyntax(off) {
		return fmt.Errorf("%w: ack offset %q for %s is malformed", ErrInvalidOffset, off, path)
	}
	if !isStart(off) && !isStart(tail) && len(off) != len(tail) {
		// Offsets are fixed-width: a token of another width was not
		// produced by this server, and comparing it would be meaningless.
		return fmt.Errorf("%w: ack offset %q for %s is not an offset of this stream", ErrInvalidOffset, off, path)
	}
	if m.CompareOffsets(off, tail) > 0 {
		return fmt.Errorf("%w: ack offset %q for %s is beyond the stream's tail %q", ErrInvalidOffset, off, path, tail)
	}
	return nil
}

// PendingWork reports whether any subscribed stream has events beyond its
// acked offset (docs/subscriptions.md, Consumers):
//
//	any(tail[path] > acked[path] for path in subscribed_streams)
func (m *Machine) PendingWork(c *Consumer, tails Tails) bool {
	for _, s := range c.Streams {
		if m.CompareOffsets(tails.of(s.Path), s.Acked) > 0 {
			return true
		}
	}
	return false
}

// triggeredBy lists the streams whose notified tail is beyond their acked
// offset: the informational "triggered_by" of a wake payload.
func (m *Machine) triggeredBy(c *Consumer) []string {
	out := []string{}
	for _, s := range c.Streams {
		if s.Notified != "" && m.CompareOffsets(s.Notified, s.Acked) > 0 {
			out = append(out, s.Path)
		}
	}
	return out
}
