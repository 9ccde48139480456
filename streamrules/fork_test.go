package streamrules

import (
	"errors"
	"testing"
	"time"

	"github.com/heraldstreams/herald/protocol"
)

func TestSameCreateConfig(t *testing.T) {
	t.Parallel()
	exp := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	plain := Config{ContentType: "text/plain", TTL: time.Minute}
	fork := Config{ContentType: "text/plain", TTL: time.Hour, ForkSource: "/src", ForkOffset: 3, ForkSubOffset: 1}
	for _, c := range []struct {
		name string
		st   Config
		p    Config
		want bool
	}{
		{"same", plain, Config{ContentType: "text/plain", TTL: time.Minute}, true},
		{"other content type", plain, Config{ContentType: "application/json", TTL: time.Minute}, false},
		{"other ttl", plain, Config{ContentType: "text/plain"}, false},
		{"expiry added", plain, Config{ContentType: "text/plain", TTL: time.Minute, ExpiresAt: exp}, false},
		{"closed", plain, Config{ContentType: "text/plain", TTL: time.Minute, Closed: true}, false},
		{"fork over a plain stream", plain, Config{ContentType: "text/plain", TTL: time.Minute, ForkSource: "/src"}, false},
		{"plain over a fork", fork, Config{ContentType: "text/plain", TTL: time.Hour}, false},
		{"fork, inherited fields left out", fork, Config{ForkSource: "/src", ForkOffset: -1}, true},
		{"fork, all given", fork, Config{ForkSource: "/src", ForkOffset: 3, ForkSubOffset: 1, ContentType: "text/plain", TTL: time.Hour}, true},
		{"fork, other source", fork, Config{ForkSource: "/other", ForkOffset: -1}, false},
		{"fork, other offset", fork, Config{ForkSource: "/src", ForkOffset: 2}, false},
		{"fork, other sub-offset", fork, Config{ForkSource: "/src", ForkOffset: 3}, false},
		{"fork, other content type", fork, Config{ForkSource: "/src", ForkOffset: -1, ContentType: "application/json"}, false},
		{"fork, other ttl", fork, Config{ForkSource: "/src", ForkOffset: -1, TTL: time.Minute}, false},
		{"fork, closed", fork, Config{ForkSource: "/src", ForkOffset: -1, Closed: true}, false},
	} {
		if got := SameCreateConfig(c.st, c.p); got != c.want {
			t.Errorf("%s: SameCreateConfig = %v, want %v", c.name, got, c.want)
		}
	}
}

func TestDecideFork(t *testing.T) {
	t.Parallel()
	exp := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	const tail = 6
	text := Config{ContentType: "text/plain", TTL: time.Hour}
	js := Config{ContentType: "application/json", ExpiresAt: exp}
	// The chunk holding every position is "abcdef" (or "1\n2\n3\n").
	chunk := func(st Config) func(int64) ([]byte, error) {
		data := []byte("abcdef")
		if protocol.IsJSON(st.ContentType) {
			data = []byte("1\n2\n3\n")
		}
		return func(anchor int64) ([]byte, error) { return data[anchor:], nil }
	}
	for _, c := range []struct {
		name string
		src  Config
		p    Config
		want ForkDecision
		err  error
	}{
		{"tail", text, Config{ForkOffset: -1},
			ForkDecision{ContentType: "text/plain", TTL: time.Hour, Anchor: 6, Position: 6}, nil},
		{"byte sub-offset", text, Config{ForkOffset: 3, ForkSubOffset: 2},
			ForkDecision{ContentType: "text/plain", TTL: time.Hour, Anchor: 3, Position: 5}, nil},
		{"sub-offset to the boundary", text, Config{ForkOffset: 3, ForkSubOffset: 3},
			ForkDecision{ContentType: "text/plain", TTL: time.Hour, Anchor: 3, Position: 6}, nil},
		{"sub-offset past the boundary", text, Config{ForkOffset: 3, ForkSubOffset: 4}, ForkDecision{}, ErrForkSubOffset},
		{"sub-offset at the tail", text, Config{ForkOffset: -1, ForkSubOffset: 1}, ForkDecision{}, ErrForkSubOffset},
		{"message sub-offset", js, Config{ForkOffset: 0, ForkSubOffset: 2},
			ForkDecision{ContentType: "application/json", ExpiresAt: exp, Anchor: 0, Position: 4}, nil},
		{"too many messages", js, Config{ForkOffset: 2, ForkSubOffset: 3}, ForkDecision{}, ErrForkSubOffset},
		{"own expiry", text, Config{ForkOffset: 0, ExpiresAt: exp},
			ForkDecision{ContentType: "text/plain", ExpiresAt: exp, Anchor: 0, Position: 0}, nil},
		{"own ttl", js, Config{ForkOffset: 0, TTL: time.Minute},
			ForkDecision{ContentType: "application/json", TTL: time.Minute, Anchor: 0, Position: 0}, nil},
		{"offset beyond the tail", text, Config{ForkOffset: 7}, ForkDecision{}, ErrForkOffsetBeyondTail},
		{"content type mismatch", text, Config{ForkOffset: -1, ContentType: "application/json"}, ForkDecision{}, ErrContentTypeMismatch},
		{"content type given", text, Config{ForkOffset: -1, ContentType: "text/plain"},
			ForkDecision{ContentType: "text/plain", TTL: time.Hour, Anchor: 6, Position: 6}, nil},
	} {
		got, err := DecideFork(c.src, tail, c.p, chunk(c.src))
		if !errors.Is(err, c.err) || got != c.want {
			t.Errorf("%s: DecideFork = %+v, %v; want %+v, %v", c.name, got, err, c.want, c.err)
		}
	}
	// rest is only read for a sub-offset, and its error comes back as is.
	failed := errors.New("disk on fire")
	if _, err := DecideFork(text, tail, Config{ForkOffset: 1, ForkSubOffset: 1}, func(int64) ([]byte, error) { return nil, failed }); err != failed {
		t.Errorf("read error = %v", err)
	}
	if _, err := DecideFork(text, tail, Config{ForkOffset: 1}, func(int64) ([]byte, error) { return nil, failed }); err != nil {
		t.Errorf("no sub-offset read: %v", err)
	}
}
