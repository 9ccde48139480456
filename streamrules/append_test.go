package streamrules

import (
	"errors"
	"testing"

	"github.com/heraldstreams/herald/protocol"
)

func TestDecideAppendClosedStream(t *testing.T) {
	t.Parallel()
	closer := protocol.Producer{ID: "p1", Epoch: 2, Seq: 5}
	closedBy := func(p *protocol.Producer) AppendState {
		return AppendState{ContentType: "text/plain", Closed: true, ClosedBy: p,
			Producer: &ProducerState{Epoch: 2, LastSeq: 5}}
	}
	closeOnly := func(p *protocol.Producer) AppendRequest { return AppendRequest{Close: true, Producer: p} }
	withData := func(p *protocol.Producer) AppendRequest {
		return AppendRequest{ContentType: "text/plain", HasData: true, Close: true, Producer: p}
	}

	// The exact request that closed the stream is a duplicate that echoes
	// the sequence number Herald accepted from it.
	for _, req := range []AppendRequest{closeOnly(&closer), withData(&closer)} {
		d, err := DecideAppend(closedBy(&closer), req)
		if err != nil || d.Outcome != Duplicate || d.Write || d.Close ||
			d.Producer == nil || *d.Producer != (ProducerState{Epoch: 2, LastSeq: 5}) {
			t.Errorf("retry of the closing request %+v: %+v, %v", req, d, err)
		}
	}

	// Any other producer request is refused, a close with no body included.
	others := []protocol.Producer{
		{ID: "p2", Epoch: 0, Seq: 0},
		{ID: "p1", Epoch: 2, Seq: 6},
		{ID: "p1", Epoch: 2, Seq: 4},
		{ID: "p1", Epoch: 3, Seq: 0},
	}
	for _, p := range others {
		for _, req := range []AppendRequest{closeOnly(&p), withData(&p)} {
			var ce *ClosedError
			if d, err := DecideAppend(closedBy(&closer), req); !errors.As(err, &ce) {
				t.Errorf("producer %+v on a stream %+v closed: %+v, %v; want a ClosedError", p, closer, d, err)
			}
		}
	}
	// A stream closed without producer headers refuses every producer.
	var ce *ClosedError
	if _, err := DecideAppend(closedBy(nil), closeOnly(&closer)); !errors.As(err, &ce) {
		t.Errorf("producer close of a stream closed without one: %v", err)
	}

	// Without producer headers, closing again is harmless; appending is not.
	if d, err := DecideAppend(closedBy(&closer), closeOnly(nil)); err != nil || d.Outcome != Closed || d.Producer != nil {
		t.Errorf("plain close of a closed stream: %+v, %v", d, err)
	}
	if _, err := DecideAppend(closedBy(nil), withData(nil)); !errors.As(err, &ce) {
		t.Errorf("plain append to a closed stream: %v", err)
	}
}

func TestDecideAppendMatchesMediaType(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		stream, req string
		ok          bool
	}{
		{"text/plain; charset=utf-8", "text/plain", true},
		{"text/plain", "text/plain; charset=utf-8", true},
		{"text/plain; charset=utf-8", "TEXT/PLAIN; charset=iso-8859-1", true},
		{"application/json", "application/json; charset=utf-8", true},
		{"text/plain; charset=utf-8", "text/csv; charset=utf-8", false},
	} {
		d, err := DecideAppend(AppendState{ContentType: c.stream}, AppendRequest{ContentType: c.req, HasData: true})
		switch {
		case c.ok && (err != nil || d.Outcome != Appended):
			t.Errorf("append of %q to a %q stream: %+v, %v", c.req, c.stream, d, err)
		case !c.ok && !errors.Is(err, ErrContentTypeMismatch):
			t.Errorf("append of %q to a %q stream: %v, want ErrContentTypeMismatch", c.req, c.stream, err)
		}
	}
}
