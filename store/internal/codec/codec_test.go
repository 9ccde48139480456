package codec

import "testing"

// FuzzParseDeliveryID: an id parses exactly when it is the canonical id of
// a positive seq.
func FuzzParseDeliveryID(f *testing.F) {
	for _, s := range []string{"dlv_1", "dlv_9223372036854775807", "dlv_0", "dlv_01", "dlv_-1", "dlv_+1", "dlv_", "x", "dlv_1a", "dlv_99999999999999999999"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, id string) {
		seq, ok := ParseDeliveryID(id)
		if ok != (seq > 0 && DeliveryID(seq) == id) {
			t.Fatalf("ParseDeliveryID(%q) = %d, %v", id, seq, ok)
		}
	})
}
