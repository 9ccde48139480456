package webhook

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"syscall"
	"time"
)

// Resolver looks up the addresses of a host name. *net.Resolver implements
// it; a deployment with its own DNS (or a test) may pass another.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

var _ Resolver = (*net.Resolver)(nil)

// guardedDialer resolves a host itself, checks every address against the
// policy and dials the checked address literally, so the address that is
// connected to is the address that was checked: a DNS answer that changes
// between validation and sending (rebinding) cannot reach a refused
// address. The net.Dialer's Control hook checks the socket's address once
// more, just before connect.
type guardedDialer struct {
	policy   Policy
	resolver Resolver
	// plainHTTP: this dialer serves http:// requests, which may reach only
	// allow-list addresses.
	plainHTTP bool
	dialer    net.Dialer
}

func newGuardedDialer(policy Policy, resolver Resolver, plainHTTP bool, timeout time.Duration) *guardedDialer {
	d := &guardedDialer{policy: policy, resolver: resolver, plainHTTP: plainHTTP}
	d.dialer = net.Dialer{
		Timeout:   timeout,
		KeepAlive: 30 * time.Second,
		Control:   d.control,
	}
	return d
}

// DialContext is the http.Transport dial function.
func (d *guardedDialer) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	host, portStr, err := net.SplitHostPort(address)
	if err != nil {
		return nil, &RefusedError{Reason: ReasonInvalidURL, Detail: fmt.Sprintf("dial address %q: %v", address, err)}
	}
	port, err := strconv.ParseUint(portStr, 10, 16)
	if err != nil {
		return nil, &RefusedError{Reason: ReasonInvalidURL, Host: host, Detail: fmt.Sprintf("port %q is not a number from 1 to 65535", portStr)}
	}
	addrs, err := resolve(ctx, d.resolver, host)
	if err != nil {
		return nil, err
	}
	addrs, err = allowedAddrs(d.policy, host, addrs, d.plainHTTP)
	if err != nil {
		return nil, err
	}
	var errs []error
	for _, a := range addrs {
		conn, err := d.dialer.DialContext(ctx, network, netip.AddrPortFrom(a, uint16(port)).String())
		if err == nil {
			return conn, nil
		}
		errs = append(errs, err)
		if ctx.Err() != nil {
			break
		}
	}
	return nil, errors.Join(errs...)
}

// allowedAddrs keeps the addresses that may be dialed, unmapped. Refused
// addresses are dropped, never dialed; when none is left the first refusal
// is returned.
func allowedAddrs(p Policy, host string, addrs []netip.Addr, plainHTTP bool) ([]netip.Addr, error) {
	var first *RefusedError
	out := make([]netip.Addr, 0, len(addrs))
	for _, a := range addrs {
		if e := p.checkDial(a, plainHTTP); e != nil {
			if first == nil {
				first = e
				first.Host = host
			}
			continue
		}
		out = append(out, a.Unmap())
	}
	if len(out) == 0 {
		if first == nil {
			return nil, &RefusedError{Reason: ReasonUnresolvable, Host: host, Detail: fmt.Sprintf("%s has no address", host)}
		}
		return nil, first
	}
	return out, nil
}

// control runs just before connect(2) with the socket's remote address.
func (d *guardedDialer) control(_, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return &RefusedError{Reason: ReasonInvalidURL, Detail: fmt.Sprintf("dial address %q is not an address", address)}
	}
	if e := d.policy.checkDial(ap.Addr(), d.plainHTTP); e != nil {
		return e
	}
	return nil
}

// resolve returns host's addresses: host itself when it is an address
// literal, else the resolver's answer. Failure to resolve is a refusal with
// ReasonUnresolvable that wraps the resolver's error.
func resolve(ctx context.Context, r Resolver, host string) ([]netip.Addr, error) {
	if a, err := netip.ParseAddr(host); err == nil {
		return []netip.Addr{a}, nil
	}
	if isLocalhost(host) {
		// Never ask DNS about localhost: answer what it means.
		return []netip.Addr{netip.MustParseAddr("127.0.0.1"), netip.IPv6Loopback()}, nil
	}
	addrs, err := r.LookupNetIP(ctx, "ip", host)
	if err != nil {
		if ctxErr := ctx.Err(); ctxErr != nil {
			return nil, ctxErr
		}
		return nil, &RefusedError{Reason: ReasonUnresolvable, Host: host, Detail: fmt.Sprintf("%s does not resolve: %v", host, err), Err: err}
	}
	if len(addrs) == 0 {
		return nil, &RefusedError{Reason: ReasonUnresolvable, Host: host, Detail: fmt.Sprintf("%s has no address", host)}
	}
	return addrs, nil
}

// BrokerDialer dials a message broker's TCP address (host:port) under the
// same address policy as webhooks, checked at every connection: the
// broker's own address, and every other address its cluster tells the
// client of. A plaintext connection (tls false) may reach only allow-list
// addresses, as http:// may; TLS is the caller's, over the connection.
func (s *Sender) BrokerDialer(tls bool) func(ctx context.Context, network, address string) (net.Conn, error) {
	d := newGuardedDialer(s.policy, s.resolver, !tls, s.timeout)
	return d.DialContext
}

// ValidateBrokerAddress checks a broker's host:port when a destination is
// configured, as ValidateURL checks a URL: the name resolves and at least
// one of its addresses is allowed (for a plaintext connection, inside the
// allow list). It returns nil, a *RefusedError, or ctx's error. Passing is
// not a promise: the address is checked again at every dial.
func (s *Sender) ValidateBrokerAddress(ctx context.Context, hostport string, tls bool) error {
	host, port, err := net.SplitHostPort(hostport)
	if err != nil || host == "" {
		return &RefusedError{Reason: ReasonInvalidURL, Detail: fmt.Sprintf("%q is not host:port", hostport)}
	}
	if !validPort(port) {
		return &RefusedError{Reason: ReasonInvalidURL, Host: host, Detail: fmt.Sprintf("port %q is not a number from 1 to 65535", port)}
	}
	if _, err := netip.ParseAddr(host); err != nil {
		if detail := hostNameProblem(host); detail != "" && !isLocalhost(host) {
			return &RefusedError{Reason: ReasonInvalidURL, Host: host, Detail: detail}
		}
	}
	addrs, err := resolve(ctx, s.resolver, host)
	if err != nil {
		return err
	}
	if _, err := allowedAddrs(s.policy, host, addrs, false); err != nil {
		return err
	}
	if !tls {
		if _, err := allowedAddrs(s.policy, host, addrs, true); err != nil {
			return &RefusedError{Reason: ReasonScheme, Host: host,
				Detail: fmt.Sprintf("a connection without TLS may reach only addresses in the allow list, and %s is not in it; turn TLS on", host)}
		}
	}
	return nil
}
