package dispatch

import (
	"context"
	"errors"
	"fmt"

	"github.com/heraldstreams/herald/delivery"
	"github.com/heraldstreams/herald/webhook"
)

// urlCheck wraps the sender's URL check for delivery.ValidateEndpoint: a
// URL the sender refuses (webhook.ErrURLRefused) becomes a
// *delivery.ValidationError with CodeURLRefused that keeps the refusal's
// reason; any other error (a cancelled lookup) is returned as is.
func urlCheck(check func(ctx context.Context, raw string) error) func(ctx context.Context, raw string) error {
	return func(ctx context.Context, raw string) error {
		err := check(ctx, raw)
		if errors.Is(err, webhook.ErrURLRefused) {
			return &delivery.ValidationError{Code: delivery.CodeURLRefused, Field: "url", Message: refusalMessage(err), Err: err}
		}
		return err
	}
}

func refusalMessage(err error) string {
	var re *webhook.RefusedError
	if errors.As(err, &re) {
		return fmt.Sprintf("%s (%s)", re.Detail, re.Reason)
	}
	return err.Error()
}
