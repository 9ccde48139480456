package httpapi

import (
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/heraldstreams/herald/auth"
	"github.com/heraldstreams/herald/store"
)

// revocationRig is a server with access control whose one stored key
// expires at expires, and that key's bearer header.
func revocationRig(t *testing.T, m *memStream, cfg Config, checkedAt, expires time.Time) (*Server, map[string]string) {
	t.Helper()
	id, key, hash, err := auth.NewKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	keys := &benchKeys{key: store.Key{ID: id, Hash: hash, Scopes: []string{string(auth.ScopeStreamsRead)}, ExpiresAt: expires}}
	a, err := auth.New(auth.Config{Keys: keys, Now: func() time.Time { return checkedAt }})
	if err != nil {
		t.Fatal(err)
	}
	cfg.Auth = a
	return newTestServer(m.fake(t), cfg), map[string]string{"Authorization": "Bearer " + key}
}

// A key that expires while its SSE response catches up on a stream with
// more data than one event holds loses the response before the next
// read: a revoked reader of a busy stream reads nothing more.
func TestSSEOfExpiredKeyStopsReading(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		m := newMemStream("text/plain", strings.Repeat("x", 60))
		now := time.Now()
		// Checked valid; expired by the time the read starts.
		s, bearer := revocationRig(t, m, Config{MaxReadBytes: 6, SSEMaxDuration: time.Minute}, now.Add(-time.Second), now)
		w := do(s, "GET", "/v1/s?offset=-1&live=sse", nil, bearer)
		if w.Code != http.StatusOK {
			t.Fatalf("SSE = %d %s", w.Code, w.Body)
		}
		if n := strings.Count(w.Body.String(), "event: data"); n > 1 {
			t.Fatalf("an expired key's SSE response sent %d data events of 10, want at most the first", n)
		}
	})
}

// A long-poll waiting when its key expires answers 401 KEY_EXPIRED at the
// expiry, not at its timeout.
func TestLongPollOfExpiringKeyAnswers401(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		m := newMemStream("text/plain", "x")
		start := time.Now()
		s, bearer := revocationRig(t, m, Config{LongPollTimeout: time.Minute}, start, start.Add(5*time.Second))
		w := do(s, "GET", "/v1/s?offset=now&live=long-poll", nil, bearer)
		if w.Code != http.StatusUnauthorized || errorCode(t, w) != "KEY_EXPIRED" {
			t.Fatalf("long-poll = %d %s, want 401 KEY_EXPIRED", w.Code, w.Body)
		}
		if took := time.Since(start); took != 5*time.Second {
			t.Fatalf("answered after %v, want at the expiry (5s)", took)
		}
	})
}
