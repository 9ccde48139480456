package postgres_test

import (
	"context"
	"errors"
	"io"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/heraldstreams/herald/store"
	"github.com/heraldstreams/herald/store/postgres"
	"github.com/jackc/pgx/v5"
)

// cutProxy relays TCP connections to the database until it is cut: then
// it closes every connection it relays and every new one at once, as a
// database that went away does, until it is mended.
type cutProxy struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	cut    bool
	conns  map[net.Conn]bool
	wg     sync.WaitGroup
}

func newCutProxy(t *testing.T, target string) *cutProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &cutProxy{ln: ln, target: target, conns: map[net.Conn]bool{}}
	p.wg.Go(p.accept)
	t.Cleanup(func() {
		_ = ln.Close() // closing ends the accept loop; its error is the point
		p.setCut(true)
		p.wg.Wait()
	})
	return p
}

func (p *cutProxy) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		if !p.track(c) {
			_ = c.Close() // refused: the database is away
			continue
		}
		p.wg.Go(func() { p.relay(c) })
	}
}

// track remembers c unless the proxy is cut.
func (p *cutProxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cut {
		return false
	}
	p.conns[c] = true
	return true
}

func (p *cutProxy) relay(c net.Conn) {
	up, err := net.Dial("tcp", p.target)
	if err != nil || !p.track(up) {
		_ = c.Close()
		if up != nil {
			_ = up.Close()
		}
		return
	}
	done := make(chan struct{}, 2)
	pipe := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, src) // ends when either side closes
		_ = dst.Close()
		_ = src.Close()
		done <- struct{}{}
	}
	go pipe(up, c)
	go pipe(c, up)
	<-done
	<-done
}

// setCut cuts the proxy (closing what it relays) or mends it.
func (p *cutProxy) setCut(cut bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = cut
	if cut {
		for c := range p.conns {
			_ = c.Close()
		}
		clear(p.conns)
	}
}

// TestDatabaseAwayIsUnavailable: while the database cannot be reached,
// writes and reads fail with store.ErrUnavailable and write nothing; once
// it is back the same handle works again, without a reopen.
func TestDatabaseAwayIsUnavailable(t *testing.T) {
	t.Parallel()
	schema := newSchema(t)
	cfg, err := pgx.ParseConfig(serverURL(t))
	if err != nil {
		t.Fatal(err)
	}
	proxy := newCutProxy(t, net.JoinHostPort(cfg.Host, strconv.Itoa(int(cfg.Port))))
	ctx := context.Background()
	s, err := postgres.Open(ctx, serverURL(t), postgres.Options{MaxConns: 4, ConfigureConn: func(c *pgx.ConnConfig) {
		c.RuntimeParams["search_path"] = schema
		host, port, _ := net.SplitHostPort(proxy.ln.Addr().String())
		n, _ := strconv.Atoi(port)
		c.Host, c.Port, c.ConnectTimeout = host, uint16(n), 2*time.Second
		c.Fallbacks = nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	now := time.Now()
	if _, err := s.StreamCreate(ctx, &store.StreamCreateParams{Path: "/away", ContentType: "text/plain", Data: []byte("a"), Now: now}); err != nil {
		t.Fatal(err)
	}

	proxy.setCut(true)
	_, err = s.StreamAppend(ctx, &store.StreamAppendParams{Path: "/away", ContentType: "text/plain", Data: []byte("b"), Now: now})
	if !errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("append while away = %v, want ErrUnavailable", err)
	}
	if _, err := s.StreamGet(ctx, &store.StreamGetParams{Path: "/away", Now: now}); !errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("read while away = %v, want ErrUnavailable", err)
	}
	if _, err := s.StreamRead(ctx, &store.StreamReadParams{Path: "/away", From: -1, Now: now}); !errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("catch-up read while away = %v, want ErrUnavailable", err)
	}
	if err := s.ReplicaBeat(ctx, &store.ReplicaBeatParams{Now: now}); !errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("beat while away = %v, want ErrUnavailable", err)
	}

	proxy.setCut(false)
	if _, err := s.StreamAppend(ctx, &store.StreamAppendParams{Path: "/away", ContentType: "text/plain", Data: []byte("c"), Now: now}); err != nil {
		t.Fatalf("append once back: %v", err)
	}
	res, err := s.StreamRead(ctx, &store.StreamReadParams{Path: "/away", From: -1, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	if got := string(res.Data); got != "ac" {
		t.Fatalf("the stream holds %q, want %q (nothing of the refused appends)", got, "ac")
	}
	// A statement's own fault is not the database being away.
	_, err = s.StreamCreate(ctx, &store.StreamCreateParams{Path: "/away", ContentType: "application/json", Now: now})
	if errors.Is(err, store.ErrUnavailable) || !errors.Is(err, store.ErrStreamExists) {
		t.Fatalf("a conflicting create = %v", err)
	}
}
