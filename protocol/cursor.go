package protocol

import (
	"strconv"
	"time"
)

// CursorEpoch is the origin of long-poll cursor intervals (docs/protocol.md,
// Caching, cursors and ETags).
var CursorEpoch = time.Date(2024, 10, 9, 0, 0, 0, 0, time.UTC)

// CursorInterval is the length of one cursor interval (docs/protocol.md,
// Caching, cursors and ETags).
const CursorInterval = 20 * time.Second

// MaxCursorJitter is the largest jitter added when a client's cursor is not
// behind the current interval (1 to 3600 seconds).
const MaxCursorJitter = time.Hour

// NextCursor returns the Stream-Cursor for a live response at now, given the
// cursor the client echoed ("" when none) and a jitter the caller drew at
// random from [1s, MaxCursorJitter]. The cursor is the number of intervals
// since CursorEpoch; when the client's cursor is at or past that number,
// the result is the client's cursor advanced by the jitter (at least one
// interval), so cursors never go backwards and a CDN never serves the same
// empty response forever.
func NextCursor(now time.Time, client string, jitter time.Duration) string {
	current := CurrentCursor(now)
	if client == "" {
		return strconv.FormatInt(current, 10)
	}
	if c, err := strconv.ParseInt(client, 10, 64); err == nil && c >= current {
		if jitter < time.Second {
			jitter = time.Second
		}
		if jitter > MaxCursorJitter {
			jitter = MaxCursorJitter
		}
		steps := int64((jitter + CursorInterval - 1) / CursorInterval)
		if c > 1<<62 { // absurd client value: do not overflow
			return strconv.FormatInt(c, 10)
		}
		return strconv.FormatInt(c+steps, 10)
	}
	return strconv.FormatInt(current, 10)
}

// CurrentCursor is the number of cursor intervals from CursorEpoch to
// now: the Stream-Cursor of a live response to a client that echoed none
// (NextCursor).
func CurrentCursor(now time.Time) int64 {
	return max(int64(now.Sub(CursorEpoch)/CursorInterval), 0)
}
