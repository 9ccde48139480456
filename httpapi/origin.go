package httpapi

import (
	"errors"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
)

// Origin is a browser origin: scheme, host and port, compared as a whole
// (RFC 6454). The port is always explicit (80 for http, 443 for https
// when the origin leaves it out), the scheme and host are lower case.
type Origin struct {
	Scheme string
	Host   string // a name, an IPv4 address, or an IPv6 address without brackets
	Port   string
}

// errNotOrigin: a string that is not an http(s) origin.
var errNotOrigin = errors.New("not an origin (scheme://host[:port], http or https)")

// ParseOrigin parses an origin as browsers send it in the Origin header
// ("https://app.example", "http://localhost:5173"). "null", paths,
// queries, user information and schemes other than http and https are
// errors.
func ParseOrigin(s string) (Origin, error) {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil ||
		(u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" || u.Opaque != "" {
		return Origin{}, errNotOrigin
	}
	o := Origin{Scheme: strings.ToLower(u.Scheme), Host: strings.ToLower(u.Hostname()), Port: u.Port()}
	if o.Host == "" {
		return Origin{}, errNotOrigin
	}
	if o.Port == "" {
		o.Port = defaultPort(o.Scheme)
	}
	return o, nil
}

// String returns the origin as an Origin header spells it.
func (o Origin) String() string {
	if o.Port == defaultPort(o.Scheme) {
		return o.Scheme + "://" + hostForURL(o.Host)
	}
	return o.Scheme + "://" + net.JoinHostPort(o.Host, o.Port)
}

func defaultPort(scheme string) string {
	if scheme == "https" {
		return "443"
	}
	return "80"
}

func hostForURL(host string) string {
	if strings.Contains(host, ":") {
		return "[" + host + "]"
	}
	return host
}

// isLoopback reports whether the origin's host is the machine itself:
// localhost or a loopback address. Only a process on the machine can
// serve a page there.
func (o Origin) isLoopback() bool {
	if o.Host == "localhost" {
		return true
	}
	a, err := netip.ParseAddr(o.Host)
	return err == nil && a.Unmap().IsLoopback()
}

// originPolicy decides which browser origins Herald answers.
type originPolicy struct {
	// any: "*" was configured.
	any bool
	// listed are the configured origins (--cors-origins).
	listed []Origin
}

// newOriginPolicy parses the configured origins; "*" stands for any.
// An entry that is not an origin is ignored (the command line refuses
// it before the server is built).
func newOriginPolicy(origins []string) originPolicy {
	var p originPolicy
	for _, s := range origins {
		if s == "*" {
			p.any = true
			continue
		}
		if o, err := ParseOrigin(s); err == nil {
			p.listed = append(p.listed, o)
		}
	}
	return p
}

// requestOrigin is the origin a request reached Herald at: the
// connection's scheme and the Host header. A TLS-terminating proxy in
// front hides the scheme: its public origin is configured
// (--public-url or --cors-origins) instead.
func requestOrigin(r *http.Request) (Origin, bool) {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	o, err := ParseOrigin(scheme + "://" + r.Host)
	return o, err == nil
}

// originAllowed reports whether a browser origin may call Herald across
// origins: Herald's own origin (a page Herald serves), a configured one,
// and, with access control off, any loopback origin (a page a developer
// serves on the same machine). Scheme, host and port must all match.
func (s *Server) originAllowed(origin string, r *http.Request) bool {
	o, err := ParseOrigin(origin)
	if err != nil {
		return false // "null" (sandboxed frames, file: pages) and garbage
	}
	if own, ok := requestOrigin(r); ok && own == o {
		return true
	}
	if !s.auth.Enabled() && o.isLoopback() {
		return true
	}
	if s.origins.any {
		return true
	}
	for _, a := range s.origins.listed {
		if a == o {
			return true
		}
	}
	return false
}

// preflight answers a CORS preflight request (its origin was checked).
func (s *Server) preflight(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	if _, cors := r.Header["Origin"]; !cors {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	h["Access-Control-Allow-Methods"] = valPreflight
	if req := r.Header.Get("Access-Control-Request-Headers"); req != "" {
		// Allow what the browser asks for: the origin is allowed, and
		// Herald has no header such a client must not send.
		h.Set("Access-Control-Allow-Headers", req)
	} else {
		h["Access-Control-Allow-Headers"] = valAllowHeader
	}
	h["Access-Control-Max-Age"] = valMaxAge
	w.WriteHeader(http.StatusNoContent)
}
