package protocol

import (
	"errors"
	"testing"
	"time"

	"github.com/heraldstreams/herald/store"
)

func TestSameCreateConfig(t *testing.T) {
	t.Parallel()
	exp := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	plain := store.Stream{Path: "/a", ContentType: "text/plain", TTL: time.Minute}
	fork := store.Stream{Path: "/f", ContentType: "text/plain", TTL: time.Hour, ForkSource: "/src", ForkOffset: 3, ForkSubOffset: 1}
	for _, c := range []struct {
		name string
		st   store.Stream
		p    store.StreamCreateParams
		want bool
	}{
		{"same", plain, store.StreamCreateParams{ContentType: "text/plain", TTL: time.Minute}, true},
		{"other content type", plain, store.StreamCreateParams{ContentType: "application/json", TTL: time.Minute}, false},
		{"other ttl", plain, store.StreamCreateParams{ContentType: "text/plain"}, false},
		{"expiry added", plain, store.StreamCreateParams{ContentType: "text/plain", TTL: time.Minute, ExpiresAt: exp}, false},
		{"closed", plain, store.StreamCreateParams{ContentType: "text/plain", TTL: time.Minute, Closed: true}, false},
		{"fork over a plain stream", plain, store.StreamCreateParams{ContentType: "text/plain", TTL: time.Minute, ForkSource: "/src"}, false},
		{"plain over a fork", fork, store.StreamCreateParams{ContentType: "text/plain", TTL: time.Hour}, false},
		{"fork, inherited fields left out", fork, store.StreamCreateParams{ForkSource: "/src", ForkOffset: -1}, true},
		{"fork, all given", fork, store.StreamCreateParams{ForkSource: "/src", ForkOffset: 3, ForkSubOffset: 1, ContentType: "text/plain", TTL: time.Hour}, true},
		{"fork, other source", fork, store.StreamCreateParams{ForkSource: "/other", ForkOffset: -1}, false},
		{"fork, other offset", fork, store.StreamCreateParams{ForkSource: "/src", ForkOffset: 2}, false},
		{"fork, other sub-offset", fork, store.StreamCreateParams{ForkSource: "/src", ForkOffset: 3}, false},
		{"fork, other content type", fork, store.StreamCreateParams{ForkSource: "/src", ForkOffset: -1, ContentType: "application/json"}, false},
		{"fork, other ttl", fork, store.StreamCreateParams{ForkSource: "/src", ForkOffset: -1, TTL: time.Minute}, false},
		{"fork, closed", fork, store.StreamCreateParams{ForkSource: "/src", ForkOffset: -1, Closed: true}, false},
	} {
		if got := SameCreateConfig(&c.st, &c.p); got != c.want {
			t.Errorf("%s: SameCreateConfig = %v, want %v", c.name, got, c.want)
		}
	}
}

func TestForkSourceError(t *testing.T) {
	t.Parallel()
	if err := ForkSourceError(store.ErrStreamGone); !errors.Is(err, store.ErrForkSourceGone) {
		t.Errorf("soft-deleted source: %v", err)
	}
	if err := ForkSourceError(store.ErrNotFound); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("missing source: %v", err)
	}
}

func TestDecideFork(t *testing.T) {
	t.Parallel()
	exp := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	text := store.Stream{ContentType: "text/plain", Tail: 6, TTL: time.Hour}
	js := store.Stream{ContentType: "application/json", Tail: 6, ExpiresAt: exp}
	// The chunk holding every position is "abcdef" (or "1\n2\n3\n").
	chunk := func(st store.Stream) func(int64) ([]byte, error) {
		data := []byte("abcdef")
		if IsJSON(st.ContentType) {
			data = []byte("1\n2\n3\n")
		}
		return func(anchor int64) ([]byte, error) { return data[anchor:], nil }
	}
	for _, c := range []struct {
		name string
		src  store.Stream
		p    store.StreamCreateParams
		want ForkDecision
		err  error
	}{
		{"tail", text, store.StreamCreateParams{ForkOffset: -1},
			ForkDecision{ContentType: "text/plain", TTL: time.Hour, Anchor: 6, Position: 6}, nil},
		{"byte sub-offset", text, store.StreamCreateParams{ForkOffset: 3, ForkSubOffset: 2},
			ForkDecision{ContentType: "text/plain", TTL: time.Hour, Anchor: 3, Position: 5}, nil},
		{"sub-offset to the boundary", text, store.StreamCreateParams{ForkOffset: 3, ForkSubOffset: 3},
			ForkDecision{ContentType: "text/plain", TTL: time.Hour, Anchor: 3, Position: 6}, nil},
		{"sub-offset past the boundary", text, store.StreamCreateParams{ForkOffset: 3, ForkSubOffset: 4}, ForkDecision{}, store.ErrForkSubOffset},
		{"sub-offset at the tail", text, store.StreamCreateParams{ForkOffset: -1, ForkSubOffset: 1}, ForkDecision{}, store.ErrForkSubOffset},
		{"message sub-offset", js, store.StreamCreateParams{ForkOffset: 0, ForkSubOffset: 2},
			ForkDecision{ContentType: "application/json", ExpiresAt: exp, Anchor: 0, Position: 4}, nil},
		{"too many messages", js, store.StreamCreateParams{ForkOffset: 2, ForkSubOffset: 3}, ForkDecision{}, store.ErrForkSubOffset},
		{"own expiry", text, store.StreamCreateParams{ForkOffset: 0, ExpiresAt: exp},
			ForkDecision{ContentType: "text/plain", ExpiresAt: exp, Anchor: 0, Position: 0}, nil},
		{"own ttl", js, store.StreamCreateParams{ForkOffset: 0, TTL: time.Minute},
			ForkDecision{ContentType: "application/json", TTL: time.Minute, Anchor: 0, Position: 0}, nil},
		{"offset beyond the tail", text, store.StreamCreateParams{ForkOffset: 7}, ForkDecision{}, store.ErrForkOffsetBeyondTail},
		{"content type mismatch", text, store.StreamCreateParams{ForkOffset: -1, ContentType: "application/json"}, ForkDecision{}, store.ErrContentTypeMismatch},
		{"content type given", text, store.StreamCreateParams{ForkOffset: -1, ContentType: "text/plain"},
			ForkDecision{ContentType: "text/plain", TTL: time.Hour, Anchor: 6, Position: 6}, nil},
	} {
		got, err := DecideFork(&c.src, &c.p, chunk(c.src))
		if !errors.Is(err, c.err) || got != c.want {
			t.Errorf("%s: DecideFork = %+v, %v; want %+v, %v", c.name, got, err, c.want, c.err)
		}
	}
	// rest is only read for a sub-offset, and its error comes back as is.
	failed := errors.New("disk on fire")
	if _, err := DecideFork(&text, &store.StreamCreateParams{ForkOffset: 1, ForkSubOffset: 1}, func(int64) ([]byte, error) { return nil, failed }); err != failed {
		t.Errorf("read error = %v", err)
	}
	if _, err := DecideFork(&text, &store.StreamCreateParams{ForkOffset: 1}, func(int64) ([]byte, error) { return nil, failed }); err != nil {
		t.Errorf("no sub-offset read: %v", err)
	}
}

func TestIsJSONTolerant(t *testing.T) {
	t.Parallel()
	for ct, want := range map[string]bool{
		"application/json":                true,
		"Application/JSON; charset=utf-8": true,
		" application/json ":              true,
		"application/json-seq":            false,
		"text/plain":                      false,
		"":                                false,
	} {
		if got := IsJSON(ct); got != want {
			t.Errorf("IsJSON(%q) = %v, want %v", ct, got, want)
		}
	}
}
