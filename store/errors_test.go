package store

import (
	"errors"
	"testing"
)

func TestForkSourceError(t *testing.T) {
	t.Parallel()
	if err := ForkSourceError(ErrStreamGone); !errors.Is(err, ErrForkSourceGone) {
		t.Errorf("soft-deleted source: %v", err)
	}
	if err := ForkSourceError(ErrNotFound); !errors.Is(err, ErrNotFound) {
		t.Errorf("missing source: %v", err)
	}
}
