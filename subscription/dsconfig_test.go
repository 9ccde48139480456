package subscription

import (
	"errors"
	"slices"
	"testing"
)

func TestParseDSConfigNormalizes(t *testing.T) {
	t.Parallel()
	c, err := ParseDSConfig([]byte(`{"type":"webhook","pattern":"events/%2A/**/**","streams":["b","a","b"],
		"webhook":{"url":"https://worker.example/hooks"},"description":"d"}`))
	if err != nil {
		t.Fatal(err)
	}
	if c.Pattern != "events/*/**" || !slices.Equal(c.Streams, []string{"a", "b"}) || c.LeaseTTLMs != 30000 || c.WebhookURL != "https://worker.example/hooks" {
		t.Fatalf("normalized = %+v", c)
	}
	// The same configuration spelt otherwise hashes the same; any field
	// of it changes the hash.
	same, err := ParseDSConfig([]byte(`{"type":"webhook","pattern":"events/*/**","streams":["a","b"],"webhook":{"url":"https://worker.example/hooks"},"lease_ttl_ms":30000,"description":"d"}`))
	if err != nil || same.Hash() != c.Hash() {
		t.Fatalf("an equal configuration hashes %q, want %q (%v)", same.Hash(), c.Hash(), err)
	}
	for _, other := range []string{
		`{"type":"webhook","pattern":"events/*/**","streams":["a","b"],"webhook":{"url":"https://worker.example/hooks"},"lease_ttl_ms":30001,"description":"d"}`,
		`{"type":"webhook","pattern":"events/*/**","streams":["a"],"webhook":{"url":"https://worker.example/hooks"},"description":"d"}`,
		`{"type":"webhook","pattern":"events/*/**","streams":["a","b"],"webhook":{"url":"https://worker.example/other"},"description":"d"}`,
		`{"type":"webhook","pattern":"events/*/**","streams":["a","b"],"webhook":{"url":"https://worker.example/hooks"},"description":"e"}`,
		`{"type":"pull-wake","pattern":"events/*/**","streams":["a","b"],"wake_stream":"wake","description":"d"}`,
	} {
		o, err := ParseDSConfig([]byte(other))
		if err != nil || o.Hash() == c.Hash() {
			t.Errorf("%s hashes as the first configuration (%v)", other, err)
		}
	}
}

func TestParseDSConfigRefuses(t *testing.T) {
	t.Parallel()
	for _, body := range []string{
		`{"type":"webhook","pattern":"a/*"}`,
		`{"type":"pull-wake","pattern":"a/*"}`,
		`{"type":"pull-wake","pattern":"a/*","wake_stream":"w","webhook":{"url":"https://x"}}`,
		`{"type":"webhook","pattern":"a/*","webhook":{"url":"https://x"},"wake_stream":"w"}`,
		`{"type":"webhook","webhook":{"url":"https://x"}}`,
		`{"type":"webhook","pattern":"a/b*","webhook":{"url":"https://x"}}`,
		`{"type":"webhook","streams":["a/../b"],"webhook":{"url":"https://x"}}`,
		`{"type":"webhook","streams":["__ds/x"],"webhook":{"url":"https://x"}}`,
		`{"type":"webhook","streams":["/a"],"webhook":{"url":"https://x"}}`,
		`{"type":"webhook","pattern":"a/*","webhook":{"url":"https://x"},"lease_ttl_ms":999}`,
		`{"type":"webhook","pattern":"a/*","webhook":{"url":"https://x"},"lease_ttl_ms":600001}`,
		`{"type":"pull-wake","streams":["w"],"wake_stream":"w"}`,
		`{"type":"webhook","pattern":"a/*","webhook":{"url":"https://x"},"colour":"red"}`,
		`{"type":"webhook","pattern":"a/*","webhook":{"url":"https://x"}} {}`,
	} {
		if _, err := ParseDSConfig([]byte(body)); !errors.Is(err, ErrDSInvalid) || !errors.Is(err, ErrInvalidRequest) {
			t.Errorf("%s: %v, want ErrDSInvalid", body, err)
		}
	}
	for _, ok := range []string{
		`{"type":"webhook","pattern":"a/*","webhook":{"url":"https://x"},"lease_ttl_ms":1000}`,
		`{"type":"webhook","pattern":"a/*","webhook":{"url":"https://x"},"lease_ttl_ms":600000,"wake_stream":null}`,
	} {
		if _, err := ParseDSConfig([]byte(ok)); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
}

func TestCheckDSWebhookURL(t *testing.T) {
	t.Parallel()
	for _, ok := range []string{"https://worker.example/hooks", "https://10.0.0.1/hook", "http://localhost:8080/h", "http://127.0.0.1:9/h", "http://127.0.0.255/"} {
		if err := CheckDSWebhookURL(ok); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
	for _, bad := range []string{"http://10.0.0.1/hook", "http://127.0.1.1/", "http://127.0.0.256/", "http://user@localhost/", "ftp://x/", "worker.example", "http://169.254.169.254/"} {
		if err := CheckDSWebhookURL(bad); !errors.Is(err, ErrWebhookURLRejected) {
			t.Errorf("%s: %v, want ErrWebhookURLRejected", bad, err)
		}
	}
}

func TestRoot(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]Root{"": "/", "/": "/", "/v1/stream": "/v1/stream", "/v1/stream/": "/v1/stream"} {
		if got, err := NormalizeRoot(in); err != nil || got != want {
			t.Errorf("NormalizeRoot(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"v1", "/a//b", "/a/../b", "/a/__ds", "/a/*"} {
		if _, err := NormalizeRoot(bad); err == nil {
			t.Errorf("NormalizeRoot(%q) accepted", bad)
		}
	}
	r := Root("/v1/stream")
	if r.Abs("events/a") != "/v1/stream/events/a" || r.Reserved() != "/v1/stream/__ds/" {
		t.Errorf("Abs, Reserved = %q, %q", r.Abs("events/a"), r.Reserved())
	}
	if rel, ok := r.Rel("/v1/stream/events/a"); !ok || rel != "events/a" {
		t.Errorf("Rel = %q, %v", rel, ok)
	}
	if _, ok := r.Rel("/v1/streamx/a"); ok {
		t.Error("Rel took a path outside the root")
	}
	if Root("/").Abs("a/b") != "/a/b" {
		t.Error("the default root's Abs")
	}
}
