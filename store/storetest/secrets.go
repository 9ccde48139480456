package storetest

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/heraldstreams/herald/internal/secretbox"
	"github.com/heraldstreams/herald/store"
)

// SecretsFactory opens stores with a chosen key-encryption key, for the
// secrets-at-rest tests. Every backend's factory implements it.
type SecretsFactory interface {
	// OpenBox opens a fresh, empty store whose secrets box seals (nil:
	// kept in plaintext).
	OpenBox(t *testing.T, box *secretbox.Box) store.Store
	// OpenBoxAt opens the database of s again, with box, and returns the
	// error the backend's open gives. Where a backend owns its database
	// alone, the caller closes s first.
	OpenBoxAt(t *testing.T, s store.Store, box *secretbox.Box) (store.Store, error)
	// Stored returns the values of table.column as the database holds
	// them, empty ones left out.
	Stored(t *testing.T, s store.Store, table, column string) []string
}

// secretColumns are the columns whose values are secrets.
var secretColumns = []struct{ table, column string }{
	{"endpoints", "secret"}, {"endpoints", "previous_secret"}, {"endpoints", "headers"}, {"endpoints", "destination"},
	{"subscriptions", "secret"}, {"token_keys", "secret"},
}

func runSecrets(t *testing.T, f Factory) {
	sf, ok := f.(SecretsFactory)
	if !ok {
		t.Fatal("the factory does not implement storetest.SecretsFactory: secrets at rest go untested")
	}
	secrets := func(name string, test func(*testing.T, Factory, SecretsFactory)) {
		run(t, f, name, func(t *testing.T, f Factory) { test(t, f, sf) })
	}
	secrets("SecretsSealedAtRest", testSecretsSealedAtRest)
	secrets("SecretsSealedAtFirstKey", testSecretsSealedAtFirstKey)
	secrets("SecretsWrongKeyRefused", testSecretsWrongKeyRefused)
	secrets("SecretsRewrapped", testSecretsRewrapped)
	secrets("TokenKeysMadeOnce", testTokenKeysMadeOnce)
}

func newKey(t *testing.T, id string) secretbox.Key {
	t.Helper()
	k, err := secretbox.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	k.ID = id
	return k
}

func newBox(t *testing.T, keys ...secretbox.Key) *secretbox.Box {
	t.Helper()
	b, err := secretbox.New(keys)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// SecretsFixture are the secrets WriteSecrets stores, one of each column.
type SecretsFixture struct {
	EndpointSecret, PreviousSecret, HeaderValue, SubscriptionSecret string
	// BrokerPassword is in a broker destination's config.
	BrokerPassword string
	TokenKey       []byte
}

// Plain are the fixture's secrets as they would be stored unsealed.
func (fx SecretsFixture) Plain() []string {
	return []string{fx.EndpointSecret, fx.PreviousSecret, fx.HeaderValue, fx.SubscriptionSecret, fx.BrokerPassword, string(fx.TokenKey)}
}

// NewSecretsFixture returns secrets that appear nowhere else.
func NewSecretsFixture() SecretsFixture {
	return SecretsFixture{
		EndpointSecret:     "whsec_CurrentSigningSecretValue01",
		PreviousSecret:     "whsec_PreviousSigningSecretValue2",
		HeaderValue:        "Bearer receiver-credential-3",
		SubscriptionSecret: "whsec_SubscriptionSecretValue0004",
		BrokerPassword:     "broker-password-value-0005",
		TokenKey:           []byte("token-key-secret-bytes-0123456789"),
	}
}

// WriteSecrets stores one value of every secret column: an endpoint's
// secret, previous secret and custom header, a broker endpoint's config,
// a subscription's secret and a token key.
func WriteSecrets(t *testing.T, s store.Store, fx SecretsFixture) {
	t.Helper()
	ctx := context.Background()
	ep := store.Endpoint{ID: "ep_1", URL: "https://example.com/hook", Ordering: "none", Active: true,
		Headers: map[string]string{"Authorization": fx.HeaderValue}, Secret: fx.EndpointSecret,
		PreviousSecret: fx.PreviousSecret, PreviousSecretUntil: t0.Add(time.Hour)}
	if _, err := s.EndpointCreate(ctx, &store.EndpointCreateParams{Endpoint: ep, Now: t0}); err != nil {
		t.Fatal(err)
	}
	broker := store.Endpoint{ID: "ep_2", Type: "kafka", Ordering: "none", Active: true, Secret: fx.EndpointSecret,
		Destination: brokerConfig(fx)}
	if _, err := s.EndpointCreate(ctx, &store.EndpointCreateParams{Endpoint: broker, Now: t0}); err != nil {
		t.Fatal(err)
	}
	sub := store.Subscription{ID: "sub_1", Pattern: "/a/*", Webhook: "https://example.com/wake", Secret: fx.SubscriptionSecret}
	if _, err := s.SubscriptionCreate(ctx, &store.SubscriptionCreateParams{Subscription: sub, Prefix: "/a/", Now: t0}); err != nil {
		t.Fatal(err)
	}
	if _, err := tokenKeys(s).TokenKeyInit(ctx, &store.TokenKeyInitParams{Keys: []store.TokenKey{{ID: "k1", Secret: fx.TokenKey}}, Now: t0}); err != nil {
		t.Fatal(err)
	}
}

// CheckSecrets reads every secret of WriteSecrets back through s.
func CheckSecrets(t *testing.T, s store.Store, fx SecretsFixture) {
	t.Helper()
	ctx := context.Background()
	ep, err := s.EndpointGet(ctx, "ep_1")
	if err != nil || ep.Secret != fx.EndpointSecret || ep.PreviousSecret != fx.PreviousSecret ||
		!reflect.DeepEqual(ep.Headers, map[string]string{"Authorization": fx.HeaderValue}) {
		t.Fatalf("endpoint read back as %+v, %v", ep, err)
	}
	eps, err := s.EndpointList(ctx, &store.EndpointListParams{})
	if err != nil || len(eps) != 2 || eps[0].Secret != fx.EndpointSecret {
		t.Fatalf("endpoint list %+v, %v", eps, err)
	}
	if b := eps[1]; b.Type != "kafka" || string(b.Destination) != string(brokerConfig(fx)) || eps[0].Type != "webhook" || eps[0].Destination != nil {
		t.Fatalf("broker endpoint read back as %q %s, webhook as %q %s", b.Type, b.Destination, eps[0].Type, eps[0].Destination)
	}
	sub, err := s.SubscriptionGet(ctx, "sub_1")
	if err != nil || sub.Secret != fx.SubscriptionSecret {
		t.Fatalf("subscription read back as %+v, %v", sub, err)
	}
	keys, err := tokenKeys(s).TokenKeyInit(ctx, &store.TokenKeyInitParams{Keys: []store.TokenKey{{ID: "other", Secret: []byte("x")}}, Now: t0})
	if err != nil || len(keys) != 1 || keys[0].ID != "k1" || !bytes.Equal(keys[0].Secret, fx.TokenKey) {
		t.Fatalf("token keys read back as %v, %v", keys, err)
	}
}

func tokenKeys(s store.Store) store.TokenKeyStore {
	tk, ok := s.(store.TokenKeyStore)
	if !ok {
		panic("storetest: the store does not keep token keys")
	}
	return tk
}

func secretStats(t *testing.T, s store.Store) store.SecretStats {
	t.Helper()
	r, ok := s.(store.SecretReporter)
	if !ok {
		t.Fatal("the store does not report what it did to its secrets")
	}
	return r.SecretStats()
}

// storedValues are every stored value of the secret columns.
func storedValues(t *testing.T, sf SecretsFactory, s store.Store) []string {
	t.Helper()
	var out []string
	for _, c := range secretColumns {
		out = append(out, sf.Stored(t, s, c.table, c.column)...)
	}
	return out
}

// expectSealed fails unless every stored secret is sealed with keyID and
// no plaintext of fx is among them.
func expectSealed(t *testing.T, sf SecretsFactory, s store.Store, fx SecretsFixture, keyID string) {
	t.Helper()
	values := storedValues(t, sf, s)
	if len(values) != 8 {
		t.Fatalf("%d stored secrets, want 8", len(values))
	}
	for _, v := range values {
		if id, err := secretbox.KeyID(v); err != nil || id != keyID {
			t.Errorf("stored secret %.24q… sealed with %q, %v; want key %q", v, id, err, keyID)
		}
		for _, p := range fx.Plain() {
			if strings.Contains(v, p) {
				t.Errorf("a stored secret holds the plaintext %q", p)
			}
		}
	}
}

// closeStore closes s where the backend owns its database alone, so that
// OpenBoxAt may open it.
func closeStore(t *testing.T, s store.Store) {
	t.Helper()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}

func testSecretsSealedAtRest(t *testing.T, _ Factory, sf SecretsFactory) {
	box := newBox(t, newKey(t, "k1"))
	fx := NewSecretsFixture()
	s := sf.OpenBox(t, box)
	WriteSecrets(t, s, fx)
	CheckSecrets(t, s, fx)
	expectSealed(t, sf, s, fx, "k1")
	if s.Peers() {
		// Another handle with the key reads what this one sealed.
		p, err := sf.OpenBoxAt(t, s, box)
		if err != nil {
			t.Fatal(err)
		}
		CheckSecrets(t, p, fx)
	}
	closeStore(t, s)
	again, err := sf.OpenBoxAt(t, s, box)
	if err != nil {
		t.Fatal(err)
	}
	if st := secretStats(t, again); st.Sealed != 0 || st.Rewrapped != 0 || st.KeyID != "k1" {
		t.Fatalf("reopen stats %+v, want nothing to do", st)
	}
	CheckSecrets(t, again, fx)
}

func testSecretsSealedAtFirstKey(t *testing.T, _ Factory, sf SecretsFactory) {
	fx := NewSecretsFixture()
	plain := sf.OpenBox(t, nil)
	WriteSecrets(t, plain, fx)
	values := storedValues(t, sf, plain)
	for _, p := range fx.Plain()[:5] {
		if !strings.Contains(strings.Join(values, "\n"), p) {
			t.Fatalf("a store without a key does not hold %q in plaintext (the test would prove nothing)", p)
		}
	}
	closeStore(t, plain)
	box := newBox(t, newKey(t, "k1"))
	s, err := sf.OpenBoxAt(t, plain, box)
	if err != nil {
		t.Fatal(err)
	}
	// ep_1's secret, previous_secret and headers, ep_2's secret, headers
	// ({}) and destination, the subscription's, the token key.
	if st := secretStats(t, s); st.Sealed != 8 || st.Rewrapped != 0 || st.KeyID != "k1" {
		t.Fatalf("stats %+v, want 8 values sealed", st)
	}
	CheckSecrets(t, s, fx)
	expectSealed(t, sf, s, fx, "k1")
	closeStore(t, s)
	// Sealed once: the next open has nothing to do.
	again, err := sf.OpenBoxAt(t, s, box)
	if err != nil {
		t.Fatal(err)
	}
	if st := secretStats(t, again); st.Sealed != 0 || st.Rewrapped != 0 {
		t.Fatalf("second open stats %+v", st)
	}
	CheckSecrets(t, again, fx)
}

func testSecretsWrongKeyRefused(t *testing.T, _ Factory, sf SecretsFactory) {
	k1 := newKey(t, "k1")
	fx := NewSecretsFixture()
	s := sf.OpenBox(t, newBox(t, k1))
	WriteSecrets(t, s, fx)
	closeStore(t, s)
	for name, box := range map[string]*secretbox.Box{
		"another key":              newBox(t, newKey(t, "k2")),
		"another key with its id":  newBox(t, newKey(t, "k1")),
		"no key":                   nil,
		"another key, then others": newBox(t, newKey(t, "k2"), newKey(t, "k3")),
	} {
		_, err := sf.OpenBoxAt(t, s, box)
		if !errors.Is(err, secretbox.ErrWrongKey) || !strings.Contains(err.Error(), "does not match the one this data was written with") {
			t.Fatalf("%s: %v, want ErrWrongKey", name, err)
		}
	}
	// The refused opens changed nothing: the right key still opens it.
	again, err := sf.OpenBoxAt(t, s, newBox(t, k1))
	if err != nil {
		t.Fatal(err)
	}
	CheckSecrets(t, again, fx)
}

func testSecretsRewrapped(t *testing.T, _ Factory, sf SecretsFactory) {
	fx := NewSecretsFixture()
	oldKey, newKey := newKey(t, "old"), newKey(t, "new")
	s := sf.OpenBox(t, newBox(t, oldKey))
	WriteSecrets(t, s, fx)
	closeStore(t, s)
	// The new key first: it seals, the old one only opens.
	s, err := sf.OpenBoxAt(t, s, newBox(t, newKey, oldKey))
	if err != nil {
		t.Fatal(err)
	}
	if st := secretStats(t, s); st.Rewrapped != 8 || st.Sealed != 0 || st.KeyID != "new" {
		t.Fatalf("stats %+v, want 8 values rewrapped", st)
	}
	expectSealed(t, sf, s, fx, "new")
	closeStore(t, s)
	// The new key alone opens everything; the old one alone nothing.
	if _, err := sf.OpenBoxAt(t, s, newBox(t, oldKey)); !errors.Is(err, secretbox.ErrWrongKey) {
		t.Fatalf("the retired key: %v, want ErrWrongKey", err)
	}
	again, err := sf.OpenBoxAt(t, s, newBox(t, newKey))
	if err != nil {
		t.Fatal(err)
	}
	CheckSecrets(t, again, fx)
}

// Token keys are made once: the first start's keys are kept, and every
// later start, or every handle starting at once, gets them.
func testTokenKeysMadeOnce(t *testing.T, _ Factory, sf SecretsFactory) {
	box := newBox(t, newKey(t, "k1"))
	ctx := context.Background()
	s := sf.OpenBox(t, box)
	handles := []store.Store{s}
	if s.Peers() {
		for range 3 {
			p, err := sf.OpenBoxAt(t, s, box)
			if err != nil {
				t.Fatal(err)
			}
			handles = append(handles, p)
		}
	}
	results := make([][]store.TokenKey, len(handles))
	errs := make([]error, len(handles))
	var wg sync.WaitGroup
	for i, h := range handles {
		wg.Go(func() {
			offer := []store.TokenKey{{ID: "a" + string(rune('0'+i)), Secret: []byte("signing-key-of-handle-" + string(rune('0'+i)))},
				{ID: "b", Secret: []byte("older-key")}}
			results[i], errs[i] = tokenKeys(h).TokenKeyInit(ctx, &store.TokenKeyInitParams{Keys: offer, Now: t0})
		})
	}
	wg.Wait()
	got := results[0]
	for i := range handles {
		if errs[i] != nil || len(results[i]) != 2 || !reflect.DeepEqual(results[i], got) {
			t.Fatalf("handle %d: token keys %+v, %v; handle 0 got %+v", i, results[i], errs[i], got)
		}
	}
	if got[1].ID != "b" || !bytes.Equal(got[1].Secret, []byte("older-key")) || !got[0].CreatedAt.Equal(t0) {
		t.Fatalf("token keys %+v: want the offer of one handle, signing key first", got)
	}
	// A later start offers its own keys and gets the first start's.
	for _, h := range handles {
		closeStore(t, h)
	}
	s, err := sf.OpenBoxAt(t, s, box)
	if err != nil {
		t.Fatal(err)
	}
	again, err := tokenKeys(s).TokenKeyInit(ctx, &store.TokenKeyInitParams{Keys: []store.TokenKey{{ID: "c", Secret: []byte("late")}}, Now: t0})
	if err != nil || !reflect.DeepEqual(again, got) {
		t.Fatalf("init after reopen = %+v, %v; want %+v", again, err, got)
	}
}

// brokerConfig is the config of WriteSecrets' broker endpoint.
func brokerConfig(fx SecretsFixture) []byte {
	return []byte(`{"brokers":["kafka.example.com:9092"],"sasl":{"mechanism":"PLAIN","username":"herald","password":"` + fx.BrokerPassword + `"}}`)
}
