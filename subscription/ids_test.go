package subscription

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"strings"
	"testing"
)

func TestConsumerID(t *testing.T) {
	t.Parallel()
	tests := []struct{ sub, path, want string }{
		// The example of docs/subscriptions.md.
		{"my-sub", "/agents/task-123", "my-sub:%2Fagents%2Ftask-123"},
		{"s", "/a b/ü", "s:%2Fa%20b%2F%C3%BC"},
		{"s", "/a:b/%2F", "s:%2Fa%3Ab%2F%252F"},
		{"s.1_~-", "/x.y_z~-", "s.1_~-:%2Fx.y_z~-"},
	}
	for _, tt := range tests {
		got := ConsumerID(tt.sub, tt.path)
		if got != tt.want {
			t.Errorf("ConsumerID(%q, %q) = %q, want %q", tt.sub, tt.path, got, tt.want)
		}
		sub, path, err := ParseConsumerID(got)
		if err != nil || sub != tt.sub || path != tt.path {
			t.Errorf("ParseConsumerID(%q) = %q, %q, %v", got, sub, path, err)
		}
	}
	// Lower-case escapes and needless escapes decode to the same consumer,
	// whose canonical id ConsumerID gives back.
	sub, path, err := ParseConsumerID("my-sub:%2fagents%2F%74ask-123")
	if err != nil || ConsumerID(sub, path) != "my-sub:%2Fagents%2Ftask-123" {
		t.Errorf("non-canonical id: %q %q %v", sub, path, err)
	}
	for _, id := range []string{
		"",
		"my-sub",                  // no ':'
		":%2Fa",                   // no subscription id
		"my sub:%2Fa",             // invalid subscription id
		"my-sub:/agents/task-123", // decoded path (seed: use the raw path)
		"my-sub:%2Fagents%2",      // truncated escape
		"my-sub:%2Fagents%zz",     // malformed escape
		"my-sub:agents",           // not a path
		"my-sub:",                 // empty path
		"my-sub:%2Fa%00",          // control byte
		"my-sub:%2F%FF",           // not UTF-8
		"a:b:%2Fc",                // ':' is not in subscription ids or encoded paths
	} {
		if _, _, err := ParseConsumerID(id); !errors.Is(err, ErrInvalidConsumerID) {
			t.Errorf("ParseConsumerID(%q) error = %v", id, err)
		}
	}
}

func TestValidateSubscriptionID(t *testing.T) {
	t.Parallel()
	for _, id := range []string{"agent-handler", "a", "A.b_c~d-9", strings.Repeat("x", MaxSubscriptionIDLength)} {
		if err := ValidateSubscriptionID(id); err != nil {
			t.Errorf("%q: %v", id, err)
		}
	}
	for _, id := range []string{"", "a:b", "a/b", "a b", "a%2F", "ü", strings.Repeat("x", MaxSubscriptionIDLength+1)} {
		if err := ValidateSubscriptionID(id); !errors.Is(err, ErrInvalidSubscriptionID) {
			t.Errorf("%q: %v", id, err)
		}
	}
}

func TestValidateStreamPath(t *testing.T) {
	t.Parallel()
	for _, p := range []string{"/", "/a", "/a b/ü", "/a/../b"} {
		if err := ValidateStreamPath(p); err != nil {
			t.Errorf("%q: %v", p, err)
		}
	}
	for _, p := range []string{"", "a", "/a\x00", "/a\n", "/\xff"} {
		if err := ValidateStreamPath(p); !errors.Is(err, ErrInvalidStreamPath) {
			t.Errorf("%q: %v", p, err)
		}
	}
}

func TestNewWakeID(t *testing.T) {
	t.Parallel()
	seen := map[string]bool{}
	for range 1000 {
		id, err := NewWakeID(rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(id, "w_") || len(id) != 2+32 {
			t.Fatalf("wake id %q is not w_ and 128 bits of hex", id)
		}
		if seen[id] {
			t.Fatalf("wake id %q generated twice", id)
		}
		seen[id] = true
	}
	if _, err := NewWakeID(failingReader{}); err == nil {
		t.Error("NewWakeID without entropy succeeded")
	}
}

func TestNewWebhookSecret(t *testing.T) {
	t.Parallel()
	a, err := NewWebhookSecret(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	b, err := NewWebhookSecret(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	if a == b {
		t.Fatal("two secrets are equal")
	}
	raw, err := base64.RawURLEncoding.DecodeString(strings.TrimPrefix(a, WebhookSecretPrefix))
	if !strings.HasPrefix(a, "whsec_") || err != nil || len(raw) != 32 {
		t.Errorf("secret %q is not whsec_ and 32 bytes of base64url (%v)", a, err)
	}
	if _, err := NewWebhookSecret(failingReader{}); err == nil {
		t.Error("NewWebhookSecret without entropy succeeded")
	}
}

func FuzzParseConsumerID(f *testing.F) {
	f.Add("my-sub:%2Fagents%2Ftask-123")
	f.Add("my-sub:%2fa")
	f.Add("a:%")
	f.Add("::")
	f.Fuzz(func(t *testing.T, id string) {
		sub, path, err := ParseConsumerID(id)
		if err != nil {
			if !errors.Is(err, ErrInvalidConsumerID) {
				t.Fatalf("error %v is not ErrInvalidConsumerID", err)
			}
			return
		}
		canonical := ConsumerID(sub, path)
		sub2, path2, err := ParseConsumerID(canonical)
		if err != nil || sub2 != sub || path2 != path {
			t.Fatalf("canonical id %q of %q does not round-trip: %q %q %v", canonical, id, sub2, path2, err)
		}
		if strings.Count(canonical, ":") != 1 || strings.Contains(canonical, "/") {
			t.Fatalf("canonical id %q is ambiguous", canonical)
		}
	})
}
