package httpapi

import (
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
)

// DefaultMaxConnections is the default of Config.MaxConnections.
const DefaultMaxConnections = 10000

// DefaultMaxClientConnections is the default of
// Config.MaxClientConnections for a MaxConnections of maxConns: a quarter
// of it (at least one), so that one client address never holds every
// connection.
func DefaultMaxClientConnections(maxConns int) int {
	return max(maxConns/4, 1)
}

// LimitListener returns ln limited to the server's MaxConnections open
// connections, and to MaxClientConnections of them from one client
// address (an IPv4 address, or an IPv6 /64: one host's share of
// addresses). A connection accepted beyond either limit is closed at
// once, without an answer (reading its request first would be the very
// work the limit is there to refuse), and counted; the connections open
// and those refused are in the server's metrics. Serve Herald on the
// listener it returns.
//
// The per-client limit keeps one client from taking every connection:
// connections that never send a request are closed by the http.Server's
// header timeout, but a client can open new ones as fast as old ones
// close, and until then everyone else is locked out.
func (s *Server) LimitListener(ln net.Listener) net.Listener {
	return &limitListener{Listener: ln, s: s, clients: make(map[netip.Addr]int)}
}

// limitListener counts the connections it hands out and refuses those
// beyond the limits.
type limitListener struct {
	net.Listener
	s *Server

	mu      sync.Mutex
	clients map[netip.Addr]int // open connections by client (clientOf)
}

// Accept implements net.Listener.
func (l *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if l.s.connsOpen.Add(1) > l.s.maxConnections {
			l.refuse(c, &l.s.connsRefused)
			continue
		}
		client, ok := clientOf(c.RemoteAddr())
		if !ok {
			// Not TCP (a test's pipe, a Unix socket): one client.
			return &countedConn{Conn: c, open: &l.s.connsOpen}, nil
		}
		l.mu.Lock()
		n := l.clients[client]
		if int64(n) >= l.s.maxClientConnections {
			l.mu.Unlock()
			l.refuse(c, &l.s.clientConnsRefused)
			continue
		}
		l.clients[client] = n + 1
		l.mu.Unlock()
		return &countedConn{Conn: c, open: &l.s.connsOpen, release: func() { l.release(client) }}, nil
	}
}

// refuse closes a connection beyond a limit and counts it in refused.
func (l *limitListener) refuse(c net.Conn, refused *atomic.Int64) {
	l.s.connsOpen.Add(-1)
	refused.Add(1)
	// The connection is refused either way; an error closing it changes
	// nothing.
	_ = c.Close()
}

// release forgets one closed connection of client.
func (l *limitListener) release(client netip.Addr) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if n := l.clients[client]; n > 1 {
		l.clients[client] = n - 1
	} else {
		delete(l.clients, client)
	}
}

// clientOf is the client a connection's remote address counts against:
// its IPv4 address, or its IPv6 address's /64 (a host is given a whole
// /64, so counting addresses would let it open connections without end).
func clientOf(addr net.Addr) (netip.Addr, bool) {
	ta, ok := addr.(*net.TCPAddr)
	if !ok {
		return netip.Addr{}, false
	}
	ip, ok := netip.AddrFromSlice(ta.IP)
	if !ok {
		return netip.Addr{}, false
	}
	ip = ip.Unmap()
	if ip.Is6() && !ip.IsLoopback() {
		p, err := ip.Prefix(64)
		if err != nil {
			return netip.Addr{}, false
		}
		ip = p.Addr()
	}
	return ip, true
}

// countedConn is an accepted connection, counted until it is closed.
type countedConn struct {
	net.Conn
	open    *atomic.Int64
	release func() // nil: not counted against a client
	closed  sync.Once
}

// Close implements net.Conn; the connection stops counting at its first
// Close.
func (c *countedConn) Close() error {
	err := c.Conn.Close()
	c.closed.Do(func() {
		c.open.Add(-1)
		if c.release != nil {
			c.release()
		}
	})
	return err
}

// CloseWrite half-closes a TCP connection: net/http does so before closing
// a connection after an error response, so the client reads the response
// before the reset.
func (c *countedConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}
