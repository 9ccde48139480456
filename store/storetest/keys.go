package storetest

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/heraldstreams/herald/store"
)

func runKeys(t *testing.T, f Factory) {
	run(t, f, "KeyCRUD", testKeyCRUD)
	run(t, f, "KeyList", testKeyList)
	run(t, f, "KeyDurability", testKeyDurability)
}

func sameKey(a, b *store.Key) bool {
	return a.ID == b.ID && bytes.Equal(a.Hash, b.Hash) && slices.Equal(a.Scopes, b.Scopes) && a.Tenant == b.Tenant &&
		slices.Equal(a.Paths, b.Paths) && a.Description == b.Description && a.ExpiresAt.Equal(b.ExpiresAt) &&
		a.CreatedAt.Equal(b.CreatedAt)
}

func testKeyCRUD(t *testing.T, f Factory) {
	s := f.Open(t)
	ctx := context.Background()
	k := store.Key{ID: "k1", Hash: bytes.Repeat([]byte{0xab}, 32), Scopes: []string{"streams:read", "streams:write"},
		Tenant: "acme", Paths: []string{"/acme/**"}, Description: "ci", ExpiresAt: t0.Add(time.Hour)}
	got, err := s.KeyCreate(ctx, &store.KeyCreateParams{Key: k, Now: t0})
	if err != nil {
		t.Fatal(err)
	}
	want := k
	want.CreatedAt = t0
	if !sameKey(got, &want) {
		t.Fatalf("create = %+v, want %+v", got, want)
	}
	if _, err := s.KeyCreate(ctx, &store.KeyCreateParams{Key: store.Key{ID: "k1", Hash: []byte{1}}, Now: t0}); !errors.Is(err, store.ErrKeyExists) {
		t.Fatalf("second create with the same id: %v, want ErrKeyExists", err)
	}
	read, err := s.KeyGet(ctx, &store.KeyGetParams{ID: "k1"})
	if err != nil || !sameKey(read, &want) {
		t.Fatalf("get = %+v, %v; want %+v (the refused create changed nothing)", read, err, want)
	}
	// A key without paths or expiry reads back without them.
	bare := store.Key{ID: "k2", Hash: []byte("h2"), Scopes: []string{"admin"}}
	if _, err := s.KeyCreate(ctx, &store.KeyCreateParams{Key: bare, Now: t0}); err != nil {
		t.Fatal(err)
	}
	read, err = s.KeyGet(ctx, &store.KeyGetParams{ID: "k2"})
	if err != nil || read.Paths != nil || !read.ExpiresAt.IsZero() || read.Tenant != "" {
		t.Fatalf("bare key = %+v, %v", read, err)
	}
	if err := s.KeyDelete(ctx, &store.KeyDeleteParams{ID: "k1"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.KeyGet(ctx, &store.KeyGetParams{ID: "k1"}); !errors.Is(err, store.ErrKeyNotFound) {
		t.Fatalf("get after delete: %v, want ErrKeyNotFound", err)
	}
	if err := s.KeyDelete(ctx, &store.KeyDeleteParams{ID: "k1"}); !errors.Is(err, store.ErrKeyNotFound) {
		t.Fatalf("second delete: %v, want ErrKeyNotFound", err)
	}
	if _, err := s.KeyGet(ctx, &store.KeyGetParams{ID: "k2"}); err != nil {
		t.Fatalf("deleting k1 touched k2: %v", err)
	}
}

func testKeyList(t *testing.T, f Factory) {
	s := f.Open(t)
	ctx := context.Background()
	for _, k := range []store.Key{
		{ID: "c", Tenant: "acme"}, {ID: "a", Tenant: "acme"}, {ID: "b"}, {ID: "d", Tenant: "other"},
	} {
		k.Hash, k.Scopes = []byte(k.ID), []string{"streams:read"}
		if _, err := s.KeyCreate(ctx, &store.KeyCreateParams{Key: k, Now: t0}); err != nil {
			t.Fatal(err)
		}
	}
	ids := func(p store.KeyListParams) []string {
		t.Helper()
		keys, err := s.KeyList(ctx, &p)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, k := range keys {
			out = append(out, k.ID)
		}
		return out
	}
	for _, tc := range []struct {
		p    store.KeyListParams
		want []string
	}{
		{store.KeyListParams{}, []string{"a", "b", "c", "d"}},
		{store.KeyListParams{Limit: 2}, []string{"a", "b"}},
		{store.KeyListParams{After: "b", Limit: 2}, []string{"c", "d"}},
		{store.KeyListParams{Tenant: "acme"}, []string{"a", "c"}},
		{store.KeyListParams{Tenant: "acme", After: "a"}, []string{"c"}},
		{store.KeyListParams{After: "d"}, nil},
	} {
		if got := ids(tc.p); !slices.Equal(got, tc.want) {
			t.Errorf("list %+v = %v, want %v", tc.p, got, tc.want)
		}
	}
}

func testKeyDurability(t *testing.T, f Factory) {
	s := f.Open(t)
	ctx := context.Background()
	k := store.Key{ID: "dur", Hash: bytes.Repeat([]byte{7}, 32), Scopes: []string{"events:publish"}, Paths: []string{"/a/*", "/b/**"},
		ExpiresAt: t0.Add(48 * time.Hour)}
	created, err := s.KeyCreate(ctx, &store.KeyCreateParams{Key: k, Now: t0})
	if err != nil {
		t.Fatal(err)
	}
	gone := store.Key{ID: "gone", Hash: []byte{1}, Scopes: []string{"admin"}}
	if _, err := s.KeyCreate(ctx, &store.KeyCreateParams{Key: gone, Now: t0}); err != nil {
		t.Fatal(err)
	}
	if err := s.KeyDelete(ctx, &store.KeyDeleteParams{ID: "gone"}); err != nil {
		t.Fatal(err)
	}
	s = f.Reopen(t, s)
	read, err := s.KeyGet(ctx, &store.KeyGetParams{ID: "dur"})
	if err != nil || !sameKey(read, created) {
		t.Fatalf("after reopen: %+v, %v; want %+v", read, err, created)
	}
	if _, err := s.KeyGet(ctx, &store.KeyGetParams{ID: "gone"}); !errors.Is(err, store.ErrKeyNotFound) {
		t.Fatalf("a revoked key came back after reopen: %v", err)
	}
}
