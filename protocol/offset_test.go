package protocol

import (
	"errors"
	"testing"
)

func TestFormatOffset(t *testing.T) {
	t.Parallel()
	cases := []struct {
		pos  int64
		want string
	}{
		{0, "0000000000000000_0000000000000000"},
		{1234, "0000000000000000_0000000000001234"},
		{9_999_999_999_999_999, "0000000000000000_9999999999999999"},
		{10_000_000_000_000_000, "0000000000000001_0000000000000000"},
		{1<<63 - 1, "0000000000000922_3372036854775807"},
	}
	for _, c := range cases {
		if got := FormatOffset(c.pos); got != c.want {
			t.Errorf("FormatOffset(%d) = %q, want %q", c.pos, got, c.want)
		}
	}
}

func TestOffsetsSortLikePositions(t *testing.T) {
	t.Parallel()
	positions := []int64{0, 1, 9, 10, 99, 100, 1 << 20, 9_999_999_999_999_999, 10_000_000_000_000_000, 1<<63 - 1}
	for i := 1; i < len(positions); i++ {
		a, b := FormatOffset(positions[i-1]), FormatOffset(positions[i])
		if !(a < b) {
			t.Errorf("offset of %d (%s) does not sort before offset of %d (%s)", positions[i-1], a, positions[i], b)
		}
	}
}

func TestParseOffset(t *testing.T) {
	t.Parallel()
	good := []struct {
		in   string
		want Offset
	}{
		{"-1", Offset{Kind: OffsetKindStart}},
		{"now", Offset{Kind: OffsetKindNow}},
		{"0000000000000000_0000000000000000", Offset{Kind: OffsetKindPosition, Position: 0}},
		{"0000000000000000_0000000000000042", Offset{Kind: OffsetKindPosition, Position: 42}},
		{"0000000000000922_3372036854775807", Offset{Kind: OffsetKindPosition, Position: 1<<63 - 1}},
	}
	for _, c := range good {
		got, err := ParseOffset(c.in)
		if err != nil || got != c.want {
			t.Errorf("ParseOffset(%q) = %+v, %v; want %+v", c.in, got, err, c.want)
		}
	}
	bad := []string{
		"", " ", "0", "-2", "NOW", "Now", "0,1", "0 1", "abc", "../x", "a/b",
		"00000000000000000000000000000000", // no separator
		"0000000000000000-0000000000000000",
		"0000000000000000_000000000000000",   // short
		"0000000000000000_00000000000000000", // long
		"000000000000000a_0000000000000000",
		"0000000000000000_000000000000000\x00",
		"0000000000000922_3372036854775808", // int64 overflow
		"9999999999999999_9999999999999999",
		"+000000000000000_0000000000000000",
	}
	for _, in := range bad {
		if _, err := ParseOffset(in); !errors.Is(err, ErrInvalidOffset) {
			t.Errorf("ParseOffset(%q) error = %v, want ErrInvalidOffset", in, err)
		}
	}
}

func TestParsePositionRoundTrip(t *testing.T) {
	t.Parallel()
	for _, pos := range []int64{0, 1, 77, 1 << 40, 1<<63 - 1} {
		got, err := ParsePosition(FormatOffset(pos))
		if err != nil || got != pos {
			t.Errorf("round trip of %d = %d, %v", pos, got, err)
		}
	}
}

func TestAppendOffsetDoesNotAllocate(t *testing.T) {
	buf := make([]byte, 0, 64)
	allocs := testing.AllocsPerRun(100, func() { buf = AppendOffset(buf[:0], 123456789) })
	if allocs != 0 {
		t.Errorf("AppendOffset allocated %v times per call", allocs)
	}
}
