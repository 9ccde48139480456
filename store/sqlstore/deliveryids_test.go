package sqlstore

import (
	"math"
	"strings"
	"testing"
)

// testDeliveryIDs are delivery ids under a fixed key.
func testDeliveryIDs(t testing.TB) *DeliveryIDs {
	t.Helper()
	x, err := NewDeliveryIDs([]byte("0123456789abcdef0123456789abcdef"))
	if err != nil {
		t.Fatal(err)
	}
	return x
}

// FuzzParseDeliveryID: an id parses exactly when it is the id of a
// positive seq.
func FuzzParseDeliveryID(f *testing.F) {
	x := testDeliveryIDs(f)
	for _, s := range []string{x.ID(1), x.ID(math.MaxInt64), x.ID(0), x.ID(-1), strings.ToUpper(x.ID(2)), "dlv_1", "dlv_", "x",
		"dlv_00000000000000000000000000000000", x.ID(3) + "0"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, id string) {
		seq, ok := x.Seq(id)
		if ok != (seq > 0 && x.ID(seq) == id) {
			t.Fatalf("Seq(%q) = %d, %v", id, seq, ok)
		}
	})
}

// TestDeliveryIDsAreOpaque: ids round-trip, and consecutive seqs give ids
// that share nothing guessable (each hex digit of an id differs from the
// previous id's as often as chance has it).
func TestDeliveryIDsAreOpaque(t *testing.T) {
	x := testDeliveryIDs(t)
	same, digits := 0, 0
	prev := x.ID(1)
	for seq := int64(1); seq <= 2000; seq++ {
		id := x.ID(seq)
		if got, ok := x.Seq(id); !ok || got != seq {
			t.Fatalf("Seq(ID(%d)) = %d, %v", seq, got, ok)
		}
		if seq > 1 {
			for i := len(deliveryIDPrefix); i < len(id); i++ {
				digits++
				if id[i] == prev[i] {
					same++
				}
			}
		}
		prev = id
	}
	// 1 in 16 by chance: about 4000 of 64000.
	if same < 3000 || same > 5000 {
		t.Fatalf("%d of %d hex digits equal to the previous id's", same, digits)
	}
	if other, err := NewDeliveryIDs([]byte("fedcba9876543210fedcba9876543210")); err != nil || other.ID(1) == x.ID(1) {
		t.Fatalf("another key gives the same id: %v", err)
	}
	if _, err := NewDeliveryIDs([]byte("short")); err == nil {
		t.Fatal("a short key was accepted")
	}
}
