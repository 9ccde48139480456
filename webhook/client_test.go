package webhook

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func TestClientKeepsTheGuards(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/big":
			_, _ = io.WriteString(w, strings.Repeat("x", 100))
		case "/redirect":
			http.Redirect(w, r, "/small", http.StatusFound)
		default:
			_, _ = io.WriteString(w, `{"keys":[]}`)
		}
	}))
	t.Cleanup(srv.Close)

	// Loopback is refused unless allowed, before anything is dialed.
	_, err := New(Config{}).Client(1 << 10).Get(srv.URL + "/small")
	if !errors.Is(err, ErrURLRefused) {
		t.Fatalf("GET of a loopback URL without an allow list: %v, want a refusal", err)
	}

	c := New(Config{AllowCIDRs: loopbackAllow}).Client(50)
	resp, err := c.Get(srv.URL + "/small")
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	if err := errors.Join(err, resp.Body.Close()); err != nil || string(body) != `{"keys":[]}` {
		t.Fatalf("allowed GET: %q, %v", body, err)
	}

	resp, err = c.Get(srv.URL + "/big")
	if err != nil {
		t.Fatal(err)
	}
	_, err = io.ReadAll(resp.Body)
	if cerr := resp.Body.Close(); cerr != nil {
		t.Fatal(cerr)
	}
	if !errors.Is(err, ErrBodyTooLarge) {
		t.Fatalf("a body over the cap: %v, want ErrBodyTooLarge", err)
	}

	resp, err = c.Get(srv.URL + "/redirect")
	if err != nil {
		t.Fatal(err)
	}
	if err := resp.Body.Close(); err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusFound {
		t.Fatalf("redirect was followed: status %d", resp.StatusCode)
	}

	// Closing a body frees its concurrency slot: with one slot, requests
	// one after the other all go through.
	one := New(Config{AllowCIDRs: loopbackAllow, MaxConcurrent: 1, MaxPerHost: 1}).Client(1 << 10)
	for i := range 3 {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/small", nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := one.Do(req)
		if err == nil {
			err = resp.Body.Close()
		}
		cancel()
		if err != nil {
			t.Fatalf("request %d with one slot: %v", i, err)
		}
	}
}
