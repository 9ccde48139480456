package protocol

import (
	"errors"
	"strconv"
	"strings"
	"time"
)

// Errors of header parsing. Each is a 400 Bad Request.
var (
	// ErrInvalidTTL: Stream-TTL is not a plain non-negative decimal.
	ErrInvalidTTL = errors.New("protocol: Stream-TTL must be a non-negative integer without sign, leading zeros, fraction or exponent")
	// ErrInvalidExpiresAt: Stream-Expires-At is not an RFC 3339 timestamp.
	ErrInvalidExpiresAt = errors.New("protocol: Stream-Expires-At must be an RFC 3339 timestamp")
	// ErrTTLAndExpiresAt: both Stream-TTL and Stream-Expires-At were given.
	ErrTTLAndExpiresAt = errors.New("protocol: Stream-TTL and Stream-Expires-At are mutually exclusive")
	// ErrProducerHeaders: the producer headers are incomplete or malformed.
	ErrProducerHeaders = errors.New("protocol: Producer-Id, Producer-Epoch and Producer-Seq must be given together, with a non-empty id and integers from 0 to 2^53-1")
	// ErrInvalidSubOffset: Stream-Fork-Sub-Offset is not a plain
	// non-negative decimal.
	ErrInvalidSubOffset = errors.New("protocol: Stream-Fork-Sub-Offset must be a non-negative integer without sign or leading zeros")
	// ErrInvalidContentType: Content-Type is not a type/subtype media type.
	ErrInvalidContentType = errors.New("protocol: Content-Type must be a media type such as text/plain")
)

// MaxHeaderValueBytes bounds every protocol header value Herald stores:
// Producer-Id, Stream-Seq and the media type of Content-Type. (A
// Stream-Forked-From is a stream path, bounded like every path.) Values are
// kept with the stream and read at every append, so a client must not be
// able to make them arbitrarily large.
const MaxHeaderValueBytes = 256

// HeaderTooLongError is a stored protocol header longer than
// MaxHeaderValueBytes: a 400 Bad Request.
type HeaderTooLongError struct {
	// Header is the header's name, such as "Stream-Seq".
	Header string
}

func (e *HeaderTooLongError) Error() string {
	return "protocol: " + e.Header + " must be at most " + strconv.Itoa(MaxHeaderValueBytes) + " bytes long"
}

// CheckHeaderLength returns a *HeaderTooLongError when value, the value of
// the stored header name, is longer than MaxHeaderValueBytes.
func CheckHeaderLength(name, value string) error {
	if len(value) > MaxHeaderValueBytes {
		return &HeaderTooLongError{Header: name}
	}
	return nil
}

// MaxSafeInteger is 2^53-1, the largest producer epoch or sequence number
// (docs/protocol.md, Idempotent producers: JavaScript clients must represent
// it exactly).
const MaxSafeInteger = 1<<53 - 1

// maxTTLSeconds bounds Stream-TTL so that it converts to a time.Duration
// without overflow (about 292 years).
const maxTTLSeconds = int64(1<<63-1) / int64(time.Second)

// ParseTTL parses Stream-TTL (docs/protocol.md, Expiry): a non-negative
// decimal number of seconds with no sign, no leading zeros (except "0"), no
// decimal point and no exponent.
func ParseTTL(s string) (time.Duration, error) {
	v, ok := parseCanonicalUint(s)
	if !ok || v > maxTTLSeconds {
		return 0, ErrInvalidTTL
	}
	return time.Duration(v) * time.Second, nil
}

// FormatTTL formats a TTL as the Stream-TTL header value (whole seconds).
func FormatTTL(ttl time.Duration) string {
	return formatInt(int64(ttl / time.Second))
}

// ParseExpiresAt parses Stream-Expires-At, an RFC 3339 timestamp with an
// optional fraction of a second.
func ParseExpiresAt(s string) (time.Time, error) {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, ErrInvalidExpiresAt
	}
	return t.UTC(), nil
}

// FormatExpiresAt formats an expiry as the Stream-Expires-At header value:
// RFC 3339 in UTC with milliseconds, which every JavaScript Date parses.
func FormatExpiresAt(t time.Time) string {
	return t.UTC().Format("2006-01-02T15:04:05.000Z07:00")
}

// Expiry is a stream's requested lifetime: a sliding TTL or an absolute
// expiry, at most one of them set.
type Expiry struct {
	TTL       time.Duration
	ExpiresAt time.Time
}

// ParseExpiry parses the Stream-TTL and Stream-Expires-At headers of a
// create request; hasTTL and hasExpires say whether each header was
// present. Both present is ErrTTLAndExpiresAt (the protocol lets a server
// reject it; Herald does, so there is no precedence rule to remember).
func ParseExpiry(ttl string, hasTTL bool, expiresAt string, hasExpires bool) (Expiry, error) {
	var e Expiry
	if hasTTL && hasExpires {
		return e, ErrTTLAndExpiresAt
	}
	var err error
	if hasTTL {
		e.TTL, err = ParseTTL(ttl)
	} else if hasExpires {
		e.ExpiresAt, err = ParseExpiresAt(expiresAt)
	}
	return e, err
}

// ParseClosed reports whether a Stream-Closed header value asks to close:
// only "true", in any case, counts (docs/protocol.md, Closing a stream);
// every other value is as if the header were absent.
func ParseClosed(v string) bool {
	return len(v) == 4 && strings.EqualFold(v, "true")
}

// ProducerHeaders are the raw idempotent-producer header values and whether
// each was present.
type ProducerHeaders struct {
	ID, Epoch, Seq          string
	HasID, HasEpoch, HasSeq bool
}

// Producer identifies one idempotent producer request (docs/protocol.md,
// Idempotent producers): the Producer-Id, Producer-Epoch and Producer-Seq
// headers.
type Producer struct {
	ID    string
	Epoch int64
	Seq   int64
}

// ParseProducer validates the producer headers (docs/protocol.md, Idempotent
// producers): all three or none, a non-empty id of at most
// MaxHeaderValueBytes, and decimal integers from 0 to 2^53-1. It returns nil
// when none is present.
func ParseProducer(h ProducerHeaders) (*Producer, error) {
	if !h.HasID && !h.HasEpoch && !h.HasSeq {
		return nil, nil
	}
	if !h.HasID || !h.HasEpoch || !h.HasSeq || h.ID == "" {
		return nil, ErrProducerHeaders
	}
	if err := CheckHeaderLength("Producer-Id", h.ID); err != nil {
		return nil, err
	}
	epoch, ok := parseDecimal(h.Epoch)
	if !ok || epoch > MaxSafeInteger {
		return nil, ErrProducerHeaders
	}
	seq, ok := parseDecimal(h.Seq)
	if !ok || seq > MaxSafeInteger {
		return nil, ErrProducerHeaders
	}
	return &Producer{ID: h.ID, Epoch: epoch, Seq: seq}, nil
}

// ParseSubOffset parses Stream-Fork-Sub-Offset: a non-negative decimal with
// no sign and no leading zeros.
func ParseSubOffset(s string) (int64, error) {
	v, ok := parseCanonicalUint(s)
	if !ok {
		return 0, ErrInvalidSubOffset
	}
	return v, nil
}

// parseCanonicalUint parses a decimal of ASCII digits with no leading zero
// (other than "0" itself) that fits in an int64.
func parseCanonicalUint(s string) (int64, bool) {
	if len(s) > 1 && s[0] == '0' {
		return 0, false
	}
	return parseDecimal(s)
}

// parseDecimal parses a non-empty run of ASCII digits that fits in an
// int64. Signs, spaces, fractions and exponents are rejected.
func parseDecimal(s string) (int64, bool) {
	if s == "" || len(s) > 19 {
		return 0, false
	}
	v, ok := parseDigits(s)
	if !ok || v > 1<<63-1 {
		return 0, false
	}
	return int64(v), true
}

// DefaultContentType is the content type of a stream created without one
// (docs/protocol.md, Create).
const DefaultContentType = "application/octet-stream"

// ContentTypeJSON is the content type with JSON-mode semantics
// (docs/protocol.md, JSON mode).
const ContentTypeJSON = "application/json"

// NormalizeContentType checks a Content-Type header and returns the value a
// stream keeps: the header without surrounding space, parameters included
// ("text/plain; charset=utf-8" stays so), because a stream's content type is
// returned exactly as it was created (docs/protocol.md, Create). Requests
// are matched against it by media type alone (SameMediaType). A value whose
// media type is not type/subtype made of token characters, or that holds a
// control character, is ErrInvalidContentType; a value longer than MaxHeaderValueBytes is a
// *HeaderTooLongError.
func NormalizeContentType(v string) (string, error) {
	v = strings.TrimSpace(v)
	if err := CheckHeaderLength("Content-Type", v); err != nil {
		return "", err
	}
	for i := 0; i < len(v); i++ {
		if c := v[i]; (c < ' ' && c != '\t') || c == 0x7f {
			return "", ErrInvalidContentType
		}
	}
	mt, _, _ := strings.Cut(v, ";")
	mt = strings.TrimSpace(mt)
	slash := strings.IndexByte(mt, '/')
	if slash <= 0 || slash == len(mt)-1 {
		return "", ErrInvalidContentType
	}
	for i := 0; i < len(mt); i++ {
		if i != slash && !isTokenChar(mt[i]) {
			return "", ErrInvalidContentType
		}
	}
	return v, nil
}

// MediaType is the media type of a content type: lower-cased, without
// parameters or surrounding space ("Text/Plain; charset=utf-8" is
// "text/plain"). It does not allocate for a type already in that form.
func MediaType(contentType string) string {
	mt, _, _ := strings.Cut(contentType, ";")
	// strings.ToLower returns its argument when it has no upper-case
	// letters, so the common case does not allocate.
	return strings.ToLower(strings.TrimSpace(mt))
}

// SameMediaType reports whether two content types name the same media
// type. Media types compare case-insensitively and the protocol gives
// parameters no meaning, so an append of "text/plain" matches a stream
// created as "text/plain; charset=utf-8" and the reverse.
func SameMediaType(a, b string) bool {
	return a == b || MediaType(a) == MediaType(b)
}

// isTokenChar reports whether c is an RFC 9110 tchar.
func isTokenChar(c byte) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return true
	}
	return strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0
}

// IsJSON reports whether a content type is JSON mode: its media type is
// application/json, whatever its parameters and case.
func IsJSON(contentType string) bool {
	return contentType == ContentTypeJSON || MediaType(contentType) == ContentTypeJSON
}

// IsText reports whether SSE carries a stream of this content type as UTF-8
// text (media types text/* and application/json); every other type is
// base64-encoded (docs/protocol.md, Server-Sent Events).
func IsText(contentType string) bool {
	mt := MediaType(contentType)
	return strings.HasPrefix(mt, "text/") || mt == ContentTypeJSON
}
