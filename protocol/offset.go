// Package protocol holds the pure rules of the Durable Streams protocol
// (docs/protocol.md): offsets, header values, JSON framing,
// long-poll cursors, ETags, SSE encoding and the append decision. It knows
// nothing of HTTP handlers or storage engines; httpapi and the store
// backends ask it.
package protocol

import (
	"errors"
	"strconv"
)

// Offset sentinels a client may send (docs/protocol.md, Offsets). Herald
// never produces them as real offsets.
const (
	// OffsetStart is the sentinel for the beginning of a stream.
	OffsetStart = "-1"
	// OffsetNow is the sentinel for the current tail.
	OffsetNow = "now"
)

// offsetHalf is the width of each half of an offset token; a token is two
// halves joined by '_' (see FormatOffset).
const offsetHalf = 16

// offsetLen is the length of every offset token Herald produces.
const offsetLen = 2*offsetHalf + 1

// pow16 is 10^16: the low half of an offset token holds position mod pow16.
const pow16 = 10_000_000_000_000_000

// ErrInvalidOffset is returned by ParseOffset for anything that is not a
// sentinel or an offset token.
var ErrInvalidOffset = errors.New("protocol: malformed offset")

// OffsetKind says what a parsed offset designates.
type OffsetKind int

const (
	// OffsetKindPosition is a concrete byte position.
	OffsetKindPosition OffsetKind = iota
	// OffsetKindStart is the "-1" sentinel: the start of the stream.
	OffsetKindStart
	// OffsetKindNow is the "now" sentinel: the tail at request time.
	OffsetKindNow
)

// Offset is a parsed offset: a sentinel or a position.
type Offset struct {
	Kind OffsetKind
	// Position is the byte position when Kind is OffsetKindPosition.
	Position int64
}

// FormatOffset turns a byte position into an offset token: the position as
// a 32-digit zero-padded decimal, split after 16 digits by '_'
// ("0000000000000000_0000000000001234"). Tokens have a fixed width, so
// their lexicographic order is the order of positions; they contain only
// digits and '_', so they need no escaping in a URL. The shape matches the
// offsets of the reference servers, which clients and the conformance suite
// already use as literals (the zero offset
// "0000000000000000_0000000000000000").
//
// pos must not be negative.
func FormatOffset(pos int64) string {
	var b [offsetLen]byte
	return string(AppendOffset(b[:0], pos))
}

// AppendOffset appends the offset token of pos to dst (see FormatOffset).
func AppendOffset(dst []byte, pos int64) []byte {
	if pos < 0 {
		pos = 0
	}
	hi, lo := uint64(pos)/pow16, uint64(pos)%pow16
	dst = appendPadded(dst, hi)
	dst = append(dst, '_')
	return appendPadded(dst, lo)
}

// appendPadded appends v as a zero-padded decimal of offsetHalf digits.
// Callers guarantee v < 10^16.
func appendPadded(dst []byte, v uint64) []byte {
	var b [offsetHalf]byte
	for i := offsetHalf - 1; i >= 0; i-- {
		b[i] = byte('0' + v%10)
		v /= 10
	}
	return append(dst, b[:]...)
}

// ParseOffset parses an offset query parameter or header: "-1", "now", or
// a token produced by FormatOffset. Anything else, including a token whose
// position does not fit in an int64, is ErrInvalidOffset.
func ParseOffset(s string) (Offset, error) {
	switch s {
	case OffsetStart:
		return Offset{Kind: OffsetKindStart}, nil
	case OffsetNow:
		return Offset{Kind: OffsetKindNow}, nil
	}
	pos, err := ParsePosition(s)
	if err != nil {
		return Offset{}, err
	}
	return Offset{Kind: OffsetKindPosition, Position: pos}, nil
}

// ParsePosition parses an offset token (no sentinels) into a byte position.
func ParsePosition(s string) (int64, error) {
	if len(s) != offsetLen || s[offsetHalf] != '_' {
		return 0, ErrInvalidOffset
	}
	hi, ok := parseDigits(s[:offsetHalf])
	if !ok {
		return 0, ErrInvalidOffset
	}
	lo, ok := parseDigits(s[offsetHalf+1:])
	if !ok {
		return 0, ErrInvalidOffset
	}
	// hi*10^16+lo must fit in an int64 (max 922_3372036854775807).
	const maxHi = uint64(1<<63-1) / pow16
	if hi > maxHi || (hi == maxHi && lo > uint64(1<<63-1)%pow16) {
		return 0, ErrInvalidOffset
	}
	return int64(hi*pow16 + lo), nil
}

// parseDigits parses a run of ASCII digits (at most 19, so it cannot
// overflow); callers check the length they require.
func parseDigits(s string) (uint64, bool) {
	var v uint64
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		v = v*10 + uint64(c-'0')
	}
	return v, true
}

// formatInt formats a non-negative integer header value.
func formatInt(v int64) string { return strconv.FormatInt(v, 10) }
