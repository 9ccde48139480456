package sqlstore

import (
	"errors"
	"testing"
	"time"

	"github.com/heraldstreams/herald/store"
	"github.com/heraldstreams/herald/streamrules"
)

// memStream is a stream of memStreams: its metadata and data.
type memStream struct {
	st    store.Stream
	soft  bool
	forks int
	data  []byte
}

// memStreams is a StreamState in memory: what the core decides, without
// a database.
type memStreams struct {
	byPath  map[string]*memStream
	nextID  int64
	changes []string
}

func newMem() *memStreams { return &memStreams{byPath: map[string]*memStream{}} }

func (m *memStreams) Load(path string) (*memStream, bool, error) {
	s, ok := m.byPath[path]
	return s, ok, nil
}

func (m *memStreams) View(s *memStream, now time.Time) (store.Stream, error) {
	if err := ViewError(true, s.soft, s.st.Expired(now)); err != nil {
		return store.Stream{}, err
	}
	return s.st, nil
}

func (m *memStreams) ClosedBy(*memStream) *store.Producer { return nil }

func (m *memStreams) Producer(*memStream, string) (streamrules.ProducerState, bool, error) {
	return streamrules.ProducerState{}, false, nil
}

func (m *memStreams) ChunkRest(s *memStream, pos int64) ([]byte, error) { return s.data[pos:], nil }

func (m *memStreams) Insert(st store.Stream, _ *memStream, data []byte) (store.Stream, error) {
	m.nextID++
	st.ID = m.nextID
	st.Tail += int64(len(data))
	m.byPath[st.Path] = &memStream{st: st, data: data}
	m.changes = append(m.changes, "create "+st.Path)
	return st, nil
}

func (m *memStreams) Apply(s *memStream, c StreamChange) (store.Stream, error) {
	if c.Decision.Write {
		s.data = append(s.data, c.Data...)
		s.st.Tail += int64(len(c.Data))
	}
	s.st.Closed = s.st.Closed || c.Decision.Close
	s.st.AccessedAt = c.Now
	m.changes = append(m.changes, "append "+s.st.Path)
	return s.st, nil
}

func (m *memStreams) Forks(s *memStream) (int, error) { return s.forks, nil }
func (m *memStreams) SoftDeleted(s *memStream) bool   { return s.soft }
func (m *memStreams) SoftDelete(s *memStream) error {
	s.soft = true
	m.changes = append(m.changes, "soft-delete "+s.st.Path)
	return nil
}
func (m *memStreams) Remove(s *memStream) error {
	delete(m.byPath, s.st.Path)
	m.changes = append(m.changes, "remove "+s.st.Path)
	return nil
}
func (m *memStreams) Source(*memStream) (*memStream, bool, error) { return nil, false, nil }

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// create makes a stream at path in m, with a sliding TTL when ttl > 0.
func (m *memStreams) create(t *testing.T, path string, ttl time.Duration) *memStream {
	t.Helper()
	if _, err := CreateStream(m, &store.StreamCreateParams{Path: path, ContentType: "text/plain", TTL: ttl, Now: t0}); err != nil {
		t.Fatal(err)
	}
	return m.byPath[path]
}

// Expiry deletes a selected stream only if it is still expired when its
// write runs: one renewed, soft-deleted or gone since is left alone.
func TestExpireStreamChecksAgain(t *testing.T) {
	t.Parallel()
	m := newMem()
	m.create(t, "/expired", time.Second)
	m.create(t, "/renewed", time.Second).st.AccessedAt = t0.Add(time.Hour)
	m.create(t, "/soft", time.Second).soft = true
	now := t0.Add(time.Minute)
	for path, want := range map[string]bool{"/expired": true, "/renewed": false, "/soft": false, "/missing": false} {
		got, err := ExpireStream(m, path, now)
		if err != nil || got != want {
			t.Errorf("ExpireStream(%s) = %v, %v; want %v", path, got, err, want)
		}
	}
	if _, ok := m.byPath["/expired"]; ok {
		t.Error("the expired stream is still there")
	}
	if _, ok := m.byPath["/renewed"]; !ok {
		t.Error("the renewed stream was deleted")
	}
}

// A create over an expired stream clears it away and creates afresh,
// unless forks still hold it: then the path stays taken.
func TestCreateStreamOverExpired(t *testing.T) {
	t.Parallel()
	m := newMem()
	m.create(t, "/free", time.Second)
	m.create(t, "/held", time.Second).forks = 1
	now := t0.Add(time.Minute)
	res, err := CreateStream(m, &store.StreamCreateParams{Path: "/free", ContentType: "text/plain", Now: now})
	if err != nil || !res.Created || res.Stream.ID == 1 {
		t.Fatalf("create over the expired stream: %+v, %v", res, err)
	}
	_, err = CreateStream(m, &store.StreamCreateParams{Path: "/held", ContentType: "text/plain", Now: now})
	var r *RuleError
	if !errors.As(err, &r) || !errors.Is(err, store.ErrStreamGone) {
		t.Fatalf("create over an expired stream forks hold: %v, want the rule error %v", err, store.ErrStreamGone)
	}
}

// An append to a closed stream is refused with the stream's tail; one to
// a missing stream is not found; both are rule errors, which leave
// nothing changed.
func TestAppendStreamRefusals(t *testing.T) {
	t.Parallel()
	m := newMem()
	s := m.create(t, "/s", 0)
	if _, err := AppendStream(m, &store.StreamAppendParams{Path: "/s", ContentType: "text/plain", Data: []byte("abc"), Close: true, Now: t0}); err != nil {
		t.Fatal(err)
	}
	_, err := AppendStream(m, &store.StreamAppendParams{Path: "/s", ContentType: "text/plain", Data: []byte("d"), Now: t0})
	var ce *store.ClosedError
	var r *RuleError
	if !errors.As(err, &ce) || ce.Tail != 3 || !errors.As(err, &r) {
		t.Fatalf("append to a closed stream: %v, want a closed error at tail 3", err)
	}
	if _, err := AppendStream(m, &store.StreamAppendParams{Path: "/none", Data: []byte("d"), Now: t0}); !errors.Is(err, store.ErrNotFound) || !errors.As(err, &r) {
		t.Fatalf("append to a missing stream: %v", err)
	}
	if string(s.data) != "abc" || len(m.changes) != 2 {
		t.Fatalf("data %q, changes %v", s.data, m.changes)
	}
}
