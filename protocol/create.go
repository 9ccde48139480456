package protocol

import (
	"bytes"
	"errors"
	"time"

	"github.com/heraldstreams/herald/store"
)

// SameCreateConfig reports whether a create request matches the stream
// already at its path (docs/protocol.md, Create: content type by media
// type, TTL/expiry, closure, fork origin). A matching request is an
// idempotent success; any other is store.ErrStreamExists. A fork request may leave out what the fork
// inherited (content type, expiry) or the offset it was made at (-1).
func SameCreateConfig(st *store.Stream, p *store.StreamCreateParams) bool {
	if p.ForkSource != "" {
		if st.ForkSource != p.ForkSource {
			return false
		}
		if p.ForkOffset >= 0 && (p.ForkOffset != st.ForkOffset || p.ForkSubOffset != st.ForkSubOffset) {
			return false
		}
		if p.ContentType != "" && !SameMediaType(p.ContentType, st.ContentType) {
			return false
		}
		if (p.TTL != 0 || !p.ExpiresAt.IsZero()) && (p.TTL != st.TTL || !p.ExpiresAt.Equal(st.ExpiresAt)) {
			return false
		}
		return p.Closed == st.Closed
	}
	if st.ForkSource != "" {
		return false
	}
	return SameMediaType(p.ContentType, st.ContentType) && p.TTL == st.TTL &&
		p.ExpiresAt.Equal(st.ExpiresAt) && p.Closed == st.Closed
}

// ForkSourceError turns the error of looking up a fork's source (as a
// client would see it) into the error of the fork request: a soft-deleted
// source is store.ErrForkSourceGone, a missing one stays store.ErrNotFound.
func ForkSourceError(err error) error {
	if errors.Is(err, store.ErrStreamGone) {
		return store.ErrForkSourceGone
	}
	return err
}

// ForkDecision is where and how a fork starts.
type ForkDecision struct {
	// ContentType is the fork's content type (the source's).
	ContentType string
	// TTL and ExpiresAt are the fork's expiry: its own, or the source's
	// when the request gives none (PROTOCOL 4.2).
	TTL       time.Duration
	ExpiresAt time.Time
	// Anchor is the fork offset resolved (-1 became the source's tail).
	Anchor int64
	// Position is where the fork diverges from the source: its tail at
	// creation.
	Position int64
}

// DecideFork applies the fork rules of a create request to its live
// source: content type, anchor within the source's tail, and the
// sub-offset, which counts bytes, or messages in a JSON stream, from the
// anchor up to the next data boundary. rest returns the stored data from
// the anchor to the end of the chunk holding it (nil when there is none);
// it is called only for a sub-offset. DecideFork returns rest's error as
// it is, and store sentinel errors for requests that break a rule.
func DecideFork(src *store.Stream, p *store.StreamCreateParams, rest func(anchor int64) ([]byte, error)) (ForkDecision, error) {
	d := ForkDecision{ContentType: src.ContentType, TTL: p.TTL, ExpiresAt: p.ExpiresAt}
	if p.ContentType != "" && !SameMediaType(p.ContentType, src.ContentType) {
		return ForkDecision{}, store.ErrContentTypeMismatch
	}
	d.Anchor = p.ForkOffset
	if d.Anchor < 0 {
		d.Anchor = src.Tail
	}
	if d.Anchor > src.Tail {
		return ForkDecision{}, store.ErrForkOffsetBeyondTail
	}
	d.Position = d.Anchor
	if p.ForkSubOffset > 0 {
		data, err := rest(d.Anchor)
		if err != nil {
			return ForkDecision{}, err
		}
		n, ok := SubOffsetBytes(data, IsJSON(src.ContentType), p.ForkSubOffset)
		if !ok {
			return ForkDecision{}, store.ErrForkSubOffset
		}
		d.Position += n
	}
	if p.TTL == 0 && p.ExpiresAt.IsZero() {
		d.TTL, d.ExpiresAt = src.TTL, src.ExpiresAt
	}
	return d, nil
}

// SubOffsetBytes is how many bytes of data a fork sub-offset spans: sub
// bytes, or sub whole messages ('\n'-terminated, as FrameJSON stores them)
// of a JSON stream. ok is false when data holds fewer.
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
