package streamrules

import (
	"bytes"
	"time"

	"github.com/heraldstreams/herald/protocol"
)

// Config is a stream's creation settings, as a create request gives them
// or as the stream at a path was created with, for the create rules to
// compare.
type Config struct {
	// ContentType is "" in a fork request that inherits the source's.
	ContentType string
	TTL         time.Duration
	ExpiresAt   time.Time
	Closed      bool
	// ForkSource is the source's path, "" when not a fork.
	ForkSource string
	// ForkOffset is the anchor position (-1 in a request: the source's
	// tail); ForkSubOffset refines it.
	ForkOffset    int64
	ForkSubOffset int64
}

// SameCreateConfig reports whether a create request matches the stream
// already at its path (docs/protocol.md, Create: content type by media
// type, TTL/expiry, closure, fork origin). A matching request is an
// idempotent success; any other is refused as a stream that exists. A
// fork request may leave out what the fork inherited (content type,
// expiry) or the offset it was made at (-1).
func SameCreateConfig(st, req Config) bool {
	if req.ForkSource != "" {
		if st.ForkSource != req.ForkSource {
			return false
		}
		if req.ForkOffset >= 0 && (req.ForkOffset != st.ForkOffset || req.ForkSubOffset != st.ForkSubOffset) {
			return false
		}
		if req.ContentType != "" && !protocol.SameMediaType(req.ContentType, st.ContentType) {
			return false
		}
		if (req.TTL != 0 || !req.ExpiresAt.IsZero()) && (req.TTL != st.TTL || !req.ExpiresAt.Equal(st.ExpiresAt)) {
			return false
		}
		return req.Closed == st.Closed
	}
	if st.ForkSource != "" {
		return false
	}
	return protocol.SameMediaType(req.ContentType, st.ContentType) && req.TTL == st.TTL &&
		req.ExpiresAt.Equal(st.ExpiresAt) && req.Closed == st.Closed
}

// ForkDecision is where and how a fork starts.
type ForkDecision struct {
	// ContentType is the fork's content type (the source's).
	ContentType string
	// TTL and ExpiresAt are the fork's expiry: its own, or the source's
	// when the request gives none.
	TTL       time.Duration
	ExpiresAt time.Time
	// Anchor is the fork offset resolved (-1 became the source's tail).
	Anchor int64
	// Position is where the fork diverges from the source: its tail at
	// creation.
	Position int64
}

// DecideFork applies the fork rules of a create request (req) to its live
// source (src, whose tail is tail): content type, anchor within the
// source's tail, and the sub-offset, which counts bytes, or messages in a
// JSON stream, from the anchor up to the next data boundary. rest returns
// the stored data from the anchor to the end of the chunk holding it (nil
// when there is none); it is called only for a sub-offset. DecideFork
// returns rest's error as it is, and this package's errors for requests
// that break a rule.
func DecideFork(src Config, tail int64, req Config, rest func(anchor int64) ([]byte, error)) (ForkDecision, error) {
	d := ForkDecision{ContentType: src.ContentType, TTL: req.TTL, ExpiresAt: req.ExpiresAt}
	if req.ContentType != "" && !protocol.SameMediaType(req.ContentType, src.ContentType) {
		return ForkDecision{}, ErrContentTypeMismatch
	}
	d.Anchor = req.ForkOffset
	if d.Anchor < 0 {
		d.Anchor = tail
	}
	if d.Anchor > tail {
		return ForkDecision{}, ErrForkOffsetBeyondTail
	}
	d.Position = d.Anchor
	if req.ForkSubOffset > 0 {
		data, err := rest(d.Anchor)
		if err != nil {
			return ForkDecision{}, err
		}
		n, ok := SubOffsetBytes(data, protocol.IsJSON(src.ContentType), req.ForkSubOffset)
		if !ok {
			return ForkDecision{}, ErrForkSubOffset
		}
		d.Position += n
	}
	if req.TTL == 0 && req.ExpiresAt.IsZero() {
		d.TTL, d.ExpiresAt = src.TTL, src.ExpiresAt
	}
	return d, nil
}

// SubOffsetBytes is how many bytes of data a fork sub-offset spans: sub
// bytes, or sub whole messages ('\n'-terminated, as protocol.FrameJSON
// stores them) of a JSON stream. ok is false when data holds fewer.
func SubOffsetBytes(data []byte, json bool, sub int64) (n int64, ok bool) {
	if !json {
		return sub, sub <= int64(len(data))
	}
	i, count := 0, int64(0)
	for count < sub {
		j := bytes.IndexByte(data[i:], '\n')
		if j < 0 {
			return 0, false
		}
		i += j + 1
		count++
	}
	return int64(i), true
}
