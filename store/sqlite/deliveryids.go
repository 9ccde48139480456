package sqlite

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"strings"
)

// deliveryIDs turns a delivery's seq (the row's integer key, which orders
// deliveries and makes lookups rowid lookups) into its public id and back.
// The id is "dlv_" and 32 hex digits: the AES-256 encryption, under a
// random key of the installation, of one block holding the seq and eight
// zero bytes. Without the key, consecutive deliveries have unrelated ids,
// and a made-up id opens to eight zero bytes once in 2^64 tries: ids
// cannot be guessed or enumerated. The key is stored in the database (in
// the clear: whoever reads the database reads the deliveries too), so
// ids are stable across restarts.
type deliveryIDs struct {
	block cipher.Block
}

const (
	deliveryIDPrefix = "dlv_"
	// deliveryIDKey names the key in id_keys.
	deliveryIDKey = "delivery"
)

func newDeliveryIDs(key []byte) (*deliveryIDs, error) {
	if len(key) != 32 {
		return nil, fmt.Errorf("sqlite: the delivery id key is %d bytes, want 32", len(key))
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("sqlite: delivery id key: %w", err)
	}
	return &deliveryIDs{block: block}, nil
}

// id is the public id of the delivery with this seq.
func (x *deliveryIDs) id(seq int64) string {
	var b [aes.BlockSize]byte
	binary.BigEndian.PutUint64(b[:8], uint64(seq))
	x.block.Encrypt(b[:], b[:])
	return deliveryIDPrefix + hex.EncodeToString(b[:])
}

// seq returns the seq of a delivery id, ok false when the id is not one
// this installation gave.
func (x *deliveryIDs) seq(id string) (int64, bool) {
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
	return seq, seq > 0 && x.id(seq) == id
}

// loadDeliveryIDs reads the delivery id key, making it at the first start
// that finds none. It runs at Open, before the committer starts.
func (s *Store) loadDeliveryIDs(ctx context.Context) error {
	var key []byte
	err := execTx(ctx, s.wconn, func() error {
		err := s.wconn.QueryRowContext(ctx, `SELECT key FROM id_keys WHERE name = ?`, deliveryIDKey).Scan(&key)
		if !isNoRows(err) {
			return err
		}
		key = make([]byte, 32)
		if _, err := rand.Read(key); err != nil {
			return err
		}
		_, err = s.wconn.ExecContext(ctx, `INSERT INTO id_keys (name, key) VALUES (?, ?)`, deliveryIDKey, key)
		return err
	})
	if err != nil {
		return fmt.Errorf("sqlite: delivery id key: %w", err)
	}
	s.ids, err = newDeliveryIDs(key)
	return err
}
