package webhook

import (
	"errors"
	"net/netip"
	"strings"
	"testing"
)

func TestPolicyCheckAddrRefusesInternalRanges(t *testing.T) {
	t.Parallel()
	cases := []struct {
		addr   string
		reason Reason
	}{
		{"10.1.2.3", ReasonPrivate},
		{"172.16.0.1", ReasonPrivate},
		{"172.31.255.255", ReasonPrivate},
		{"192.168.1.1", ReasonPrivate},
		{"127.0.0.1", ReasonLoopback},
		{"127.255.255.254", ReasonLoopback},
		{"::1", ReasonLoopback},
		{"169.254.1.1", ReasonLinkLocal},
		{"169.254.169.254", ReasonMetadata},
		{"fd00:ec2::254", ReasonMetadata},
		{"fe80::1", ReasonLinkLocal},
		{"100.64.0.1", ReasonSharedAddress},
		{"100.100.100.200", ReasonSharedAddress},
		{"fc00::1", ReasonPrivate},
		{"fd12:3456::1", ReasonPrivate},
		{"0.0.0.0", ReasonUnspecified},
		{"0.1.2.3", ReasonUnspecified},
		{"::", ReasonUnspecified},
		{"224.0.0.1", ReasonMulticast},
		{"ff02::1", ReasonMulticast},
		{"255.255.255.255", ReasonReserved},
		{"192.0.0.192", ReasonReserved},
		{"198.18.0.1", ReasonReserved},
		{"2001:db8::1", ReasonReserved},
		// IPv6 forms of refused IPv4 addresses.
		{"::ffff:127.0.0.1", ReasonLoopback},
		{"::ffff:10.0.0.1", ReasonPrivate},
		{"::ffff:169.254.169.254", ReasonMetadata},
		{"64:ff9b::a9fe:a9fe", ReasonMetadata},
		{"64:ff9b::7f00:1", ReasonLoopback},
		{"2002:7f00:1::1", ReasonLoopback},
		{"2002:c0a8:101::1", ReasonPrivate},
		{"::127.0.0.1", ReasonReserved},
	}
	var p Policy
	for _, tc := range cases {
		err := p.CheckAddr(netip.MustParseAddr(tc.addr))
		var re *RefusedError
		if !errors.As(err, &re) {
			t.Errorf("CheckAddr(%s) = %v, want refusal %s", tc.addr, err, tc.reason)
			continue
		}
		if re.Reason != tc.reason {
			t.Errorf("CheckAddr(%s) reason = %s, want %s", tc.addr, re.Reason, tc.reason)
		}
		if !errors.Is(err, ErrURLRefused) {
			t.Errorf("CheckAddr(%s): errors.Is(err, ErrURLRefused) is false", tc.addr)
		}
	}
}

func TestPolicyCheckAddrAllowsPublic(t *testing.T) {
	t.Parallel()
	var p Policy
	for _, a := range []string{"93.184.216.34", "8.8.8.8", "1.1.1.1", "2606:4700:4700::1111", "::ffff:8.8.8.8", "64:ff9b::808:808", "2002:808:808::1", "172.32.0.1", "100.128.0.1"} {
		if err := p.CheckAddr(netip.MustParseAddr(a)); err != nil {
			t.Errorf("CheckAddr(%s) = %v, want nil", a, err)
		}
	}
}

func TestPolicyAllowListOverridesRefusal(t *testing.T) {
	t.Parallel()
	allow, err := ParseCIDRList("127.0.0.0/8,::1/128")
	if err != nil {
		t.Fatal(err)
	}
	p := Policy{AllowCIDRs: allow}
	for _, a := range []string{"127.0.0.1", "127.9.9.9", "::1", "::ffff:127.0.0.1"} {
		if err := p.CheckAddr(netip.MustParseAddr(a)); err != nil {
			t.Errorf("CheckAddr(%s) with allow list = %v, want nil", a, err)
		}
	}
	for _, a := range []string{"10.0.0.1", "169.254.169.254", "fe80::1"} {
		if err := p.CheckAddr(netip.MustParseAddr(a)); err == nil {
			t.Errorf("CheckAddr(%s) = nil, want refusal outside the allow list", a)
		}
	}
}

func TestPolicyCheckURL(t *testing.T) {
	t.Parallel()
	loopback := Policy{AllowCIDRs: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}}
	cases := []struct {
		name   string
		policy Policy
		url    string
		reason Reason // "" means accepted
	}{
		{"https name", Policy{}, "https://hooks.example.com/in?x=1", ""},
		{"https name with port", Policy{}, "https://hooks.example.com:8443/in", ""},
		{"https public IP", Policy{}, "https://93.184.216.34/in", ""},
		{"https public IPv6", Policy{}, "https://[2606:4700:4700::1111]/in", ""},
		{"uppercase scheme", Policy{}, "HTTPS://Hooks.Example.com/", ""},
		{"single label name", Policy{}, "https://receiver/in", ""},
		{"underscore label", Policy{}, "https://_hooks.example.com/", ""},
		{"http name is resolved later", Policy{}, "http://hooks.example.com/in", ""},
		{"http public IP", Policy{}, "http://93.184.216.34/in", ReasonScheme},
		{"ftp", Policy{}, "ftp://hooks.example.com/", ReasonScheme},
		{"javascript", Policy{}, "javascript:alert(1)", ReasonScheme},
		{"relative", Policy{}, "/hooks", ReasonInvalidURL},
		{"no host", Policy{}, "https:///hooks", ReasonInvalidURL},
		{"opaque", Policy{}, "https:hooks.example.com", ReasonInvalidURL},
		{"credentials", Policy{}, "https://user:pw@hooks.example.com/", ReasonCredentials},
		{"bad port", Policy{}, "https://hooks.example.com:0/", ReasonInvalidURL},
		{"port too big", Policy{}, "https://hooks.example.com:70000/", ReasonInvalidURL},
		{"loopback literal", Policy{}, "https://127.0.0.1/", ReasonLoopback},
		{"loopback IPv6 literal", Policy{}, "https://[::1]:8080/", ReasonLoopback},
		{"mapped loopback literal", Policy{}, "https://[::ffff:127.0.0.1]/", ReasonLoopback},
		{"metadata literal", Policy{}, "http://169.254.169.254/latest/meta-data", ReasonMetadata},
		{"private literal", Policy{}, "https://10.0.0.8/", ReasonPrivate},
		{"localhost", Policy{}, "https://localhost/", ReasonLoopback},
		{"localhost subdomain", Policy{}, "https://api.localhost./", ReasonLoopback},
		{"decimal IPv4", Policy{}, "https://2130706433/", ReasonInvalidURL},
		{"hex IPv4", Policy{}, "https://0x7f.1/", ReasonInvalidURL},
		{"short IPv4", Policy{}, "https://127.1/", ReasonInvalidURL},
		{"zone", Policy{}, "https://[fe80::1%25eth0]/", ReasonInvalidURL},
		{"non ASCII host", Policy{}, "https://bücher.example/", ReasonInvalidURL},
		{"empty label", Policy{}, "https://hooks..example.com/", ReasonInvalidURL},
		{"too long", Policy{}, "https://hooks.example.com/" + strings.Repeat("a", 2048), ReasonInvalidURL},
		{"allowed http loopback", loopback, "http://127.0.0.1:8080/in", ""},
		{"allowed https loopback", loopback, "https://127.0.0.1:8080/in", ""},
		{"allowed localhost", loopback, "http://localhost:8080/in", ""},
		{"allow list does not cover private", loopback, "http://10.0.0.1/", ReasonPrivate},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			u, err := tc.policy.CheckURL(tc.url)
			if tc.reason == "" {
				if err != nil {
					t.Fatalf("CheckURL(%q) = %v, want accepted", tc.url, err)
				}
				if u == nil || u.Hostname() == "" {
					t.Fatalf("CheckURL(%q) returned no URL", tc.url)
				}
				return
			}
			var re *RefusedError
			if !errors.As(err, &re) {
				t.Fatalf("CheckURL(%q) = %v, want refusal %s", tc.url, err, tc.reason)
			}
			if re.Reason != tc.reason {
				t.Fatalf("CheckURL(%q) reason = %s (%v), want %s", tc.url, re.Reason, err, tc.reason)
			}
			if re.Detail == "" {
				t.Fatalf("CheckURL(%q): refusal without detail", tc.url)
			}
		})
	}
}

func TestParseCIDRList(t *testing.T) {
	t.Parallel()
	cases := []struct {
		in      string
		want    []string
		wantErr bool
	}{
		{"", nil, false},
		{"  ", nil, false},
		{"127.0.0.0/8,::1/128", []string{"127.0.0.0/8", "::1/128"}, false},
		{" 10.1.2.3/8 , ,::1 ", []string{"10.0.0.0/8", "::1/128"}, false},
		{"192.168.1.7", []string{"192.168.1.7/32"}, false},
		{"127.0.0.0/33", nil, true},
		{"localhost", nil, true},
		{"fe80::1%eth0", nil, true},
		{"10.0.0.0/8;172.16.0.0/12", nil, true},
	}
	for _, tc := range cases {
		got, err := ParseCIDRList(tc.in)
		if tc.wantErr {
			if err == nil {
				t.Errorf("ParseCIDRList(%q) = %v, want error", tc.in, got)
			}
			continue
		}
		if err != nil {
			t.Errorf("ParseCIDRList(%q): %v", tc.in, err)
			continue
		}
		if len(got) != len(tc.want) {
			t.Errorf("ParseCIDRList(%q) = %v, want %v", tc.in, got, tc.want)
			continue
		}
		for i := range got {
			if got[i].String() != tc.want[i] {
				t.Errorf("ParseCIDRList(%q)[%d] = %s, want %s", tc.in, i, got[i], tc.want[i])
			}
		}
	}
}

func FuzzParseCIDRList(f *testing.F) {
	for _, s := range []string{"", "127.0.0.0/8,::1/128", "10.0.0.1", " ,fe80::/10 ", "1.2.3.4/33", "::ffff:1.2.3.4/120"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := ParseCIDRList(s)
		if err != nil {
			return
		}
		var parts []string
		for _, p := range got {
			if !p.IsValid() || p != p.Masked() {
				t.Fatalf("ParseCIDRList(%q) returned %v, not a valid masked prefix", s, p)
			}
			parts = append(parts, p.String())
		}
		again, err := ParseCIDRList(strings.Join(parts, ","))
		if err != nil || len(again) != len(got) {
			t.Fatalf("round trip of %q: %v, %v", s, again, err)
		}
		for i := range got {
			if again[i] != got[i] {
				t.Fatalf("round trip of %q changed %v to %v", s, got[i], again[i])
			}
		}
	})
}

func FuzzPolicyCheckURL(f *testing.F) {
	for _, s := range []string{
		"https://hooks.example.com/in", "http://127.0.0.1:8080/", "https://[::ffff:10.0.0.1]/",
		"https://0x7f.1/", "https://user@h/", "https://[fe80::1%25en0]/", "ftp://x", "https://localhost./",
	} {
		f.Add(s)
	}
	allow := Policy{AllowCIDRs: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}}
	f.Fuzz(func(t *testing.T, raw string) {
		for _, p := range []Policy{{}, allow} {
			u, err := p.CheckURL(raw)
			if err != nil {
				if !errors.Is(err, ErrURLRefused) {
					t.Fatalf("CheckURL(%q) error %v does not match ErrURLRefused", raw, err)
				}
				continue
			}
			if u.Scheme != "https" && u.Scheme != "http" {
				t.Fatalf("CheckURL(%q) accepted scheme %q", raw, u.Scheme)
			}
			if u.User != nil {
				t.Fatalf("CheckURL(%q) accepted credentials", raw)
			}
			// An accepted address literal is never a refused address
			// unless the allow list covers it.
			if a, err := netip.ParseAddr(u.Hostname()); err == nil && !p.Allowed(a) {
				if _, _, refused := refusal(a); refused {
					t.Fatalf("CheckURL(%q) accepted refused address %s", raw, a)
				}
				if u.Scheme == "http" {
					t.Fatalf("CheckURL(%q) accepted http:// to %s outside the allow list", raw, a)
				}
			}
		}
	})
}
