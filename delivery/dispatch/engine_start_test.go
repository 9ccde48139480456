package dispatch

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/heraldstreams/herald/delivery/internal/deliverytest"
	"github.com/heraldstreams/herald/internal/service"
	"github.com/heraldstreams/herald/store"
)

// countingStore counts StreamList calls, and can fail EndpointList or
// hand the engine a tail-change feed the test fills.
type countingStore struct {
	EngineStore
	lists    atomic.Int64
	listedMu sync.Mutex
	listed   []string // the paths StreamList returned; guarded by listedMu
	failList bool
	// failStreamLists fails this many StreamList calls first.
	failStreamLists atomic.Int64
	feed            *store.TailFeed // when set, the engine's tail-change feed
	marks           atomic.Int64    // StreamChangeMark calls
	prunes          atomic.Int64    // DeliveryPrune calls
}

func (s *countingStore) DeliveryPrune(ctx context.Context, p *store.DeliveryPruneParams) (int, error) {
	s.prunes.Add(1)
	return s.EngineStore.DeliveryPrune(ctx, p)
}

func (s *countingStore) StreamChangeMark(ctx context.Context) (int64, error) {
	s.marks.Add(1)
	return s.EngineStore.StreamChangeMark(ctx)
}

func (s *countingStore) StreamList(ctx context.Context, p *store.StreamListParams) ([]store.Stream, error) {
	s.lists.Add(1)
	if s.failStreamLists.Add(-1) >= 0 {
		return nil, errors.New("database is locked")
	}
	list, err := s.EngineStore.StreamList(ctx, p)
	s.listedMu.Lock()
	for _, st := range list {
		s.listed = append(s.listed, st.Path)
	}
	s.listedMu.Unlock()
	return list, err
}

// listedPaths returns the paths StreamList returned so far.
func (s *countingStore) listedPaths() []string {
	s.listedMu.Lock()
	defer s.listedMu.Unlock()
	return slices.Clone(s.listed)
}

func (s *countingStore) EndpointList(ctx context.Context, p *store.EndpointListParams) ([]store.Endpoint, error) {
	if s.failList {
		return nil, errors.New("database is locked")
	}
	return s.EngineStore.EndpointList(ctx, p)
}

func (s *countingStore) Notifier() store.Notifier {
	if s.feed == nil {
		return s.EngineStore.Notifier()
	}
	return feedNotifier{s.EngineStore.Notifier(), s.feed}
}

type feedNotifier struct {
	store.Notifier
	feed *store.TailFeed
}

func (n feedNotifier) Listen(int) (*store.TailFeed, func()) { return n.feed, func() {} }

// newStartEngine returns an engine (not started) on st, delivering to rc.
func newStartEngine(t *testing.T, st EngineStore, rc *deliverytest.Receiver) *Engine {
	t.Helper()
	e, err := NewEngine(EngineConfig{Store: st, Sender: deliverytest.NewSender(rc), Logger: slog.New(slog.DiscardHandler),
		SweepInterval: 5 * time.Second, PruneInterval: 24 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// runEngine starts e, and stops it when the test ends, and waits for
// its start to settle.
func runEngine(t *testing.T, e *Engine) {
	t.Helper()
	if err := e.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := e.Stop(context.Background()); err != nil {
			t.Error(err)
		}
	})
	synctest.Wait()
}

func appendEvent(t *testing.T, st store.Store, path, body string) {
	t.Helper()
	ctx := context.Background()
	if _, err := st.StreamCreate(ctx, &store.StreamCreateParams{Path: path, ContentType: "application/json", Now: time.Now()}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.StreamAppend(ctx, &store.StreamAppendParams{Path: path, ContentType: "application/json", Data: []byte(body + "\n"),
		Messages: 1, Now: time.Now()}); err != nil {
		t.Fatal(err)
	}
}

func createStoredEndpoint(t *testing.T, st store.Store, streams ...string) {
	t.Helper()
	if _, err := st.EndpointCreate(context.Background(), &store.EndpointCreateParams{Endpoint: store.Endpoint{
		ID: "ep_start", URL: deliverytest.HookURL, EventTypes: []string{"*"}, Streams: streams, Active: true, Ordering: "none", Secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
	}, Now: time.Now()}); err != nil {
		t.Fatal(err)
	}
}

// TestEngineReconcilesAtStart: an event appended while no engine ran (a
// crash between the append and its match) is delivered after a start,
// and streams are listed at start only, under the endpoints' prefixes:
// never again on a timer.
func TestEngineReconcilesAtStart(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		sq := deliverytest.OpenStore(t)
		createStoredEndpoint(t, sq, "/orders/*")
		appendEvent(t, sq, "/orders/1", `{"id":"o-1","type":"order.paid"}`)
		appendEvent(t, sq, "/other/1", `{"id":"x-1","type":"order.paid"}`)
		st := &countingStore{EngineStore: sq}
		rc := &deliverytest.Receiver{}
		runEngine(t, newStartEngine(t, st, rc))
		got := rc.Requests()
		if len(got) != 1 || got[0].Event.ID != "o-1" {
			t.Fatalf("%d requests after a start, want o-1 once", len(got))
		}
		if n := st.lists.Load(); n != 1 {
			t.Fatalf("%d stream lists at start, want 1 (one prefix, one page)", n)
		}
		time.Sleep(time.Hour) // 720 sweeps
		synctest.Wait()
		if n := st.lists.Load(); n != 1 {
			t.Fatalf("%d stream lists after an hour idle, want none since the start", n-1)
		}
	})
}

// TestEngineReconcilesOnlyChanges: a start reads only the streams that
// changed since the last reconciliation that finished (the store's
// mark), not every stream: an event appended while no engine ran is
// delivered, the streams matched before are not read again.
func TestEngineReconcilesOnlyChanges(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		sq := deliverytest.OpenStore(t)
		createStoredEndpoint(t, sq, "/**")
		appendEvent(t, sq, "/orders/1", `{"id":"o-1","type":"order.paid"}`)
		appendEvent(t, sq, "/orders/2", `{"id":"o-2","type":"order.paid"}`)
		first := &countingStore{EngineStore: sq}
		rc := &deliverytest.Receiver{}
		e := newStartEngine(t, first, rc)
		if err := e.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if err := e.Stop(context.Background()); err != nil {
			t.Fatal(err)
		}
		if got := first.listedPaths(); !slices.Equal(got, []string{"/orders/1", "/orders/2"}) {
			t.Fatalf("the first start read %v, want every stream (no mark yet)", got)
		}
		appendEvent(t, sq, "/orders/3", `{"id":"o-3","type":"order.paid"}`)
		second := &countingStore{EngineStore: sq}
		runEngine(t, newStartEngine(t, second, rc))
		if got := second.listedPaths(); !slices.Equal(got, []string{"/orders/3"}) {
			t.Fatalf("the second start read %v, want only the stream changed since the first", got)
		}
		var ids []string
		for _, r := range rc.Requests() {
			ids = append(ids, r.Event.ID)
		}
		if slices.Sort(ids); !slices.Equal(ids, []string{"o-1", "o-2", "o-3"}) {
			t.Fatalf("delivered %v, want each event once", ids)
		}
	})
}

// TestEngineWithoutEndpointsTakesNoMark: with no endpoint a start
// neither reads a stream nor takes a mark of the store's changes (with
// the embedded store a mark moves the change number that the next
// append to every stream writes into an index); the first start with an
// endpoint then reads every stream changed since the last mark, the ones
// appended to while no endpoint existed included.
func TestEngineWithoutEndpointsTakesNoMark(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		sq := deliverytest.OpenStore(t)
		appendEvent(t, sq, "/orders/1", `{"id":"o-1","type":"order.paid"}`)
		rc := &deliverytest.Receiver{}
		empty := &countingStore{EngineStore: sq}
		runEngine(t, newStartEngine(t, empty, rc))
		if n, m := empty.lists.Load(), empty.marks.Load(); n != 0 || m != 0 {
			t.Fatalf("a start without endpoints made %d stream lists and %d marks, want none", n, m)
		}
		createStoredEndpoint(t, sq, "/**")
		appendEvent(t, sq, "/orders/2", `{"id":"o-2","type":"order.paid"}`)
		st := &countingStore{EngineStore: sq}
		runEngine(t, newStartEngine(t, st, rc))
		if got := st.listedPaths(); !slices.Equal(got, []string{"/orders/1", "/orders/2"}) {
			t.Fatalf("the first start with an endpoint read %v, want every stream changed since the last mark", got)
		}
		if m := st.marks.Load(); m != 1 {
			t.Fatalf("%d marks, want 1", m)
		}
	})
}

// TestIdlePrunesSpaceOut: a prune that finds nothing doubles the wait
// before the next, up to an hour, so an idle server does not write to
// its store every PruneInterval; one that prunes something brings the
// wait back to PruneInterval.
func TestIdlePrunesSpaceOut(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		st := &countingStore{EngineStore: deliverytest.OpenStore(t)}
		e, err := NewEngine(EngineConfig{Store: st, Sender: deliverytest.NewSender(&deliverytest.Receiver{}), Logger: slog.New(slog.DiscardHandler),
			SweepInterval: time.Hour, PruneInterval: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		runEngine(t, e)
		time.Sleep(64 * time.Minute)
		synctest.Wait()
		// At 1, 3, 7, 15, 31 and 63 minutes, not every minute.
		if n := st.prunes.Load(); n != 6 {
			t.Fatalf("%d prunes in 64 idle minutes, want 6", n)
		}
		time.Sleep(3 * time.Hour)
		synctest.Wait()
		if n := st.prunes.Load(); n != 6+3 {
			t.Fatalf("%d prunes after 3 more hours, want 9 (one an hour at most)", n)
		}
		e.prunePace.Ran(true)
		if w, _ := e.prunePace.Next(); w != time.Minute {
			t.Fatalf("after a prune that pruned something the next is in %v, want PruneInterval", w)
		}
	})
}

// TestEngineReconcilesWhenChangesDropped: when the tail-change feed may
// have dropped changes (its buffer overflowed), the streams are
// reconciled, so an append whose change was dropped is delivered. Here
// the reconciliation at start fails, and the feed the engine is given
// never hears of the append but overflowed.
func TestEngineReconcilesWhenChangesDropped(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		sq := deliverytest.OpenStore(t)
		createStoredEndpoint(t, sq, "/**")
		appendEvent(t, sq, "/orders/1", `{"id":"o-1","type":"order.paid"}`)
		st := &countingStore{EngineStore: sq, feed: store.NewTailFeed(listenBuffer)}
		st.failStreamLists.Store(1)
		for range listenBuffer + 1 {
			st.feed.Publish(store.TailChange{Path: "/unrelated", Deleted: true})
		}
		rc := &deliverytest.Receiver{}
		runEngine(t, newStartEngine(t, st, rc))
		if n := st.lists.Load(); n != 2 {
			t.Fatalf("%d stream lists, want the failed one at start and one for the full feed", n)
		}
		if got := rc.Requests(); len(got) != 1 || got[0].Event.ID != "o-1" {
			t.Fatalf("%d requests after the feed overflowed, want o-1 once", len(got))
		}
	})
}

// TestEngineStartErrors: a failed load is returned and the engine does
// not run; a second Start is an error too.
func TestEngineStartErrors(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		sq := deliverytest.OpenStore(t)
		bad := newStartEngine(t, &countingStore{EngineStore: sq, failList: true}, &deliverytest.Receiver{})
		if err := bad.Start(context.Background()); err == nil {
			t.Fatal("a start whose endpoints could not be read succeeded")
		}
		if err := bad.Start(context.Background()); !errors.Is(err, service.ErrStopped) {
			t.Fatalf("a start after a failed one returned %v", err)
		}
		e := newStartEngine(t, sq, &deliverytest.Receiver{})
		if err := e.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		if err := e.Start(context.Background()); !errors.Is(err, service.ErrStarted) {
			t.Fatalf("a second start returned %v", err)
		}
		if err := e.Stop(context.Background()); err != nil {
			t.Fatal(err)
		}
	})
}

// TestEngineStopsWithStartContext: cancelling Start's context stops the
// engine: an append after it is not delivered.
func TestEngineStopsWithStartContext(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		sq := deliverytest.OpenStore(t)
		createStoredEndpoint(t, sq, "/**")
		rc := &deliverytest.Receiver{}
		e := newStartEngine(t, sq, rc)
		ctx, cancel := context.WithCancel(context.Background())
		if err := e.Start(ctx); err != nil {
			t.Fatal(err)
		}
		cancel()
		synctest.Wait()
		appendEvent(t, sq, "/orders/1", `{"id":"o-1","type":"order.paid"}`)
		time.Sleep(time.Minute)
		synctest.Wait()
		if n := len(rc.Requests()); n != 0 {
			t.Fatalf("%d requests after Start's context ended", n)
		}
		if err := e.Stop(context.Background()); err != nil {
			t.Fatal(err)
		}
	})
}
