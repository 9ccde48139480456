package postgres_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/heraldstreams/herald/internal/secretbox"
	"github.com/heraldstreams/herald/internal/testenv"
	"github.com/heraldstreams/herald/store"
	"github.com/heraldstreams/herald/store/postgres"
	"github.com/heraldstreams/herald/store/storetest"
	"github.com/jackc/pgx/v5"
)

// serverURL is the PostgreSQL server the tests use. Without one the tests
// fail: a missing server must not pass for a green run.
func serverURL(t testing.TB) string {
	t.Helper()
	return testenv.NeedPostgres(t)
}

// withConn runs fn on a connection of its own to the test server.
func withConn(t testing.TB, fn func(*pgx.Conn)) {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, serverURL(t))
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	defer func() {
		if err := conn.Close(ctx); err != nil {
			t.Errorf("close: %v", err)
		}
	}()
	fn(conn)
}

// newSchema creates an empty schema for one test and drops it after.
func newSchema(t testing.TB) string {
	t.Helper()
	ctx := context.Background()
	b := make([]byte, 8)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	schema := "t_" + hex.EncodeToString(b)
	withConn(t, func(conn *pgx.Conn) {
		if _, err := conn.Exec(ctx, `CREATE SCHEMA `+pgx.Identifier{schema}.Sanitize()); err != nil {
			t.Fatalf("create schema: %v", err)
		}
	})
	t.Cleanup(func() {
		conn, err := pgx.Connect(ctx, serverURL(t))
		if err != nil {
			t.Errorf("connect: %v", err)
			return
		}
		if _, err := conn.Exec(ctx, `DROP SCHEMA `+pgx.Identifier{schema}.Sanitize()+` CASCADE`); err != nil {
			t.Errorf("drop schema: %v", err)
		}
		if err := conn.Close(ctx); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return schema
}

// suiteBox encrypts the suite's secrets as Herald does: the contract holds
// with them sealed.
var suiteBox = func() *secretbox.Box {
	b, err := secretbox.New([]secretbox.Key{{ID: "suite", Secret: bytes.Repeat([]byte{7}, 32)}})
	if err != nil {
		panic(err)
	}
	return b
}()

// open opens a store in schema, closed at the end of the test.
func open(t testing.TB, schema string) *postgres.Store {
	t.Helper()
	s, err := openBox(t, schema, suiteBox)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	return s
}

// openBox opens a store in schema whose secrets box seals, closed at the
// end of the test.
func openBox(t testing.TB, schema string, box *secretbox.Box) (*postgres.Store, error) {
	t.Helper()
	s, err := postgres.Open(context.Background(), serverURL(t), postgres.Options{
		Box:      box,
		MaxConns: 8,
		ConfigureConn: func(c *pgx.ConnConfig) {
			c.RuntimeParams["search_path"] = schema
		},
	})
	if err != nil {
		return nil, err
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return s, nil
}

// factory gives every store of the suite its own schema.
type factory struct {
	mu      sync.Mutex
	schemas map[store.Store]string
}

func (f *factory) Open(t *testing.T) store.Store {
	schema := newSchema(t)
	s := open(t, schema)
	f.mu.Lock()
	defer f.mu.Unlock()
	f.schemas[s] = schema
	return s
}

// Peer opens another handle on s's schema.
func (f *factory) Peer(t *testing.T, s store.Store) (store.Store, error) {
	f.mu.Lock()
	schema := f.schemas[s]
	f.mu.Unlock()
	return open(t, schema), nil
}

func (f *factory) Reopen(t *testing.T, s store.Store) store.Store {
	f.mu.Lock()
	schema := f.schemas[s]
	f.mu.Unlock()
	if err := s.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	again := open(t, schema)
	f.mu.Lock()
	defer f.mu.Unlock()
	f.schemas[again] = schema
	return again
}

// OpenBox implements storetest.SecretsFactory.
func (f *factory) OpenBox(t *testing.T, box *secretbox.Box) store.Store {
	schema := newSchema(t)
	s, err := openBox(t, schema, box)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	f.remember(s, schema)
	return s
}

// OpenBoxAt implements storetest.SecretsFactory: another handle on s's
// schema.
func (f *factory) OpenBoxAt(t *testing.T, s store.Store, box *secretbox.Box) (store.Store, error) {
	f.mu.Lock()
	schema := f.schemas[s]
	f.mu.Unlock()
	p, err := openBox(t, schema, box)
	if err != nil {
		return nil, err
	}
	f.remember(p, schema)
	return p, nil
}

// Stored implements storetest.SecretsFactory.
func (f *factory) Stored(t *testing.T, s store.Store, table, column string) []string {
	f.mu.Lock()
	schema := f.schemas[s]
	f.mu.Unlock()
	var values []string
	withConn(t, func(conn *pgx.Conn) {
		rows, err := conn.Query(context.Background(), `SELECT `+pgx.Identifier{column}.Sanitize()+` FROM `+pgx.Identifier{schema, table}.Sanitize()+
			` WHERE `+pgx.Identifier{column}.Sanitize()+` <> ''`)
		if err != nil {
			t.Fatalf("read %s.%s: %v", table, column, err)
		}
		if values, err = pgx.CollectRows(rows, pgx.RowTo[string]); err != nil {
			t.Fatalf("read %s.%s: %v", table, column, err)
		}
	})
	return values
}

func (f *factory) remember(s store.Store, schema string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.schemas[s] = schema
}

func TestStore(t *testing.T) {
	storetest.Run(t, &factory{schemas: make(map[store.Store]string)})
}

// TestConcurrentOpen opens several handles on one empty schema at once, as
// replicas starting together do: the migrations are applied once, and
// every handle works.
func TestConcurrentOpen(t *testing.T) {
	t.Parallel()
	schema := newSchema(t)
	const n = 6
	stores := make([]*postgres.Store, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { stores[i] = open(t, schema) })
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	ctx := context.Background()
	for i, s := range stores {
		path := "/s" + string(rune('a'+i))
		if _, err := s.StreamCreate(ctx, &store.StreamCreateParams{Path: path, ContentType: "text/plain", Data: []byte("x")}); err != nil {
			t.Fatalf("create on handle %d: %v", i, err)
		}
	}
	list, err := stores[0].StreamList(ctx, &store.StreamListParams{})
	if err != nil || len(list) != n {
		t.Fatalf("streams seen by one handle = %d, %v", len(list), err)
	}
}

// TestChangesReachOtherHandles: a change made through one handle wakes the
// waiters and feeds the listeners of another (LISTEN/NOTIFY).
func TestChangesReachOtherHandles(t *testing.T) {
	t.Parallel()
	schema := newSchema(t)
	a, b := open(t, schema), open(t, schema)
	ctx := context.Background()
	res, err := a.StreamCreate(ctx, &store.StreamCreateParams{Path: "/n", ContentType: "text/plain"})
	if err != nil {
		t.Fatal(err)
	}
	feed, stop := b.Notifier().Listen(4)
	defer stop()
	wait := b.Notifier().Wait(res.Stream.ID)
	if _, err := a.StreamAppend(ctx, &store.StreamAppendParams{Path: "/n", ContentType: "text/plain", Data: []byte("hi")}); err != nil {
		t.Fatal(err)
	}
	<-wait // a hang here fails the test by timeout
	// The create may reach b's feed after Listen: changes come in commit
	// order, the append's last.
	for range feed.Ready() {
		changes, _ := feed.Take()
		for _, c := range changes {
			if c.StreamID != res.Stream.ID || c.Path != "/n" {
				t.Fatalf("change = %+v", c)
			}
			if !c.Created {
				if c.Tail != 2 {
					t.Fatalf("change = %+v", c)
				}
				return
			}
		}
	}
}

// TestInvalidationsReachOtherHandles: a subscription or an endpoint
// changed through one handle invalidates it in another handle's feed.
func TestInvalidationsReachOtherHandles(t *testing.T) {
	t.Parallel()
	schema := newSchema(t)
	a, b := open(t, schema), open(t, schema)
	ctx := context.Background()
	feed, stop := b.Notifier().Invalidations()
	defer stop()
	if _, err := a.SubscriptionCreate(ctx, &store.SubscriptionCreateParams{
		Subscription: store.Subscription{ID: "s1", Pattern: "/x/*", Webhook: "https://example.com/h", Secret: "whsec_x"},
	}); err != nil {
		t.Fatal(err)
	}
	storetest.ExpectInvalidations(t, feed, store.Invalidation{Kind: store.CacheSubscription, ID: "s1"})
	ep := store.Endpoint{ID: "e1", URL: "https://example.com/e", EventTypes: []string{"*"}, Streams: []string{"/**"},
		Active: true, Ordering: "none", Secret: "whsec_a"}
	if _, err := a.EndpointCreate(ctx, &store.EndpointCreateParams{Endpoint: ep}); err != nil {
		t.Fatal(err)
	}
	storetest.ExpectInvalidations(t, feed, store.Invalidation{Kind: store.CacheEndpoint, ID: "e1"})
}

// TestLostFeedResets: when a handle's LISTEN connection is cut, changes
// made meanwhile are not seen, so once it is back every waiter wakes and
// every invalidation feed says that everything is invalid.
func TestLostFeedResets(t *testing.T) {
	t.Parallel()
	schema := newSchema(t)
	a := open(t, schema)
	ctx := context.Background()
	res, err := a.StreamCreate(ctx, &store.StreamCreateParams{Path: "/r", ContentType: "text/plain"})
	if err != nil {
		t.Fatal(err)
	}
	feed, stop := a.Notifier().Invalidations()
	defer stop()
	wait := a.Notifier().Wait(res.Stream.ID)
	conn, err := pgx.Connect(ctx, serverURL(t))
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := conn.Close(ctx); err != nil {
			t.Errorf("close: %v", err)
		}
	}()
	var cut int
	if err := conn.QueryRow(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE query = $1`,
		`LISTEN `+pgx.Identifier{"herald:" + schema}.Sanitize()).Scan(&cut); err != nil || cut != 1 {
		t.Fatalf("cut %d listen connections, %v; want 1", cut, err)
	}
	if _, all := storetest.TakeInvalidations(t, feed); !all {
		t.Fatal("the feed came back without invalidating everything")
	}
	<-wait // a hang here fails the test by timeout
	// The feed works again.
	b := open(t, schema)
	again := a.Notifier().Wait(res.Stream.ID)
	if _, err := b.StreamAppend(ctx, &store.StreamAppendParams{Path: "/r", ContentType: "text/plain", Data: []byte("x")}); err != nil {
		t.Fatal(err)
	}
	<-again
}

// BenchmarkInvalidationAcrossHandles measures how stale another replica's
// cache can be: the time from the start of a subscription write through
// one handle until another handle's invalidation feed has it. It reports
// the p50 and p99 in milliseconds.
func BenchmarkInvalidationAcrossHandles(b *testing.B) {
	schema := newSchema(b)
	a, other := open(b, schema), open(b, schema)
	ctx := context.Background()
	feed, stop := other.Notifier().Invalidations()
	defer stop()
	lat := make([]time.Duration, 0, b.N)
	for i := 0; b.Loop(); i++ {
		start := time.Now()
		if _, err := a.SubscriptionCreate(ctx, &store.SubscriptionCreateParams{
			Subscription: store.Subscription{ID: "s" + strconv.Itoa(i), Pattern: "/x/*", Webhook: "https://example.com/h", Secret: "whsec_x"},
		}); err != nil {
			b.Fatal(err)
		}
		<-feed.Ready()
		lat = append(lat, time.Since(start))
		feed.Take()
	}
	slices.Sort(lat)
	ms := func(q float64) float64 { return float64(lat[int(q*float64(len(lat)-1))]) / float64(time.Millisecond) }
	b.ReportMetric(ms(0.5), "p50-ms")
	b.ReportMetric(ms(0.99), "p99-ms")
}
