package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/heraldstreams/herald/internal/secretbox"
	"github.com/heraldstreams/herald/store/sqlite"
	"github.com/heraldstreams/herald/subscription"
)

func TestSubscriptionFlags(t *testing.T) {
	t.Parallel()
	cfg, err := parseServeFlags([]string{"--webhook-allow-cidrs", "127.0.0.0/8,::1/128", "--public-url", "https://herald.example/"}, io.Discard, io.Discard, noEnv)
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
		if _, err := parseServeFlags(args, io.Discard, io.Discard, noEnv); !errors.Is(err, errUsage) {
			t.Errorf("%v: err = %v, want a usage error", args, err)
		}
	}
}

func TestPublicURL(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		configured string
		scheme     string
		addr       net.Addr
		want       string
	}{
		{"https://herald.example/", "http", nil, "https://herald.example"},
		{"http://herald.example/", "https", nil, "http://herald.example"},
		{"", "http", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 4437}, "http://127.0.0.1:4437"},
		{"", "https", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 4437}, "https://127.0.0.1:4437"},
		{"", "http", &net.TCPAddr{IP: net.IPv6unspecified, Port: 9000}, "http://localhost:9000"},
		{"", "https", &net.TCPAddr{Port: 9001}, "https://localhost:9001"},
	} {
		if got := publicURL(tc.configured, tc.scheme, tc.addr); got != tc.want {
			t.Errorf("publicURL(%q, %q, %v) = %q, want %q", tc.configured, tc.scheme, tc.addr, got, tc.want)
		}
	}
}

// TestTokenKeysMoveIntoTheStore: the token key file an older Herald left
// is moved into the store (and removed), and later starts use its keys;
// without a file, the first start's new key is kept.
func TestTokenKeysMoveIntoTheStore(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	log := slog.New(slog.DiscardHandler)
	dir := t.TempDir()
	legacy := []subscription.Key{{ID: "knew", Secret: bytes.Repeat([]byte{2}, 32)}, {ID: "kold", Secret: bytes.Repeat([]byte{1}, 32)}}
	file := filepath.Join(dir, legacyTokenKeyFile)
	if err := os.WriteFile(file, []byte(subscription.FormatKey(legacy[0])+"\n"+subscription.FormatKey(legacy[1])+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	box, err := secretbox.New([]secretbox.Key{{ID: "k", Secret: bytes.Repeat([]byte{9}, 32)}})
	if err != nil {
		t.Fatal(err)
	}
	st, err := sqlite.Open(ctx, sqlite.Config{Dir: dir, Box: box})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := st.Close(); err != nil {
			t.Error(err)
		}
	})
	keys, err := storedTokenKeys(ctx, st, dir, log)
	if err != nil || !reflect.DeepEqual(keys, legacy) {
		t.Fatalf("first start: %v, %v; want the file's keys", keys, err)
	}
	if _, err := os.Stat(file); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the key file is still there: %v", err)
	}
	again, err := storedTokenKeys(ctx, st, dir, log)
	if err != nil || !reflect.DeepEqual(again, legacy) {
		t.Fatalf("next start: %v, %v; want the file's keys", again, err)
	}

	fresh, err := sqlite.Open(ctx, sqlite.Config{Dir: t.TempDir(), Box: box})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := fresh.Close(); err != nil {
			t.Error(err)
		}
	})
	made, err := storedTokenKeys(ctx, fresh, fresh.Dir(), log)
	if err != nil || len(made) != 1 || len(made[0].Secret) != subscription.MinKeyLength {
		t.Fatalf("first start without a file: %v, %v", made, err)
	}
	if kept, err := storedTokenKeys(ctx, fresh, fresh.Dir(), log); err != nil || !reflect.DeepEqual(kept, made) {
		t.Fatalf("next start: %v, %v; want the key made first", kept, err)
	}
}
