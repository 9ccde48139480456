package jsontext

import (
	"encoding/json"
	"testing"
)

// AppendString writes what encoding/json writes, for any string.
func FuzzAppendString(f *testing.F) {
	for _, s := range []string{"", "/a/b", "sub:%2Fa", `a"b`, `a\b`, "\x01\n", "é/ü", "<&>", "\u2028", "\xff", "\x7f"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		if got := AppendString([]byte("x"), s); string(got) != "x"+string(want) {
			t.Fatalf("AppendString(%q) = %s, want x%s", s, got, want)
		}
	})
}

func TestAppendArray(t *testing.T) {
	t.Parallel()
	words := []string{"a", `b"`, "c"}
	for n, want := range []string{`[]`, `["a"]`, `["a","b\""]`, `["a","b\"","c"]`} {
		got := AppendArray(nil, n, func(dst []byte, i int) []byte { return AppendString(dst, words[i]) })
		if string(got) != want {
			t.Errorf("%d elements: %s, want %s", n, got, want)
		}
	}
}
