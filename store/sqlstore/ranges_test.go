package sqlstore

import (
	"errors"
	"slices"
	"testing"
)

// fakeStream is a stream of fakeStreams: chunks of bytes from position
// 0 (its own from its fork position on), and its source.
type fakeStream struct {
	name    string
	source  *fakeStream
	forkPos int64
	chunks  []string // each starting where the one before ends
	start   int64    // position of the first chunk
	removed bool
	soft    bool
	forks   int
}

type fakeSource struct{ missing bool }

func (fakeSource) Fork(s *fakeStream) (int64, bool) { return s.forkPos, s.source != nil }

func (f fakeSource) Source(s *fakeStream) (*fakeStream, error) {
	if f.missing {
		return nil, errors.New("source missing")
	}
	return s.source, nil
}

func (fakeSource) Chunks(s *fakeStream, r *Range) error {
	from, end := r.Window()
	pos := s.start
	for _, c := range s.chunks {
		start, stop := pos, pos+int64(len(c))
		pos = stop
		if stop <= from || start >= end {
			continue
		}
		if !r.Add(start, stop, []byte(c)) {
			return nil
		}
	}
	return nil
}

func TestReadRangeStitchesForkSources(t *testing.T) {
	t.Parallel()
	src := &fakeStream{name: "src", chunks: []string{"abc", "def"}}
	fork := &fakeStream{name: "fork", source: src, forkPos: 4, start: 4, chunks: []string{"XY", "Z"}}
	for _, c := range []struct {
		from, end int64
		max       int
		want      string
	}{
		{0, 7, 0, "abcdXYZ"},
		{2, 7, 0, "cdXYZ"},
		{5, 7, 0, "YZ"},
		{0, 7, 2, "abc"},   // at least one chunk, whatever its size
		{3, 7, 1, "d"},     // the source's part of a chunk counts
		{1, 6, 4, "bcdXY"}, // the bound is reached within the fork's chunk
	} {
		r := &Range{Max: c.max}
		if err := ReadRange(fakeSource{}, r, fork, c.from, c.end); err != nil || string(r.Out) != c.want {
			t.Errorf("read [%d, %d) max %d = %q, %v; want %q", c.from, c.end, c.max, r.Out, err, c.want)
		}
	}
	// The source is looked up only when the read reaches below the fork.
	r := &Range{}
	if err := ReadRange(fakeSource{missing: true}, r, fork, 4, 7); err != nil || string(r.Out) != "XYZ" {
		t.Errorf("read above the fork = %q, %v", r.Out, err)
	}
	if err := ReadRange(fakeSource{missing: true}, &Range{}, fork, 0, 7); err == nil {
		t.Error("a missing source was not an error")
	}
}

type fakeDeleter struct{ log []string }

func (d *fakeDeleter) Forks(s *fakeStream) (int, error) { return s.forks, nil }
func (d *fakeDeleter) SoftDeleted(s *fakeStream) bool   { return s.soft }
func (d *fakeDeleter) SoftDelete(s *fakeStream) error {
	s.soft = true
	d.log = append(d.log, "soft "+s.name)
	return nil
}

func (d *fakeDeleter) Remove(s *fakeStream) error {
	s.removed = true
	if s.source != nil {
		s.source.forks--
	}
	d.log = append(d.log, "remove "+s.name)
	return nil
}

func (d *fakeDeleter) Source(s *fakeStream) (*fakeStream, bool, error) {
	return s.source, s.source != nil && !s.source.removed, nil
}

func TestDeleteStreamByTheRuleOfForks(t *testing.T) {
	t.Parallel()
	src := &fakeStream{name: "src", forks: 2}
	a := &fakeStream{name: "a", source: src}
	b := &fakeStream{name: "b", source: src}
	d := &fakeDeleter{}
	// A stream forks hold is soft-deleted, and stays.
	if gone, err := DeleteStream(d, src); err != nil || gone || !src.soft || src.removed {
		t.Fatalf("delete the source = %v, %v; %+v", gone, err, src)
	}
	// A fork goes; its source stays while the other fork holds it.
	if gone, err := DeleteStream(d, a); err != nil || !gone || src.removed {
		t.Fatalf("delete a fork = %v, %v; source %+v", gone, err, src)
	}
	// The last fork takes the soft-deleted source with it.
	if gone, err := DeleteStream(d, b); err != nil || !gone || !src.removed {
		t.Fatalf("delete the last fork = %v, %v; source %+v", gone, err, src)
	}
	if want := []string{"soft src", "remove a", "remove b", "remove src"}; !slices.Equal(d.log, want) {
		t.Fatalf("log %v, want %v", d.log, want)
	}
}
