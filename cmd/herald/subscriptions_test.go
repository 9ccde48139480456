package main

import (
	"errors"
	"io"
	"net"
	"testing"
)

func TestSubscriptionFlags(t *testing.T) {
	cfg, err := parseServeFlags([]string{"--webhook-allow-cidrs", "127.0.0.0/8,::1/128", "--public-url", "https://herald.example/"}, io.Discard, noEnv)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.WebhookAllowCIDRs != "127.0.0.0/8,::1/128" || cfg.PublicURL != "https://herald.example/" {
		t.Fatalf("cfg = %+v", cfg)
	}
	for _, args := range [][]string{
		{"--webhook-allow-cidrs", "not-a-cidr"},
		{"--token-keys", "k1:short"},
		{"--public-url", "herald.example"},
	} {
		if _, err := parseServeFlags(args, io.Discard, noEnv); !errors.Is(err, errUsage) {
			t.Errorf("%v: err = %v, want a usage error", args, err)
		}
	}
}

func TestPublicURL(t *testing.T) {
	for _, tc := range []struct {
		configured string
		addr       net.Addr
		want       string
	}{
		{"https://herald.example/", nil, "https://herald.example"},
		{"", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 4437}, "http://127.0.0.1:4437"},
		{"", &net.TCPAddr{IP: net.IPv6unspecified, Port: 9000}, "http://localhost:9000"},
		{"", &net.TCPAddr{Port: 9001}, "http://localhost:9001"},
	} {
		if got := publicURL(tc.configured, tc.addr); got != tc.want {
			t.Errorf("publicURL(%q, %v) = %q, want %q", tc.configured, tc.addr, got, tc.want)
		}
	}
}
