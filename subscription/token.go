package subscription

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/heraldstreams/herald/internal/jsontext"
)

// Callback token timings (docs/subscriptions.md, Tokens).
const (
	// TokenTTL is the lifetime of a callback token.
	TokenTTL = time.Hour
	// TokenRefreshWindow: a token with less than this left is replaced by
	// a new one in the next callback response (Keyring.Renew).
	TokenRefreshWindow = 15 * time.Minute
)

// maxTokenLength bounds the tokens Verify looks at; Herald's are far
// shorter.
const maxTokenLength = 2048

// TokenSubject is what a callback token speaks for: one incarnation of a
// consumer, at one epoch.
type TokenSubject struct {
	ConsumerID string
	// Incarnation is the consumer's (Consumer.Incarnation): a token dies
	// with the consumer it was issued to, even when a consumer with the
	// same id is created later. "" for a consumer stored before
	// incarnations existed.
	Incarnation string
	Epoch       int64
}

// TokenClaims is what a valid callback token says.
type TokenClaims struct {
	ConsumerID  string
	Incarnation string
	Epoch       int64
	// KeyID names the key that signed the token.
	KeyID     string
	IssuedAt  time.Time
	ExpiresAt time.Time
}

// Keyring signs callback tokens with its active key and verifies tokens
// signed by any of its keys, so rotating the active key does not
// invalidate the tokens consumers hold. It is immutable and safe for
// concurrent use.
//
// Tokens are compact JWTs (HS256) with a "kid" header: header
// {"alg":"HS256","kid":...,"typ":"JWT"}, claims {"sub": consumer id,
// "inc": consumer incarnation (absent when ""), "epoch", "iat", "exp",
// "jti": random}. The random jti makes every issued token distinct.
type Keyring struct {
	active Key
	keys   map[string][]byte
	rand   io.Reader
	// header is the active key's encoded token header, the same in every
	// token it signs; macs holds HMAC states keyed with the active key.
	header string
	macs   sync.Pool
}

// NewKeyring returns a keyring that signs with keys[0] and verifies with
// all of keys. r supplies token nonces; crypto/rand.Reader when nil.
// Errors wrap ErrInvalidKey.
func NewKeyring(keys []Key, r io.Reader) (*Keyring, error) {
	if len(keys) == 0 {
		return nil, fmt.Errorf("%w: a keyring needs at least one key", ErrInvalidKey)
	}
	if r == nil {
		r = rand.Reader
	}
	k := &Keyring{active: keys[0], keys: make(map[string][]byte, len(keys)), rand: r}
	for _, key := range keys {
		if err := key.validate(); err != nil {
			return nil, err
		}
		if _, dup := k.keys[key.ID]; dup {
			return nil, fmt.Errorf("%w: key id %q appears twice", ErrInvalidKey, key.ID)
		}
		k.keys[key.ID] = key.Secret
	}
	h, err := json.Marshal(tokenHeader{Alg: "HS256", Kid: k.active.ID, Typ: "JWT"})
	if err != nil {
		return nil, fmt.Errorf("subscription: encoding a token header: %w", err)
	}
	k.header = b64.EncodeToString(h)
	k.macs.New = func() any { return hmac.New(sha256.New, k.active.Secret) }
	return k, nil
}

// ActiveKeyID is the id of the key that signs new tokens.
func (k *Keyring) ActiveKeyID() string { return k.active.ID }

type tokenHeader struct {
	Alg string `json:"alg"`
	Kid string `json:"kid"`
	Typ string `json:"typ"`
}

type tokenBody struct {
	Sub   string `json:"sub"`
	Inc   string `json:"inc,omitempty"`
	Epoch int64  `json:"epoch"`
	Iat   int64  `json:"iat"`
	Exp   int64  `json:"exp"`
	Jti   string `json:"jti"`
}

var b64 = base64.RawURLEncoding.Strict()

// Issue returns a token for a consumer incarnation and epoch, valid for
// TokenTTL from now. Tokens exist only for woken consumers: the epoch must
// be at least 1.
func (k *Keyring) Issue(s TokenSubject, now time.Time) (string, error) {
	consumerID, epoch := s.ConsumerID, s.Epoch
	if consumerID == "" || epoch < 1 {
		return "", fmt.Errorf("subscription: no token for consumer %q at epoch %d", consumerID, epoch)
	}
	var nonce [8]byte
	if _, err := io.ReadFull(k.rand, nonce[:]); err != nil {
		return "", fmt.Errorf("subscription: generating a token nonce: %w", err)
	}
	// The claims are written by hand (every wake issues a token), in
	// tokenBody's field order and encoding.
	iat := now.Unix()
	c := make([]byte, 0, 96+len(consumerID)+len(s.Incarnation))
	c = append(c, `{"sub":`...)
	c = jsontext.AppendString(c, consumerID)
	if s.Incarnation != "" {
		c = append(c, `,"inc":`...)
		c = jsontext.AppendString(c, s.Incarnation)
	}
	c = append(c, `,"epoch":`...)
	c = strconv.AppendInt(c, epoch, 10)
	c = append(c, `,"iat":`...)
	c = strconv.AppendInt(c, iat, 10)
	c = append(c, `,"exp":`...)
	c = strconv.AppendInt(c, iat+int64(TokenTTL/time.Second), 10)
	c = append(c, `,"jti":"`...)
	c = hex.AppendEncode(c, nonce[:])
	c = append(c, `"}`...)

	t := make([]byte, 0, len(k.header)+1+b64.EncodedLen(len(c))+1+b64.EncodedLen(sha256.Size))
	t = append(t, k.header...)
	t = append(t, '.')
	t = b64.AppendEncode(t, c)
	mac := k.macs.Get().(hash.Hash)
	mac.Reset()
	mac.Write(t)
	var sum [sha256.Size]byte
	sig := mac.Sum(sum[:0])
	k.macs.Put(mac)
	t = append(t, '.')
	t = b64.AppendEncode(t, sig)
	return string(t), nil
}

func sign(secret []byte, signed string) []byte {
	mac := hmac.New(sha256.New, secret)
	mac.Write([]byte(signed))
	return mac.Sum(nil)
}

// Verify checks a token presented for consumerID at now. Errors:
// ErrTokenInvalid when it is malformed, signed with an unknown key or not
// signed right, or issued for another consumer; ErrTokenExpired when it is
// otherwise valid but past its expiry, in which case the claims are
// returned too, so the caller can issue a new token for the same consumer
// and epoch (Keyring.Renew).
func (k *Keyring) Verify(token, consumerID string, now time.Time) (TokenClaims, error) {
	claims, err := k.parse(token)
	if err != nil {
		return TokenClaims{}, fmt.Errorf("%w: %s", ErrTokenInvalid, err)
	}
	if claims.ConsumerID != consumerID {
		// Checked before expiry, so an expired token of another consumer
		// never earns a fresh one for this consumer.
		return TokenClaims{}, fmt.Errorf("%w: the token was issued for another consumer", ErrTokenInvalid)
	}
	if !now.Before(claims.ExpiresAt) {
		return claims, fmt.Errorf("%w: the token expired at %s", ErrTokenExpired, claims.ExpiresAt.UTC().Format(time.RFC3339))
	}
	return claims, nil
}

// parse checks a token's structure and signature and returns its claims.
// The signature is checked before the claims are decoded, so unsigned
// input never reaches the claims decoder.
func (k *Keyring) parse(token string) (TokenClaims, error) {
	if len(token) > maxTokenLength {
		return TokenClaims{}, errString("token too long")
	}
	hPart, rest, ok := strings.Cut(token, ".")
	if !ok {
		return TokenClaims{}, errString("not a token")
	}
	cPart, sPart, ok := strings.Cut(rest, ".")
	if !ok || strings.Contains(sPart, ".") {
		return TokenClaims{}, errString("not a token")
	}
	hJSON, err := b64.DecodeString(hPart)
	if err != nil {
		return TokenClaims{}, errString("malformed header")
	}
	var h tokenHeader
	if decodeStrict(hJSON, &h) != nil || h.Alg != "HS256" || h.Typ != "JWT" {
		// alg is fixed: a token cannot choose how it is verified.
		return TokenClaims{}, errString("unsupported header")
	}
	secret, ok := k.keys[h.Kid]
	if !ok {
		return TokenClaims{}, errString("unknown signing key")
	}
	sig, err := b64.DecodeString(sPart)
	if err != nil || !hmac.Equal(sig, sign(secret, token[:len(hPart)+1+len(cPart)])) {
		return TokenClaims{}, errString("bad signature")
	}
	cJSON, err := b64.DecodeString(cPart)
	if err != nil {
		return TokenClaims{}, errString("malformed claims")
	}
	var c tokenBody
	if decodeStrict(cJSON, &c) != nil || c.Sub == "" || c.Epoch < 1 || c.Exp <= c.Iat {
		return TokenClaims{}, errString("malformed claims")
	}
	return TokenClaims{
		ConsumerID:  c.Sub,
		Incarnation: c.Inc,
		Epoch:       c.Epoch,
		KeyID:       h.Kid,
		IssuedAt:    time.Unix(c.Iat, 0),
		ExpiresAt:   time.Unix(c.Exp, 0),
	}, nil
}

// Renew returns the token for the next callback: token itself while it has
// more than TokenRefreshWindow left and its key is still the active one
// (S5 allows the same token), otherwise a new token for the same consumer
// incarnation and epoch. claims are token's, from Verify.
func (k *Keyring) Renew(token string, claims TokenClaims, now time.Time) (string, error) {
	if claims.KeyID == k.active.ID && claims.ExpiresAt.Sub(now) > TokenRefreshWindow {
		return token, nil
	}
	return k.Issue(claims.Subject(), now)
}

// Subject is what the token speaks for.
func (c TokenClaims) Subject() TokenSubject {
	return TokenSubject{ConsumerID: c.ConsumerID, Incarnation: c.Incarnation, Epoch: c.Epoch}
}

type errString string

func (e errString) Error() string { return string(e) }
