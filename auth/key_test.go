package auth

import (
	"bytes"
	"slices"
	"strings"
	"testing"
)

func TestKeyFormat(t *testing.T) {
	t.Parallel()
	seen := map[string]bool{}
	for range 50 {
		id, key, hash, err := NewKey(nil)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(key, KeyPrefix+id+"_") || len(key) != len(KeyPrefix)+16+1+43 {
			t.Fatalf("key %q (id %q) has the wrong shape", key, id)
		}
		got, ok := ParseKey(key)
		if !ok || got != id {
			t.Fatalf("ParseKey(%q) = %q, %v; want %q", key, got, ok, id)
		}
		h := HashKey(key)
		if !bytes.Equal(hash, h[:]) {
			t.Fatal("NewKey's hash is not HashKey of the key")
		}
		if seen[id] {
			t.Fatal("an id came twice")
		}
		seen[id] = true
	}
	_, key, _, _ := NewKey(nil)
	for _, bad := range []string{"", "hk_", "hk_abc_def", "xx" + key[2:], key + "x", key[:len(key)-1],
		strings.ToUpper(key[:19]) + key[19:], "hk_" + strings.Repeat("1", 16) + key[19:]} {
		if _, ok := ParseKey(bad); ok {
			t.Errorf("ParseKey(%q) accepted", bad)
		}
	}
}

func TestParseScopes(t *testing.T) {
	t.Parallel()
	got, err := ParseScopes([]string{"admin", "streams:read", "streams:read", "events:publish"})
	if err != nil || !slices.Equal(got, []Scope{ScopeStreamsRead, ScopeEventsPublish, ScopeAdmin}) {
		t.Fatalf("ParseScopes = %v, %v", got, err)
	}
	for _, bad := range []string{"", "streams", "STREAMS:READ", "streams:*", "openid"} {
		if _, err := ParseScopes([]string{bad}); err == nil || !strings.Contains(err.Error(), "streams:read") {
			t.Errorf("ParseScopes(%q) = %v, want an error listing the scopes", bad, err)
		}
	}
	if len(AllScopes) != 10 {
		t.Fatalf("%d scopes", len(AllScopes))
	}
}
