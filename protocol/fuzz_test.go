package protocol

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
)

func FuzzParseOffset(f *testing.F) {
	for _, s := range []string{"-1", "now", "", "0", "0000000000000000_0000000000000000", "0000000000000922_3372036854775807",
		"9999999999999999_9999999999999999", "0,1", "../x", "0000000000000000_000000000000000\x00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		o, err := ParseOffset(s)
		if err != nil {
			if !errors.Is(err, ErrInvalidOffset) {
				t.Fatalf("ParseOffset(%q) error %v is not ErrInvalidOffset", s, err)
			}
			return
		}
		switch o.Kind {
		case OffsetKindStart:
			if s != "-1" {
				t.Fatalf("%q parsed as start", s)
			}
		case OffsetKindNow:
			if s != "now" {
				t.Fatalf("%q parsed as now", s)
			}
		case OffsetKindPosition:
			if o.Position < 0 {
				t.Fatalf("%q parsed to negative position %d", s, o.Position)
			}
			// Tokens are canonical: the only token of a position is the
			// one Herald formats, so offsets compare as strings.
			if FormatOffset(o.Position) != s {
				t.Fatalf("%q parsed to %d, which formats as %q", s, o.Position, FormatOffset(o.Position))
			}
			if strings.ContainsAny(s, ",&=?/ ") {
				t.Fatalf("accepted token %q holds a reserved character", s)
			}
		}
	})
}

func FuzzFormatOffsetOrder(f *testing.F) {
	f.Add(int64(0), int64(1))
	f.Add(int64(9_999_999_999_999_999), int64(10_000_000_000_000_000))
	f.Fuzz(func(t *testing.T, a, b int64) {
		if a < 0 || b < 0 {
			return
		}
		fa, fb := FormatOffset(a), FormatOffset(b)
		if (a < b) != (fa < fb) || (a == b) != (fa == fb) {
			t.Fatalf("order of %d, %d differs from order of %q, %q", a, b, fa, fb)
		}
		if pa, err := ParsePosition(fa); err != nil || pa != a {
			t.Fatalf("round trip of %d = %d, %v", a, pa, err)
		}
	})
}

func FuzzFrameJSON(f *testing.F) {
	for _, s := range []string{`{"a":1}`, `[{"a":1},{"b":2}]`, `[[1,2],[3,4]]`, `[[[1]]]`, `[]`, ` [ ] `, `"x,]\"["`, `[1,"a\nb",{"c":[null,true]}]`,
		`{ invalid json }`, `[1,]`, "\xff", `42`, "[\"\\u2028\"]", `{"k":"\\\\"}`} {
		f.Add([]byte(s), false)
		f.Add([]byte(s), true)
	}
	f.Fuzz(func(t *testing.T, body []byte, allowEmpty bool) {
		orig := bytes.Clone(body)
		framed, n, err := FrameJSON(body, allowEmpty)
		if !bytes.Equal(body, orig) {
			t.Fatalf("FrameJSON changed its input")
		}
		if err != nil {
			if !errors.Is(err, ErrInvalidJSON) && !errors.Is(err, ErrEmptyJSONArray) {
				t.Fatalf("unexpected error %v", err)
			}
			if errors.Is(err, ErrInvalidJSON) && json.Valid(body) && isUTF8(body) {
				t.Fatalf("valid JSON %q rejected", body)
			}
			return
		}
		if !json.Valid(body) {
			t.Fatalf("invalid JSON %q accepted", body)
		}
		if bytes.Count(framed, []byte{'\n'}) != n || (n > 0 && framed[len(framed)-1] != '\n') {
			t.Fatalf("framed %q does not hold %d newline-terminated messages", framed, n)
		}
		if bytes.IndexByte(framed, '\r') >= 0 {
			t.Fatalf("framed %q holds a raw CR", framed)
		}
		// Round trip: the array read back means what the body meant, with
		// one level of array flattened.
		var got []any
		if err := json.Unmarshal(AppendJSONArray(nil, framed), &got); err != nil {
			t.Fatalf("array of %q is not JSON: %v", framed, err)
		}
		var v any
		if err := json.Unmarshal(body, &v); err != nil {
			t.Fatal(err)
		}
		want, ok := v.([]any)
		if !ok {
			want = []any{v}
		}
		if len(want) == 0 && len(got) == 0 {
			return
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("body %q read back as %#v, want %#v", body, got, want)
		}
	})
}

func isUTF8(b []byte) bool { return strings.ToValidUTF8(string(b), "\uFFFD") == string(b) }

func FuzzHeaders(f *testing.F) {
	f.Add("3600", "2030-01-02T03:04:05Z", "p", "0", "0", "text/plain; charset=utf-8", "3")
	f.Add("+60", "not-a-timestamp", "", "1e3", "-1", "TEXT/PLAIN", "05")
	f.Add("00060", "2030-01-02T03:04:05.123456789+02:00", "x", "9007199254740992", "9007199254740991", "a/b/c", "-1")
	f.Fuzz(func(t *testing.T, ttl, expires, id, epoch, seq, ct, sub string) {
		if d, err := ParseTTL(ttl); err == nil {
			if d < 0 || FormatTTL(d) != ttl {
				t.Fatalf("TTL %q parsed to %v, formats as %q", ttl, d, FormatTTL(d))
			}
		}
		if e, err := ParseExpiresAt(expires); err == nil && e.Location() != time.UTC {
			t.Fatalf("Expires-At %q not in UTC", expires)
		}
		p, err := ParseProducer(ProducerHeaders{ID: id, Epoch: epoch, Seq: seq, HasID: true, HasEpoch: true, HasSeq: true})
		if err == nil {
			if p.ID == "" || p.Epoch < 0 || p.Epoch > MaxSafeInteger || p.Seq < 0 || p.Seq > MaxSafeInteger {
				t.Fatalf("accepted producer %+v", p)
			}
		}
		if n, err := NormalizeContentType(ct); err == nil {
			again, err := NormalizeContentType(n)
			mt := MediaType(n)
			if err != nil || again != n || n != strings.TrimSpace(n) || len(n) > MaxHeaderValueBytes ||
				mt != strings.ToLower(mt) || strings.ContainsAny(mt, "; \t") || !SameMediaType(n, mt) {
				t.Fatalf("content type %q normalized to %q (media type %q), then %q, %v", ct, n, mt, again, err)
			}
		}
		if v, err := ParseSubOffset(sub); err == nil && (v < 0 || formatInt(v) != sub) {
			t.Fatalf("sub-offset %q parsed to %d", sub, v)
		}
	})
}

func FuzzSSEText(f *testing.F) {
	f.Add([]byte("line1\nline2"))
	f.Add([]byte("a\r\n\r\nevent: control\r\ndata: {}\r\n\r\n"))
	f.Add([]byte(" lead\r\r"))
	f.Fuzz(func(t *testing.T, data []byte) {
		ev := string(AppendSSEData(nil, data, SSEText))
		if !strings.HasPrefix(ev, "event: data\n") || !strings.HasSuffix(ev, "\n\n") {
			t.Fatalf("malformed event %q", ev)
		}
		body := strings.TrimSuffix(strings.TrimPrefix(ev, "event: data\n"), "\n\n")
		if strings.ContainsRune(body, '\r') {
			t.Fatalf("event holds a CR: %q", ev)
		}
		var lines []string
		for _, l := range strings.Split(body, "\n") {
			if !strings.HasPrefix(l, "data:") {
				t.Fatalf("line %q of %q is not a data line", l, ev)
			}
			// What an SSE reader keeps of the line.
			l = strings.TrimPrefix(l, "data:")
			lines = append(lines, strings.TrimPrefix(l, " "))
		}
		// A reader joins the lines with LF: the payload with its line
		// breaks normalized.
		want := strings.ReplaceAll(strings.ReplaceAll(string(data), "\r\n", "\n"), "\r", "\n")
		if got := strings.Join(lines, "\n"); got != want {
			t.Fatalf("reader sees %q, want %q", got, want)
		}
	})
}
