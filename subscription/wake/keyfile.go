package wake

import (
	"fmt"

	"github.com/heraldstreams/herald/internal/privfile"
	"github.com/heraldstreams/herald/subscription"
)

// ReadKeyFile returns the keys in the key file at path (an error
// wrapping fs.ErrNotExist when there is none). Herald keeps the keys it
// makes in its store, encrypted; a key file is what an older Herald left
// in the data directory, read once to move its keys into the store. A
// file that other users may read or write is refused.
func ReadKeyFile(path string) ([]subscription.Key, error) {
	data, err := privfile.ReadKeyFile(path, "subscription", subscription.ErrInvalidKey)
	if err != nil {
		return nil, err
	}
	keys, err := subscription.ParseKeys(string(data))
	if err != nil {
		return nil, fmt.Errorf("key file %s: %w", path, err)
	}
	return keys, nil
}
