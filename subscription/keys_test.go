package subscription

import (
	"bytes"
	"crypto/rand"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
)

func TestParseKeys(t *testing.T) {
	t.Parallel()
	a, b := testKey("k1", 1), testKey("k2", 2)
	for name, text := range map[string]string{
		"one per line": FormatKey(a) + "\n" + FormatKey(b) + "\n",
		"comma list":   FormatKey(a) + ", " + FormatKey(b),
		"comments":     "# keys\n\n  " + FormatKey(a) + "  \n# old:\n" + FormatKey(b),
		"std base64":   "k1:AQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQE=\nk2:AgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgI=",
	} {
		keys, err := ParseKeys(text)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if !reflect.DeepEqual(keys, []Key{a, b}) {
			t.Errorf("%s: %v", name, keys)
		}
	}
	for name, text := range map[string]string{
		"empty":         "",
		"only comments": "# nothing\n",
		"no colon":      "k1",
		"not base64":    "k1:!!!!",
		"short":         "k1:" + strings.Repeat("A", 40),
		"bad id":        "k 1:" + FormatKey(a)[3:],
		"duplicate":     FormatKey(a) + "," + FormatKey(a),
	} {
		if _, err := ParseKeys(text); !errors.Is(err, ErrInvalidKey) {
			t.Errorf("%s: error = %v", name, err)
		}
	}
}

func TestKeyStringHidesSecret(t *testing.T) {
	t.Parallel()
	k := testKey("k1", 'A')
	for _, s := range []string{k.String(), fmt.Sprint(k), fmt.Sprintf("%v", []Key{k})} {
		if strings.Contains(s, "AAAA") || !strings.Contains(s, "k1") {
			t.Errorf("%q", s)
		}
	}
}

func TestGenerateKey(t *testing.T) {
	t.Parallel()
	a, err := GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	b, err := GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	if a.ID == b.ID || bytes.Equal(a.Secret, b.Secret) {
		t.Error("two generated keys are equal")
	}
	keys, err := ParseKeys(FormatKey(a))
	if err != nil || !reflect.DeepEqual(keys, []Key{a}) {
		t.Errorf("FormatKey does not round-trip: %v %v", keys, err)
	}
}

func FuzzParseKeys(f *testing.F) {
	f.Add(FormatKey(testKey("k1", 1)))
	f.Add("# c\nk1:AQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQE=, k2:AgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgI")
	f.Add("k1:")
	f.Fuzz(func(t *testing.T, text string) {
		keys, err := ParseKeys(text)
		if err != nil {
			if !errors.Is(err, ErrInvalidKey) {
				t.Fatalf("error %v is not ErrInvalidKey", err)
			}
			return
		}
		if _, err := NewKeyring(keys, nil); err != nil {
			t.Fatalf("parsed keys make no keyring: %v", err)
		}
		var lines []string
		for _, k := range keys {
			lines = append(lines, FormatKey(k))
		}
		again, err := ParseKeys(strings.Join(lines, "\n"))
		if err != nil || !reflect.DeepEqual(again, keys) {
			t.Fatalf("keys do not round-trip: %v %v", again, err)
		}
	})
}
