package sqlstore

import (
	"crypto/aes"
	"crypto/cipher"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"strings"
)

// DeliveryIDs turns a delivery's seq (the row's integer key, which orders
// deliveries and makes lookups key lookups) into its public id and back.
// The id is "dlv_" and 32 hex digits: the AES-256 encryption, under a
// random key of the installation, of one block holding the seq and eight
// zero bytes. Without the key, consecutive deliveries have unrelated ids,
// and a made-up id opens to eight zero bytes once in 2^64 tries: ids
// cannot be guessed or enumerated. Backends store the key in the database
// (table id_keys, row DeliveryIDKeyName; in the clear: whoever reads the
// database reads the deliveries too), so ids are stable across restarts
// and the same on every replica.
type DeliveryIDs struct {
	block cipher.Block
}

const (
	deliveryIDPrefix = "dlv_"
	// DeliveryIDKeyName names the key in id_keys.
	DeliveryIDKeyName = "delivery"
	// DeliveryIDKeySize is the size of the key.
	DeliveryIDKeySize = 32
)

// NewDeliveryIDs returns the ids under a DeliveryIDKeySize-byte key.
func NewDeliveryIDs(key []byte) (*DeliveryIDs, error) {
	if len(key) != DeliveryIDKeySize {
		return nil, fmt.Errorf("the delivery id key is %d bytes, want %d", len(key), DeliveryIDKeySize)
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("delivery id key: %w", err)
	}
	return &DeliveryIDs{block: block}, nil
}

// ID is the public id of the delivery with this seq.
func (x *DeliveryIDs) ID(seq int64) string {
	var b [aes.BlockSize]byte
	binary.BigEndian.PutUint64(b[:8], uint64(seq))
	x.block.Encrypt(b[:], b[:])
	return deliveryIDPrefix + hex.EncodeToString(b[:])
}

// Seq returns the seq of a delivery id, ok false when the id is not one
// this installation gave.
func (x *DeliveryIDs) Seq(id string) (int64, bool) {
	rest, ok := strings.CutPrefix(id, deliveryIDPrefix)
	if !ok || len(rest) != hex.EncodedLen(aes.BlockSize) {
		return 0, false
	}
	var b [aes.BlockSize]byte
	if _, err := hex.Decode(b[:], []byte(rest)); err != nil {
		return 0, false
	}
	x.block.Decrypt(b[:], b[:])
	if binary.BigEndian.Uint64(b[8:]) != 0 {
		return 0, false
	}
	seq := int64(binary.BigEndian.Uint64(b[:8]))
	// Only the lower-case spelling is the id.
	return seq, seq > 0 && x.ID(seq) == id
}

// Seqs returns the seqs of the ids this installation gave; others are
// left out.
func (x *DeliveryIDs) Seqs(ids []string) []int64 {
	out := make([]int64, 0, len(ids))
	for _, id := range ids {
		if seq, ok := x.Seq(id); ok {
			out = append(out, seq)
		}
	}
	return out
}
