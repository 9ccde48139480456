package protocol

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestParseTTL(t *testing.T) {
	t.Parallel()
	good := map[string]time.Duration{"0": 0, "1": time.Second, "3600": time.Hour, "99999": 99999 * time.Second}
	for in, want := range good {
		if got, err := ParseTTL(in); err != nil || got != want {
			t.Errorf("ParseTTL(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "abc", "-1", "+60", "00060", "01", "60.5", "1e3", " 60", "60 ", "0x10", "99999999999999999999", "9223372036854775807"} {
		if _, err := ParseTTL(in); !errors.Is(err, ErrInvalidTTL) {
			t.Errorf("ParseTTL(%q) error = %v, want ErrInvalidTTL", in, err)
		}
	}
}

func TestFormatTTL(t *testing.T) {
	t.Parallel()
	if got := FormatTTL(3600 * time.Second); got != "3600" {
		t.Errorf("FormatTTL = %q", got)
	}
}

func TestParseExpiresAt(t *testing.T) {
	t.Parallel()
	want := time.Date(2030, 1, 2, 3, 4, 5, 678_000_000, time.UTC)
	for _, in := range []string{"2030-01-02T03:04:05.678Z", "2030-01-02T03:04:05.678+00:00", "2030-01-02T05:04:05.678+02:00"} {
		got, err := ParseExpiresAt(in)
		if err != nil || !got.Equal(want) || got.Location() != time.UTC {
			t.Errorf("ParseExpiresAt(%q) = %v, %v", in, got, err)
		}
	}
	for _, in := range []string{"", "not-a-timestamp", "2030-01-02", "2030-01-02 03:04:05Z", "1767225600"} {
		if _, err := ParseExpiresAt(in); !errors.Is(err, ErrInvalidExpiresAt) {
			t.Errorf("ParseExpiresAt(%q) error = %v", in, err)
		}
	}
	if got := FormatExpiresAt(want); got != "2030-01-02T03:04:05.678Z" {
		t.Errorf("FormatExpiresAt = %q", got)
	}
}

func TestParseExpiry(t *testing.T) {
	t.Parallel()
	if _, err := ParseExpiry("60", true, "2030-01-02T03:04:05Z", true); !errors.Is(err, ErrTTLAndExpiresAt) {
		t.Errorf("both headers: error = %v", err)
	}
	e, err := ParseExpiry("60", true, "", false)
	if err != nil || e.TTL != time.Minute || !e.ExpiresAt.IsZero() {
		t.Errorf("TTL only: %+v, %v", e, err)
	}
	e, err = ParseExpiry("", false, "2030-01-02T03:04:05Z", true)
	if err != nil || e.TTL != 0 || e.ExpiresAt.IsZero() {
		t.Errorf("Expires-At only: %+v, %v", e, err)
	}
	e, err = ParseExpiry("", false, "", false)
	if err != nil || e != (Expiry{}) {
		t.Errorf("neither: %+v, %v", e, err)
	}
	if _, err := ParseExpiry("", true, "", false); !errors.Is(err, ErrInvalidTTL) {
		t.Errorf("empty TTL: %v", err)
	}
}

func TestParseClosed(t *testing.T) {
	t.Parallel()
	for _, v := range []string{"true", "TRUE", "True", "tRuE"} {
		if !ParseClosed(v) {
			t.Errorf("ParseClosed(%q) = false", v)
		}
	}
	for _, v := range []string{"", "false", "yes", "1", " true", "true ", "truee"} {
		if ParseClosed(v) {
			t.Errorf("ParseClosed(%q) = true", v)
		}
	}
}

func TestParseProducer(t *testing.T) {
	t.Parallel()
	full := ProducerHeaders{ID: "p", Epoch: "3", Seq: "9007199254740991", HasID: true, HasEpoch: true, HasSeq: true}
	p, err := ParseProducer(full)
	if err != nil || *p != (Producer{ID: "p", Epoch: 3, Seq: MaxSafeInteger}) {
		t.Fatalf("ParseProducer(full) = %+v, %v", p, err)
	}
	if p, err := ParseProducer(ProducerHeaders{}); p != nil || err != nil {
		t.Errorf("no headers = %+v, %v", p, err)
	}
	bad := []ProducerHeaders{
		{ID: "p", HasID: true},
		{Epoch: "0", HasEpoch: true},
		{ID: "p", Epoch: "0", HasID: true, HasEpoch: true},
		{Seq: "0", Epoch: "0", HasSeq: true, HasEpoch: true},
		{ID: "", Epoch: "0", Seq: "0", HasID: true, HasEpoch: true, HasSeq: true},
		{ID: "p", Epoch: "0", Seq: "1abc", HasID: true, HasEpoch: true, HasSeq: true},
		{ID: "p", Epoch: "0xyz", Seq: "0", HasID: true, HasEpoch: true, HasSeq: true},
		{ID: "p", Epoch: "1e3", Seq: "0", HasID: true, HasEpoch: true, HasSeq: true},
		{ID: "p", Epoch: "-1", Seq: "0", HasID: true, HasEpoch: true, HasSeq: true},
		{ID: "p", Epoch: "0", Seq: "9007199254740992", HasID: true, HasEpoch: true, HasSeq: true},
		{ID: "p", Epoch: "", Seq: "0", HasID: true, HasEpoch: true, HasSeq: true},
	}
	for _, h := range bad {
		if _, err := ParseProducer(h); !errors.Is(err, ErrProducerHeaders) {
			t.Errorf("ParseProducer(%+v) error = %v", h, err)
		}
	}
}

func TestParseSubOffset(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]int64{"0": 0, "3": 3, "120": 120} {
		if got, err := ParseSubOffset(in); err != nil || got != want {
			t.Errorf("ParseSubOffset(%q) = %d, %v", in, got, err)
		}
	}
	for _, in := range []string{"-1", "abc", "1.5", "05", "+1", ""} {
		if _, err := ParseSubOffset(in); !errors.Is(err, ErrInvalidSubOffset) {
			t.Errorf("ParseSubOffset(%q) error = %v", in, err)
		}
	}
}

func TestNormalizeContentType(t *testing.T) {
	good := map[string]string{
		"text/plain":                       "text/plain",
		"TEXT/PLAIN":                       "TEXT/PLAIN",
		"application/json; charset=utf-8":  "application/json; charset=utf-8",
		" Application/JSON ;charset=UTF-8": "Application/JSON ;charset=UTF-8",
		"application/vnd.api+json":         "application/vnd.api+json",
	}
	for in, want := range good {
		if got, err := NormalizeContentType(in); err != nil || got != want {
			t.Errorf("NormalizeContentType(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"", "text", "/plain", "text/", "text/pl ain", "te\x00xt/plain", "a/b/c", ";charset=utf-8", "text/plain; x=\x01"} {
		if _, err := NormalizeContentType(in); !errors.Is(err, ErrInvalidContentType) {
			t.Errorf("NormalizeContentType(%q) error = %v", in, err)
		}
	}
	allocs := testing.AllocsPerRun(100, func() {
		if _, err := NormalizeContentType("application/octet-stream"); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Errorf("NormalizeContentType of a normal type allocated %v times", allocs)
	}
}

func TestMediaType(t *testing.T) {
	// Not parallel: testing.AllocsPerRun refuses parallel tests.
	for in, want := range map[string]string{
		"text/plain":                       "text/plain",
		"text/plain; charset=utf-8":        "text/plain",
		" Application/JSON ;charset=UTF-8": "application/json",
	} {
		if got := MediaType(in); got != want {
			t.Errorf("MediaType(%q) = %q, want %q", in, got, want)
		}
	}
	same := [][2]string{
		{"text/plain", "text/plain; charset=utf-8"},
		{"text/plain; charset=utf-8", "TEXT/Plain"},
		{"application/json", "application/json;charset=UTF-8"},
	}
	for _, c := range same {
		if !SameMediaType(c[0], c[1]) || !SameMediaType(c[1], c[0]) {
			t.Errorf("SameMediaType(%q, %q) = false", c[0], c[1])
		}
	}
	if SameMediaType("text/plain", "text/csv; charset=utf-8") || SameMediaType("application/json", "application/json-seq") {
		t.Error("different media types match")
	}
	allocs := testing.AllocsPerRun(100, func() {
		if !SameMediaType("text/plain", "text/plain; charset=utf-8") {
			t.Fatal("no match")
		}
	})
	if allocs != 0 {
		t.Errorf("SameMediaType of lower-case types allocated %v times", allocs)
	}
}

func TestContentTypeClasses(t *testing.T) {
	t.Parallel()
	cases := []struct {
		ct         string
		json, text bool
		enc        SSEEncoding
	}{
		{"application/json", true, true, SSEJSON},
		{"text/plain", false, true, SSEText},
		{"text/csv", false, true, SSEText},
		{"text/plain; charset=utf-8", false, true, SSEText},
		{"Text/Markdown", false, true, SSEText},
		{"application/json; charset=utf-8", true, true, SSEJSON},
		{"application/octet-stream", false, false, SSEBase64},
		{"application/x-protobuf", false, false, SSEBase64},
		{"image/png", false, false, SSEBase64},
		{"application/ndjson", false, false, SSEBase64},
	}
	for _, c := range cases {
		if IsJSON(c.ct) != c.json || IsText(c.ct) != c.text || SSEEncodingFor(c.ct) != c.enc {
			t.Errorf("%s: IsJSON=%v IsText=%v enc=%v", c.ct, IsJSON(c.ct), IsText(c.ct), SSEEncodingFor(c.ct))
		}
	}
}

func TestStoredHeaderLengths(t *testing.T) {
	t.Parallel()
	at := strings.Repeat("a", MaxHeaderValueBytes)
	over := at + "a"
	producer := func(id string) ProducerHeaders {
		return ProducerHeaders{ID: id, Epoch: "0", Seq: "0", HasID: true, HasEpoch: true, HasSeq: true}
	}
	if _, err := ParseProducer(producer(at)); err != nil {
		t.Errorf("Producer-Id of %d bytes: %v", len(at), err)
	}
	var tooLong *HeaderTooLongError
	if _, err := ParseProducer(producer(over)); !errors.As(err, &tooLong) || tooLong.Header != "Producer-Id" {
		t.Errorf("Producer-Id of %d bytes: %v, want a HeaderTooLongError", len(over), err)
	}
	// The whole value is stored, parameters included.
	if _, err := NormalizeContentType("text/" + at[5:]); err != nil {
		t.Errorf("content type of %d bytes: %v", len(at), err)
	}
	if _, err := NormalizeContentType("text/" + at[5:] + ";a"); !errors.As(err, &tooLong) || tooLong.Header != "Content-Type" {
		t.Errorf("content type with parameters over %d bytes: %v, want a HeaderTooLongError", len(at), err)
	}
	if _, err := NormalizeContentType("text/" + at[4:]); !errors.As(err, &tooLong) || tooLong.Header != "Content-Type" {
		t.Errorf("content type of %d bytes: %v, want a HeaderTooLongError", len(over), err)
	}
	if err := CheckHeaderLength("Stream-Seq", over); !errors.As(err, &tooLong) || err.Error() != "protocol: Stream-Seq must be at most 256 bytes long" {
		t.Errorf("CheckHeaderLength(over) = %v", err)
	}
	if err := CheckHeaderLength("Stream-Seq", at); err != nil {
		t.Errorf("CheckHeaderLength(at) = %v", err)
	}
}

func TestIsJSONTolerant(t *testing.T) {
	for ct, want := range map[string]bool{
		"application/json":                true,
		"Application/JSON; charset=utf-8": true,
		" application/json ":              true,
		"application/json-seq":            false,
		"text/plain":                      false,
		"":                                false,
	} {
		if got := IsJSON(ct); got != want {
			t.Errorf("IsJSON(%q) = %v, want %v", ct, got, want)
		}
	}
}
