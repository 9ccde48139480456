package httpapi

import (
	"net"
	"sync"
	"sync/atomic"
)

// DefaultMaxConnections is the default of Config.MaxConnections.
const DefaultMaxConnections = 10000

// LimitListener returns ln limited to the server's MaxConnections open
// connections. A connection accepted beyond the limit is closed at once,
// without an answer (reading its request first would be the very work the
// limit is there to refuse), and counted; the connections open and those
// refused are in the server's metrics. Serve Herald on the listener it
// returns.
func (s *Server) LimitListener(ln net.Listener) net.Listener {
	return &limitListener{Listener: ln, s: s}
}

// limitListener counts the connections it hands out and refuses those
// beyond the limit.
type limitListener struct {
	net.Listener
	s *Server
}

// Accept implements net.Listener.
func (l *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if l.s.connsOpen.Add(1) <= l.s.maxConnections {
			return &countedConn{Conn: c, open: &l.s.connsOpen}, nil
		}
		l.s.connsOpen.Add(-1)
		l.s.connsRefused.Add(1)
		// The connection is refused either way; an error closing it
		// changes nothing.
		_ = c.Close()
	}
}

// countedConn is an accepted connection, counted until it is closed.
type countedConn struct {
	net.Conn
	open   *atomic.Int64
	closed sync.Once
}

// Close implements net.Conn; the connection stops counting at its first
// Close.
func (c *countedConn) Close() error {
	err := c.Conn.Close()
	c.closed.Do(func() { c.open.Add(-1) })
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
