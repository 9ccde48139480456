package protocol

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"testing"
)

func TestFrameJSON(t *testing.T) {
	t.Parallel()
	cases := []struct {
		body     string
		framed   string
		messages int
	}{
		{`{"event": "created"}`, "{\"event\":\"created\"}\n", 1},
		{`[{"event": "a"}, {"event": "b"}]`, "{\"event\":\"a\"}\n{\"event\":\"b\"}\n", 2},
		{`[[1,2], [3,4]]`, "[1,2]\n[3,4]\n", 2},
		{`[[[1,2,3]]]`, "[[1,2,3]]\n", 1},
		{` 42 `, "42\n", 1},
		{`"a,b]"`, "\"a,b]\"\n", 1},
		{`["x,\"]y", {"k":[1,{"z":","}]}, null]`, "\"x,\\\"]y\"\n{\"k\":[1,{\"z\":\",\"}]}\nnull\n", 3},
		{"{\"m\":\"line1\\nline2\"}", "{\"m\":\"line1\\nline2\"}\n", 1},
		{"[\n 1 ,\r\n 2\t]", "1\n2\n", 2},
		{`"<&>"`, "\"<&>\"\n", 1},
	}
	for _, c := range cases {
		framed, n, err := FrameJSON([]byte(c.body), false)
		if err != nil || string(framed) != c.framed || n != c.messages {
			t.Errorf("FrameJSON(%q) = %q, %d, %v; want %q, %d", c.body, framed, n, err, c.framed, c.messages)
		}
	}
}

func TestFrameJSONEmptyArray(t *testing.T) {
	t.Parallel()
	if _, _, err := FrameJSON([]byte(" [ ] "), false); !errors.Is(err, ErrEmptyJSONArray) {
		t.Errorf("append of [] error = %v", err)
	}
	framed, n, err := FrameJSON([]byte("[]"), true)
	if err != nil || len(framed) != 0 || n != 0 {
		t.Errorf("create with [] = %q, %d, %v", framed, n, err)
	}
}

func TestFrameJSONRejectsInvalid(t *testing.T) {
	t.Parallel()
	for _, body := range []string{"", " ", "{ invalid json }", "{", "[1,]", "1 2", "[1] x", "\xff", "\"\xff\"", "nul", "{\"a\":1}}"} {
		if _, _, err := FrameJSON([]byte(body), true); !errors.Is(err, ErrInvalidJSON) {
			t.Errorf("FrameJSON(%q) error = %v, want ErrInvalidJSON", body, err)
		}
	}
}

func TestAppendJSONArray(t *testing.T) {
	t.Parallel()
	cases := map[string]string{
		"":                    "[]",
		"1\n":                 "[1]",
		"{\"a\":1}\n[2]\n":    "[{\"a\":1},[2]]",
		"\"x\"\nnull\ntrue\n": "[\"x\",null,true]",
	}
	for framed, want := range cases {
		got := AppendJSONArray([]byte("prefix:"), []byte(framed))
		if string(got) != "prefix:"+want {
			t.Errorf("AppendJSONArray(%q) = %q, want %q", framed, got, want)
		}
		if JSONArrayLen(len(framed)) != len(want) {
			t.Errorf("JSONArrayLen(%d) = %d, want %d", len(framed), JSONArrayLen(len(framed)), len(want))
		}
	}
}

func TestAppendJSONArrayLeavesInputAlone(t *testing.T) {
	t.Parallel()
	framed := []byte("1\n2\n")
	AppendJSONArray(nil, framed)
	if string(framed) != "1\n2\n" {
		t.Errorf("input changed to %q", framed)
	}
}

// Appends are framed one by one and read back as one array: the array must
// hold the messages of every append in order.
func TestFrameThenArrayConcatenatesAppends(t *testing.T) {
	t.Parallel()
	var stored []byte
	for _, body := range []string{`{"single":1}`, `[{"batch":2},{"batch":3}]`, `[["nested","array"]]`, `42`} {
		framed, _, err := FrameJSON([]byte(body), false)
		if err != nil {
			t.Fatal(err)
		}
		stored = append(stored, framed...)
	}
	var got []any
	if err := json.Unmarshal(AppendJSONArray(nil, stored), &got); err != nil {
		t.Fatal(err)
	}
	want := []any{map[string]any{"single": 1.0}, map[string]any{"batch": 2.0}, map[string]any{"batch": 3.0}, []any{"nested", "array"}, 42.0}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("read back %#v, want %#v", got, want)
	}
}

func BenchmarkAppendJSONArray(b *testing.B) {
	msg := []byte(`{"id":12345,"type":"event","payload":"abcdefghijklmnopqrstuvwxyz0123456789"}` + "\n")
	framed := bytes.Repeat(msg, 10<<20/len(msg))
	dst := make([]byte, 0, JSONArrayLen(len(framed)))
	b.SetBytes(int64(len(framed)))
	for b.Loop() {
		dst = AppendJSONArray(dst[:0], framed)
	}
}

func BenchmarkFrameJSON(b *testing.B) {
	body := []byte(`[{"id":1,"type":"event","payload":"abcdefghijklmnopqrstuvwxyz"},{"id":2,"type":"event","payload":"abcdefghijklmnopqrstuvwxyz"}]`)
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		if _, _, err := FrameJSON(body, false); err != nil {
			b.Fatal(err)
		}
	}
}

// JoinJSONMessages turns every '\n' into ',' and leaves every other
// byte alone, whatever the byte values around it (bytes with the high
// bit set, bytes next to '\n') and wherever the piece starts and ends
// against its eight-byte words.
func TestJoinJSONMessages(t *testing.T) {
	t.Parallel()
	var all []byte
	for b := range 256 {
		all = append(all, byte(b), '\n', byte(b), byte(b)^'\n')
	}
	all = append(all, bytes.Repeat([]byte("\n"), 17)...)
	for start := range 9 {
		for end := len(all) - 9; end <= len(all); end++ {
			piece := bytes.Clone(all[start:end])
			JoinJSONMessages(piece)
			want := bytes.ReplaceAll(all[start:end], []byte("\n"), []byte(","))
			if !bytes.Equal(piece, want) {
				t.Fatalf("[%d:%d]: %q, want %q", start, end, piece, want)
			}
		}
	}
}
