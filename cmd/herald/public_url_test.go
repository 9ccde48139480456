package main

import (
	"bytes"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/heraldstreams/herald/client"
)

// TestWarnPublicURL: listening beyond loopback without --public-url logs
// a warning naming the flag and the URL Herald would hand out; on
// loopback, or with the flag, it says nothing.
func TestWarnPublicURL(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name       string
		configured string
		addr       net.Addr
		want       string
	}{
		{name: "every address, no flag", addr: &net.TCPAddr{IP: net.IPv4zero, Port: 4437}, want: "http://localhost:4437"},
		{name: "a LAN address, no flag", addr: &net.TCPAddr{IP: net.IPv4(192, 168, 1, 20), Port: 4437}, want: "http://192.168.1.20:4437"},
		{name: "every address, with the flag", configured: "https://herald.example", addr: &net.TCPAddr{IP: net.IPv4zero, Port: 4437}},
		{name: "loopback, no flag", addr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 4437}},
		{name: "IPv6 loopback, no flag", addr: &net.TCPAddr{IP: net.IPv6loopback, Port: 4437}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var logs bytes.Buffer
			warnPublicURL(slog.New(slog.NewTextHandler(&logs, nil)), tc.configured, "http", tc.addr)
			out := logs.String()
			if tc.want == "" {
				if out != "" {
					t.Fatalf("logged %q", out)
				}
				return
			}
			if !strings.Contains(out, "level=WARN") || !strings.Contains(out, "--public-url") || !strings.Contains(out, "public_url="+tc.want) {
				t.Fatalf("log %q lacks a warning naming --public-url and %s", out, tc.want)
			}
		})
	}
}

// TestPublicURLNamesHerald runs Herald on every address with --public-url:
// it starts without the warning, wakes carry callback URLs under the
// public URL, and portal tokens' dashboard URLs are under it too. Without
// the flag, the start logs the warning.
func TestPublicURLNamesHerald(t *testing.T) {
	t.Parallel()
	const public = "https://herald.example.test:8443"
	var logs syncBuffer
	wakes := make(chan *client.Wake, 4)
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		if wake, err := client.ParseWake(body); err == nil {
			select {
			case wakes <- wake:
			default:
			}
		}
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(receiver.Close)
	a := startHeraldLogging(t, &logs, "--addr", "0.0.0.0:0", "--webhook-allow-cidrs", "127.0.0.0/8", "--public-url", public+"/")
	_, port, err := net.SplitHostPort(a.ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	m := &matrix{t: t, app: a, base: "http://127.0.0.1:" + port, receiver: receiver}
	if strings.Contains(logs.String(), "--public-url is not set") {
		t.Fatalf("warned with --public-url set:\n%s", logs.String())
	}

	m.admin(t, "PUT", "/pub/*?subscription=pub", `{"webhook":"`+receiver.URL+`/wake"}`, http.StatusCreated, nil)
	m.admin(t, "PUT", "/pub/a", `[]`, http.StatusCreated, nil)
	select {
	case w := <-wakes:
		if want := public + "/callback/pub:%2Fpub%2Fa"; w.Callback != want {
			t.Fatalf("callback = %q, want %q", w.Callback, want)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("no wake within 30 s")
	}
	var portal struct {
		URL string `json:"url"`
	}
	m.admin(t, "POST", "/_herald/v1/portal-tokens", `{"tenant":"tenant-a","ttl":"10m"}`, http.StatusCreated, &portal)
	if !strings.HasPrefix(portal.URL, public+"/_herald/ui/#") {
		t.Fatalf("portal url = %q, want one under %s/_herald/ui/", portal.URL, public)
	}

	var bare syncBuffer
	startHeraldLogging(t, &bare, "--addr", "0.0.0.0:0")
	if out := bare.String(); !strings.Contains(out, "level=WARN") || !strings.Contains(out, "--public-url is not set") {
		t.Fatalf("no warning without --public-url on 0.0.0.0:\n%s", out)
	}
}
