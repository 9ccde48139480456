package client

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

const secret = "whsec_abc123def456"

var signedAt = time.Unix(1704067200, 0)

// sig computes a header the way docs/subscriptions.md describes it,
// independently of the code under test.
func sig(secret string, ts int64, body string) string {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(strconv.FormatInt(ts, 10) + "." + body))
	return "t=" + strconv.FormatInt(ts, 10) + ",sha256=" + hex.EncodeToString(mac.Sum(nil))
}

const wakeBody = `{
  "consumer_id": "my-sub:%2Fagents%2Ftask-123",
  "epoch": 7,
  "wake_id": "w_f8a3b2c1",
  "primary_stream": "/agents/task-123",
  "streams": [
    { "path": "/agents/task-123", "offset": "1002" },
    { "path": "/shared-filesystem/task-123", "offset": "500" }
  ],
  "triggered_by": ["/agents/task-123"],
  "callback": "https://streams.example.com/callback/my-sub:%2Fagents%2Ftask-123",
  "token": "eyJhbGciOiJIUzI1NiIs..."
}`

func TestVerifyWakeSignature(t *testing.T) {
	t.Parallel()
	header := sig(secret, signedAt.Unix(), wakeBody)
	ok := []struct {
		name   string
		header string
		now    time.Time
		tol    time.Duration
	}{
		{"same second", header, signedAt, 0},
		{"4m59s late", header, signedAt.Add(5*time.Minute - time.Second), 0},
		{"exactly 5 minutes late", header, signedAt.Add(5 * time.Minute), 0},
		{"5 minutes early", header, signedAt.Add(-5 * time.Minute), 0},
		{"custom tolerance", header, signedAt.Add(time.Hour), 2 * time.Hour},
		{"spaces after commas", strings.ReplaceAll(header, ",", ", "), signedAt, 0},
		{"upper-case hex", "t=1704067200,sha256=" + strings.ToUpper(strings.SplitN(header, "sha256=", 2)[1]), signedAt, 0},
		{"a second signature", header + ",sha256=" + strings.Repeat("ab", 32), signedAt, 0},
		{"signature listed first", "sha256=" + strings.Repeat("ab", 32) + "," + header, signedAt, 0},
		{"unknown scheme ignored", header + ",v2=zzz", signedAt, 0},
	}
	for _, tt := range ok {
		if err := VerifyWakeSignature(secret, tt.header, []byte(wakeBody), tt.now, tt.tol); err != nil {
			t.Errorf("%s: %v", tt.name, err)
		}
	}

	bad := []struct {
		name   string
		secret string
		header string
		body   string
		now    time.Time
		want   error
	}{
		{"missing header", secret, "", wakeBody, signedAt, ErrSignatureMalformed},
		{"no timestamp", secret, "sha256=" + strings.Repeat("ab", 32), wakeBody, signedAt, ErrSignatureMalformed},
		{"no signature", secret, "t=1704067200", wakeBody, signedAt, ErrSignatureMalformed},
		{"two timestamps", secret, header + ",t=1704067200", wakeBody, signedAt, ErrSignatureMalformed},
		{"negative timestamp", secret, "t=-1,sha256=" + strings.Repeat("ab", 32), wakeBody, signedAt, ErrSignatureMalformed},
		{"timestamp not a number", secret, "t=1e9,sha256=" + strings.Repeat("ab", 32), wakeBody, signedAt, ErrSignatureMalformed},
		{"huge timestamp", secret, "t=99999999999999999999,sha256=" + strings.Repeat("ab", 32), wakeBody, signedAt, ErrSignatureMalformed},
		{"short signature", secret, "t=1704067200,sha256=abcd", wakeBody, signedAt, ErrSignatureMalformed},
		{"signature not hex", secret, "t=1704067200,sha256=" + strings.Repeat("zz", 32), wakeBody, signedAt, ErrSignatureMalformed},
		{"part without =", secret, header + ",junk", wakeBody, signedAt, ErrSignatureMalformed},
		{"too late", secret, header, wakeBody, signedAt.Add(5*time.Minute + time.Second), ErrSignatureTimestamp},
		{"too early", secret, header, wakeBody, signedAt.Add(-5*time.Minute - time.Second), ErrSignatureTimestamp},
		{"other secret", "whsec_other", header, wakeBody, signedAt, ErrSignatureMismatch},
		{"body changed", secret, header, strings.Replace(wakeBody, `"epoch": 7`, `"epoch": 8`, 1), signedAt, ErrSignatureMismatch},
		{"body re-encoded", secret, header, strings.Join(strings.Fields(wakeBody), ""), signedAt, ErrSignatureMismatch},
		{"timestamp changed", secret, strings.Replace(header, "t=1704067200", "t=1704067201", 1), wakeBody, signedAt, ErrSignatureMismatch},
		{"header too long", secret, header + "," + strings.Repeat("x=y,", 2000), wakeBody, signedAt, ErrSignatureMalformed},
	}
	for _, tt := range bad {
		err := VerifyWakeSignature(tt.secret, tt.header, []byte(tt.body), tt.now, 0)
		if !errors.Is(err, tt.want) {
			t.Errorf("%s: error = %v, want %v", tt.name, err, tt.want)
		}
	}
}

func TestParseWake(t *testing.T) {
	t.Parallel()
	w, err := ParseWake([]byte(wakeBody))
	if err != nil {
		t.Fatal(err)
	}
	if w.ConsumerID != "my-sub:%2Fagents%2Ftask-123" || w.Epoch != 7 || w.WakeID != "w_f8a3b2c1" ||
		w.PrimaryStream != "/agents/task-123" || len(w.Streams) != 2 ||
		w.Streams[1] != (WakeStream{Path: "/shared-filesystem/task-123", Offset: "500"}) ||
		len(w.TriggeredBy) != 1 || w.TriggeredBy[0] != "/agents/task-123" ||
		w.Callback != "https://streams.example.com/callback/my-sub:%2Fagents%2Ftask-123" ||
		w.Token != "eyJhbGciOiJIUzI1NiIs..." {
		t.Errorf("parsed %+v", w)
	}
	// A field a later server adds does not break the consumer.
	if _, err := ParseWake([]byte(strings.Replace(wakeBody, `"epoch": 7,`, `"epoch": 7, "trace": {"id": 1},`, 1))); err != nil {
		t.Errorf("unknown field: %v", err)
	}
	for name, body := range map[string]string{
		"empty":               ``,
		"not JSON":            `hello`,
		"array":               `[]`,
		"null":                `null`,
		"epoch 0":             strings.Replace(wakeBody, `"epoch": 7`, `"epoch": 0`, 1),
		"epoch a string":      strings.Replace(wakeBody, `"epoch": 7`, `"epoch": "7"`, 1),
		"no wake id":          strings.Replace(wakeBody, `"wake_id": "w_f8a3b2c1",`, ``, 1),
		"no token":            strings.Replace(wakeBody, `"token": "eyJhbGciOiJIUzI1NiIs..."`, `"token": ""`, 1),
		"stream without path": strings.Replace(wakeBody, `"path": "/agents/task-123", `, ``, 1),
	} {
		if _, err := ParseWake([]byte(body)); !errors.Is(err, ErrWakeInvalid) {
			t.Errorf("%s: error = %v", name, err)
		}
	}
}

func FuzzVerifyWakeSignature(f *testing.F) {
	f.Add(sig(secret, signedAt.Unix(), wakeBody), []byte(wakeBody))
	f.Add("t=1704067200,sha256="+strings.Repeat("0", 64), []byte("{}"))
	f.Add("t=,sha256=", []byte(nil))
	f.Add("sha256=x,t=1", []byte("x"))
	f.Fuzz(func(t *testing.T, header string, body []byte) {
		err := VerifyWakeSignature(secret, header, body, signedAt, 0)
		switch {
		case err == nil:
			// Only a header carrying the true signature of the body at a
			// time within the tolerance passes.
			ts, sigs, perr := parseSignatureHeader(header)
			if perr != nil || len(sigs) == 0 {
				t.Fatalf("accepted unparsable header %q", header)
			}
			if d := signedAt.Sub(time.Unix(ts, 0)); d > DefaultSignatureTolerance || d < -DefaultSignatureTolerance {
				t.Fatalf("accepted timestamp %d", ts)
			}
			want := sig(secret, ts, string(body))
			if !strings.Contains(strings.ToLower(header), strings.SplitN(want, "sha256=", 2)[1]) {
				t.Fatalf("accepted header %q without the body's signature", header)
			}
		case errors.Is(err, ErrSignatureMalformed), errors.Is(err, ErrSignatureTimestamp), errors.Is(err, ErrSignatureMismatch):
		default:
			t.Fatalf("unexpected error %v", err)
		}
	})
}

func FuzzParseWake(f *testing.F) {
	f.Add([]byte(wakeBody))
	f.Add([]byte(`{"epoch": 1}`))
	f.Add([]byte(`{"streams": [{}]}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		w, err := ParseWake(body)
		if err != nil {
			if !errors.Is(err, ErrWakeInvalid) {
				t.Fatalf("error %v is not ErrWakeInvalid", err)
			}
			return
		}
		if w.ConsumerID == "" || w.Epoch < 1 || w.WakeID == "" || w.Callback == "" || w.Token == "" || w.PrimaryStream == "" {
			t.Fatalf("accepted incomplete wake %+v", w)
		}
	})
}

func TestTraceparentOf(t *testing.T) {
	t.Parallel()
	const good = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	for v, want := range map[string]string{
		good: good,
		"":   "",
		"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7":     "",
		"00-4BF92F3577B34DA6A3CE929D0E0E4736-00F067AA0BA902B7-01":  "",
		"00_4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01":  "",
		"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01x": "",
	} {
		h := http.Header{}
		if v != "" {
			h.Set("traceparent", v)
		}
		if got := TraceparentOf(h); got != want {
			t.Errorf("TraceparentOf(%q) = %q, want %q", v, got, want)
		}
	}
}
