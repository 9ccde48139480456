package webhook

import (
	"errors"
	"net"
	"sync/atomic"
	"testing"
)

// listen accepts connections on loopback and counts them.
func listen(t *testing.T) (string, *atomic.Int64) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	var n atomic.Int64
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			n.Add(1)
			_ = c.Close()
		}
	}()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	return port, &n
}

func TestBrokerAddressRefusedWithoutAllowList(t *testing.T) {
	t.Parallel()
	port, hits := listen(t)
	s := New(Config{})
	defer s.Close()
	for _, tls := range []bool{true, false} {
		err := s.ValidateBrokerAddress(t.Context(), "127.0.0.1:"+port, tls)
		var re *RefusedError
		if !errors.As(err, &re) || !errors.Is(err, ErrURLRefused) {
			t.Fatalf("validate loopback (tls %v) = %v, want a refusal", tls, err)
		}
		if _, err := s.BrokerDialer(tls)(t.Context(), "tcp", "localhost:"+port); !errors.Is(err, ErrURLRefused) {
			t.Fatalf("dial loopback (tls %v) = %v, want a refusal", tls, err)
		}
	}
	if err := s.ValidateBrokerAddress(t.Context(), "10.0.0.1:9092", true); !errors.Is(err, ErrURLRefused) {
		t.Fatalf("validate a private address = %v", err)
	}
	if n := hits.Load(); n != 0 {
		t.Fatalf("%d connections reached the refused address", n)
	}
}

func TestBrokerAddressAllowedByTheAllowList(t *testing.T) {
	t.Parallel()
	port, _ := listen(t)
	s := New(Config{AllowCIDRs: loopbackAllow})
	defer s.Close()
	if err := s.ValidateBrokerAddress(t.Context(), "127.0.0.1:"+port, false); err != nil {
		t.Fatal(err)
	}
	c, err := s.BrokerDialer(false)(t.Context(), "tcp", "127.0.0.1:"+port)
	if err != nil {
		t.Fatal(err)
	}
	_ = c.Close()
	// A public address over plaintext is refused: only the allow list
	// may be reached without TLS.
	err = s.ValidateBrokerAddress(t.Context(), "93.184.216.34:4222", false)
	var re *RefusedError
	if !errors.As(err, &re) || re.Reason != ReasonScheme {
		t.Fatalf("plaintext to a public address = %v, want a scheme refusal", err)
	}
	if err := s.ValidateBrokerAddress(t.Context(), "93.184.216.34:4222", true); err != nil {
		t.Fatalf("TLS to a public address = %v", err)
	}
	for _, bad := range []string{"nohost", ":9092", "h:0", "h:99999"} {
		if err := s.ValidateBrokerAddress(t.Context(), bad, true); !errors.Is(err, ErrURLRefused) {
			t.Fatalf("%q = %v, want a refusal", bad, err)
		}
	}
}

// TestBrokerDialerChecksAtConnectTime: a name that resolved to a public
// address when the destination was validated and to loopback later is
// refused when the client connects.
func TestBrokerDialerChecksAtConnectTime(t *testing.T) {
	t.Parallel()
	port, hits := listen(t)
	s := New(Config{Resolver: rebinding()})
	defer s.Close()
	if err := s.ValidateBrokerAddress(t.Context(), "kafka.example.com:"+port, true); err != nil {
		t.Fatalf("validation saw a public address and refused: %v", err)
	}
	_, err := s.BrokerDialer(true)(t.Context(), "tcp", "kafka.example.com:"+port)
	var re *RefusedError
	if !errors.As(err, &re) || re.Reason != ReasonLoopback {
		t.Fatalf("dial after rebinding = %v, want a loopback refusal", err)
	}
	if n := hits.Load(); n != 0 {
		t.Fatalf("%d connections reached loopback", n)
	}
}
