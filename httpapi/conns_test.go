package httpapi

import (
	"net"
	"testing"
)

// A client is an IPv4 address or an IPv6 /64 (one host's share), so a
// host cannot escape the per-client limit by using another of its
// addresses; loopback addresses count one by one.
func TestClientOf(t *testing.T) {
	t.Parallel()
	client := func(ip string) string {
		t.Helper()
		c, ok := clientOf(&net.TCPAddr{IP: net.ParseIP(ip), Port: 1234})
		if !ok {
			t.Fatalf("clientOf(%s) failed", ip)
		}
		return c.String()
	}
	for ip, want := range map[string]string{
		"192.0.2.7":            "192.0.2.7",
		"::ffff:192.0.2.7":     "192.0.2.7",
		"2001:db8:1:2:3:4:5:6": "2001:db8:1:2::",
		"2001:db8:1:2:ffff::1": "2001:db8:1:2::",
		"2001:db8:1:3::1":      "2001:db8:1:3::",
		"127.0.0.2":            "127.0.0.2",
		"::1":                  "::1",
	} {
		if got := client(ip); got != want {
			t.Errorf("clientOf(%s) = %s, want %s", ip, got, want)
		}
	}
	if _, ok := clientOf(&net.UnixAddr{Name: "/tmp/s", Net: "unix"}); ok {
		t.Error("a Unix socket address counts as a client")
	}
}
