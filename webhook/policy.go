package webhook

import (
	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"strings"
)

// ErrURLRefused is matched (errors.Is) by every *RefusedError: Herald will
// not send to the destination. The API maps it to 400 with code
// "URL_REFUSED" and the error's Reason.
var ErrURLRefused = errors.New("webhook: destination refused")

// Reason says why a destination was refused. It is a stable, machine
// readable code.
type Reason string

// Reasons for refusing a destination.
const (
	// ReasonInvalidURL: the URL does not parse, is not absolute, is too
	// long, or its host is not a valid host name or address.
	ReasonInvalidURL Reason = "invalid_url"
	// ReasonScheme: the scheme is neither https nor http, or it is http to
	// an address outside the allow list.
	ReasonScheme Reason = "scheme"
	// ReasonCredentials: the URL carries user:password; custom headers are
	// the place for credentials.
	ReasonCredentials Reason = "credentials"
	// ReasonUnresolvable: the host name has no address.
	ReasonUnresolvable Reason = "unresolvable"
	// ReasonPrivate: RFC 1918 or IPv6 unique local (fc00::/7).
	ReasonPrivate Reason = "private"
	// ReasonLoopback: 127.0.0.0/8, ::1 or a localhost name.
	ReasonLoopback Reason = "loopback"
	// ReasonLinkLocal: 169.254.0.0/16 or fe80::/10.
	ReasonLinkLocal Reason = "link_local"
	// ReasonSharedAddress: carrier-grade NAT space, 100.64.0.0/10.
	ReasonSharedAddress Reason = "shared_address"
	// ReasonMetadata: a cloud metadata service address.
	ReasonMetadata Reason = "metadata"
	// ReasonMulticast: a multicast address.
	ReasonMulticast Reason = "multicast"
	// ReasonUnspecified: 0.0.0.0/8 or ::.
	ReasonUnspecified Reason = "unspecified"
	// ReasonReserved: documentation, benchmarking, IETF protocol, 240/4,
	// broadcast, discard, Teredo, deprecated site-local and IPv4-compatible
	// ranges.
	ReasonReserved Reason = "reserved"
)

// RefusedError says that Herald will not send to a destination, and why.
type RefusedError struct {
	Reason Reason
	// Host is the URL's host name or address, "" when the URL did not
	// parse.
	Host string
	// Addr is the refused address, invalid when the refusal is not about an
	// address.
	Addr netip.Addr
	// Detail is a human readable explanation.
	Detail string
	// Err is the underlying error, if any (the resolver's, for
	// ReasonUnresolvable: a *net.DNSError says whether it is temporary).
	Err error
}

func (e *RefusedError) Error() string {
	var b strings.Builder
	b.WriteString("webhook: destination refused (")
	b.WriteString(string(e.Reason))
	b.WriteString("): ")
	b.WriteString(e.Detail)
	return b.String()
}

// Is makes errors.Is(err, ErrURLRefused) true.
func (e *RefusedError) Is(target error) bool { return target == ErrURLRefused }

// Unwrap returns the underlying error, if any.
func (e *RefusedError) Unwrap() error { return e.Err }

// maxURLLength bounds a destination URL (2048 characters, a common limit of
// browsers and proxies).
const maxURLLength = 2048

// refusedRange is one range Herald refuses by default.
type refusedRange struct {
	prefix netip.Prefix
	reason Reason
	what   string
}

// refusedRanges is checked in order; the first match wins, so narrow ranges
// (metadata) come before the ranges that contain them.
var refusedRanges = []refusedRange{
	{netip.MustParsePrefix("169.254.169.254/32"), ReasonMetadata, "cloud metadata address"},
	{netip.MustParsePrefix("fd00:ec2::254/128"), ReasonMetadata, "cloud metadata address"},
	{netip.MustParsePrefix("0.0.0.0/8"), ReasonUnspecified, "\"this network\" address"},
	{netip.MustParsePrefix("10.0.0.0/8"), ReasonPrivate, "private address (RFC 1918)"},
	{netip.MustParsePrefix("100.64.0.0/10"), ReasonSharedAddress, "carrier-grade NAT address"},
	{netip.MustParsePrefix("127.0.0.0/8"), ReasonLoopback, "loopback address"},
	{netip.MustParsePrefix("169.254.0.0/16"), ReasonLinkLocal, "link-local address"},
	{netip.MustParsePrefix("172.16.0.0/12"), ReasonPrivate, "private address (RFC 1918)"},
	// 192.0.0.0/24 holds IETF protocol assignments and one cloud's metadata
	// service (192.0.0.192).
	{netip.MustParsePrefix("192.0.0.0/24"), ReasonReserved, "IETF protocol assignment address"},
	{netip.MustParsePrefix("192.0.2.0/24"), ReasonReserved, "documentation address"},
	{netip.MustParsePrefix("192.88.99.0/24"), ReasonReserved, "6to4 relay address"},
	{netip.MustParsePrefix("192.168.0.0/16"), ReasonPrivate, "private address (RFC 1918)"},
	{netip.MustParsePrefix("198.18.0.0/15"), ReasonReserved, "benchmarking address"},
	{netip.MustParsePrefix("198.51.100.0/24"), ReasonReserved, "documentation address"},
	{netip.MustParsePrefix("203.0.113.0/24"), ReasonReserved, "documentation address"},
	{netip.MustParsePrefix("224.0.0.0/4"), ReasonMulticast, "multicast address"},
	{netip.MustParsePrefix("240.0.0.0/4"), ReasonReserved, "reserved or broadcast address"},
	{netip.MustParsePrefix("::/128"), ReasonUnspecified, "unspecified address"},
	{netip.MustParsePrefix("::1/128"), ReasonLoopback, "loopback address"},
	{netip.MustParsePrefix("::/96"), ReasonReserved, "IPv4-compatible address"},
	{netip.MustParsePrefix("64:ff9b:1::/48"), ReasonReserved, "local-use NAT64 address"},
	{netip.MustParsePrefix("100::/64"), ReasonReserved, "discard address"},
	{netip.MustParsePrefix("2001:db8::/32"), ReasonReserved, "documentation address"},
	{netip.MustParsePrefix("2001::/32"), ReasonReserved, "Teredo address"},
	{netip.MustParsePrefix("fc00::/7"), ReasonPrivate, "unique local address"},
	{netip.MustParsePrefix("fe80::/10"), ReasonLinkLocal, "link-local address"},
	{netip.MustParsePrefix("fec0::/10"), ReasonReserved, "site-local address"},
	{netip.MustParsePrefix("ff00::/8"), ReasonMulticast, "multicast address"},
}

// IPv6 ranges that embed an IPv4 address: the embedded address is checked
// as if it were dialed directly.
var (
	nat64Prefix = netip.MustParsePrefix("64:ff9b::/96")
	sixToFour   = netip.MustParsePrefix("2002::/16")
)

// Policy decides which destinations Herald may contact. The zero value
// refuses every range in the package documentation and allows http:// to
// nothing. It is pure: it never resolves names.
type Policy struct {
	// AllowCIDRs are ranges that are allowed even though they would be
	// refused, and the only ranges that http:// may reach. An allowed range
	// overrides every refusal, metadata addresses included: allow only what
	// you mean (typically 127.0.0.0/8,::1/128 for development).
	AllowCIDRs []netip.Prefix
}

// Allowed reports whether addr is inside one of the allow-list ranges.
func (p Policy) Allowed(addr netip.Addr) bool {
	addr = addr.WithZone("")
	un := addr.Unmap()
	for _, pf := range p.AllowCIDRs {
		if !pf.IsValid() {
			continue
		}
		if pf.Contains(addr) || pf.Contains(un) {
			return true
		}
	}
	return false
}

// CheckAddr returns nil when Herald may connect to addr over https, or a
// *RefusedError saying which refused range it is in. IPv4-mapped, NAT64 and
// 6to4 IPv6 addresses are judged by the IPv4 address they carry.
func (p Policy) CheckAddr(addr netip.Addr) error {
	if e := p.checkAddr(addr); e != nil {
		return e
	}
	return nil
}

func (p Policy) checkAddr(addr netip.Addr) *RefusedError {
	if !addr.IsValid() {
		return &RefusedError{Reason: ReasonInvalidURL, Detail: "no address"}
	}
	if p.Allowed(addr) {
		return nil
	}
	if r, what, ok := refusal(addr); ok {
		return &RefusedError{Reason: r, Addr: addr, Detail: fmt.Sprintf("%s is a %s", addr, what)}
	}
	return nil
}

// checkPlainHTTP returns nil when http:// may reach addr: only allow-list
// ranges may.
func (p Policy) checkPlainHTTP(addr netip.Addr) *RefusedError {
	if p.Allowed(addr) {
		return nil
	}
	return &RefusedError{
		Reason: ReasonScheme, Addr: addr,
		Detail: fmt.Sprintf("http:// is only allowed to addresses in the allow list, and %s is not in it; use https://", addr),
	}
}

// checkDial is the check for an address about to be dialed.
func (p Policy) checkDial(addr netip.Addr, plainHTTP bool) *RefusedError {
	if plainHTTP {
		return p.checkPlainHTTP(addr)
	}
	return p.checkAddr(addr)
}

// refusal finds the refused range of addr, if any.
func refusal(addr netip.Addr) (Reason, string, bool) {
	addr = addr.WithZone("").Unmap()
	if addr.Is6() && (nat64Prefix.Contains(addr) || sixToFour.Contains(addr)) {
		if r, what, ok := refusal(embeddedIPv4(addr)); ok {
			return r, what + " (embedded in an IPv6 address)", true
		}
		return "", "", false
	}
	for _, rr := range refusedRanges {
		if rr.prefix.Contains(addr) {
			return rr.reason, rr.what, true
		}
	}
	return "", "", false
}

// embeddedIPv4 extracts the IPv4 address of a NAT64 (last 32 bits) or 6to4
// (bits 16 to 48) address.
func embeddedIPv4(addr netip.Addr) netip.Addr {
	b := addr.As16()
	if sixToFour.Contains(addr) {
		return netip.AddrFrom4([4]byte{b[2], b[3], b[4], b[5]})
	}
	return netip.AddrFrom4([4]byte{b[12], b[13], b[14], b[15]})
}

// CheckURL checks everything about a destination URL that needs no DNS: it
// parses, is absolute, is https (or http to an allowed address literal or a
// name, which the caller must then resolve into the allow list), has no
// credentials, and its host is a valid name or an address that CheckAddr
// accepts. localhost names count as loopback addresses.
//
// It returns the parsed URL, or a *RefusedError.
func (p Policy) CheckURL(raw string) (*url.URL, error) {
	if len(raw) > maxURLLength {
		return nil, &RefusedError{Reason: ReasonInvalidURL, Detail: fmt.Sprintf("URL is longer than %d bytes", maxURLLength)}
	}
	u, err := url.Parse(raw)
	if err != nil {
		return nil, &RefusedError{Reason: ReasonInvalidURL, Detail: "URL does not parse: " + parseErrDetail(err)}
	}
	if u.Scheme != "https" && u.Scheme != "http" {
		if u.Scheme == "" {
			return nil, &RefusedError{Reason: ReasonInvalidURL, Detail: "URL must be absolute (https://host/path)"}
		}
		return nil, &RefusedError{Reason: ReasonScheme, Detail: fmt.Sprintf("scheme %q is not allowed; use https://", u.Scheme)}
	}
	if u.Opaque != "" {
		return nil, &RefusedError{Reason: ReasonInvalidURL, Detail: "URL must be of the form https://host/path"}
	}
	if u.User != nil {
		return nil, &RefusedError{Reason: ReasonCredentials, Host: u.Hostname(), Detail: "credentials in the URL are not allowed; send them in a custom header"}
	}
	host := u.Hostname()
	if host == "" {
		return nil, &RefusedError{Reason: ReasonInvalidURL, Detail: "URL has no host"}
	}
	if port := u.Port(); port != "" && !validPort(port) {
		return nil, &RefusedError{Reason: ReasonInvalidURL, Host: host, Detail: fmt.Sprintf("port %q is not a number from 1 to 65535", port)}
	}
	if addr, err := netip.ParseAddr(host); err == nil {
		if addr.Zone() != "" {
			return nil, &RefusedError{Reason: ReasonInvalidURL, Host: host, Detail: "addresses with a zone are not allowed"}
		}
		if e := p.checkURLAddr(addr, u.Scheme); e != nil {
			e.Host = host
			return nil, e
		}
		return u, nil
	}
	if strings.HasPrefix(u.Host, "[") {
		return nil, &RefusedError{Reason: ReasonInvalidURL, Host: host, Detail: fmt.Sprintf("%q is not a valid IPv6 address", host)}
	}
	if detail := hostNameProblem(host); detail != "" {
		return nil, &RefusedError{Reason: ReasonInvalidURL, Host: host, Detail: detail}
	}
	if isLocalhost(host) {
		// localhost never reaches DNS on most systems: judge it as the
		// loopback address it names.
		for _, addr := range []netip.Addr{netip.MustParseAddr("127.0.0.1"), netip.IPv6Loopback()} {
			if e := p.checkURLAddr(addr, u.Scheme); e == nil {
				return u, nil
			}
		}
		return nil, &RefusedError{Reason: ReasonLoopback, Host: host, Detail: fmt.Sprintf("%s is a loopback name", host)}
	}
	return u, nil
}

// checkURLAddr checks an address literal of a URL for its scheme.
func (p Policy) checkURLAddr(addr netip.Addr, scheme string) *RefusedError {
	if e := p.checkAddr(addr); e != nil {
		return e
	}
	if scheme == "http" {
		return p.checkPlainHTTP(addr)
	}
	return nil
}

// parseErrDetail strips the URL from a url.Error so a long or hostile URL is
// not echoed back twice.
func parseErrDetail(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err.Error()
	}
	return err.Error()
}

func validPort(s string) bool {
	if len(s) == 0 || len(s) > 5 {
		return false
	}
	n := 0
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
		n = n*10 + int(s[i]-'0')
	}
	return n >= 1 && n <= 65535
}

func isLocalhost(host string) bool {
	h := strings.TrimSuffix(strings.ToLower(host), ".")
	return h == "localhost" || strings.HasSuffix(h, ".localhost")
}

// hostNameProblem returns why host is not a valid DNS host name, or "".
// Names whose last label is a number are refused as the URL standard reads
// them as IPv4 addresses in legacy forms (0x7f.1, 2130706433), which some
// resolvers would turn into a loopback address.
func hostNameProblem(host string) string {
	name := strings.TrimSuffix(host, ".")
	if name == "" || len(name) > 253 {
		return fmt.Sprintf("%q is not a valid host name", host)
	}
	labels := strings.Split(name, ".")
	for _, l := range labels {
		if len(l) == 0 || len(l) > 63 {
			return fmt.Sprintf("%q is not a valid host name: empty or over-long label", host)
		}
		for i := 0; i < len(l); i++ {
			c := l[i]
			switch {
			case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '_':
			case c == '-' && i > 0 && i < len(l)-1:
			case c >= 0x80:
				return fmt.Sprintf("%q is not an ASCII host name; use its punycode (xn--) form", host)
			default:
				return fmt.Sprintf("%q is not a valid host name: character %q", host, c)
			}
		}
	}
	if numericLabel(labels[len(labels)-1]) {
		return fmt.Sprintf("%q is not a valid host name: it ends in a number (a legacy IPv4 form?)", host)
	}
	return ""
}

// numericLabel reports whether l is a decimal or 0x-hex number.
func numericLabel(l string) bool {
	s := strings.ToLower(l)
	digits := "0123456789"
	if strings.HasPrefix(s, "0x") {
		s = s[2:]
		digits = "0123456789abcdef"
		if s == "" {
			return true
		}
	}
	for i := 0; i < len(s); i++ {
		if !strings.ContainsRune(digits, rune(s[i])) {
			return false
		}
	}
	return true
}

// ParseCIDRList parses the --webhook-allow-cidrs flag: comma-separated
// prefixes such as "127.0.0.0/8,::1/128". A bare address means that one
// address. Blank entries are skipped; "" gives an empty list. Prefixes are
// returned masked ("10.1.2.3/8" becomes 10.0.0.0/8).
func ParseCIDRList(s string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		var pf netip.Prefix
		if strings.Contains(part, "/") {
			p, err := netip.ParsePrefix(part)
			if err != nil {
				return nil, fmt.Errorf("webhook: allow list entry %q is not a CIDR prefix: %w", part, err)
			}
			pf = p.Masked()
		} else {
			a, err := netip.ParseAddr(part)
			if err != nil {
				return nil, fmt.Errorf("webhook: allow list entry %q is not an address or CIDR prefix: %w", part, err)
			}
			if a.Zone() != "" {
				return nil, fmt.Errorf("webhook: allow list entry %q has a zone", part)
			}
			pf = netip.PrefixFrom(a, a.BitLen())
		}
		out = append(out, pf)
	}
	return out, nil
}
