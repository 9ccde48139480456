package httpapi

import (
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/heraldstreams/herald/httpapi/apierr"
	"github.com/heraldstreams/herald/subscription"
	"github.com/heraldstreams/herald/subscription/wake"
)

// serveCallback serves POST /callback/{consumer_id} (docs/subscriptions.md,
// The callback API). Every response is JSON: the success body with "ok",
// "token" and "streams", or the error body {"ok": false, "error": {"code",
// "message"}, "token"} with the status of its error table.
func serveCallback(w http.ResponseWriter, r *http.Request, svc SubscriptionService, log errorLogger) {
	fail := func(err error) {
		token := ""
		var ce *wake.CallbackError
		if errors.As(err, &ce) {
			token = ce.Token
		}
		e, known := apierr.Callback(r, err)
		if !known {
			log.logError(r, err)
			token = "" // a server fault's answer renews nothing
		}
		// The callback protocol's own body shape, with the table's code.
		writeJSON(w, e.Status, subscription.ErrorResponse{Error: subscription.ErrorDetail{Code: e.Code, Message: e.Message}, Token: token})
	}
	id, err := callbackConsumerID(r)
	if err != nil {
		fail(err)
		return
	}
	// A body over the limit is refused without reading more of it than
	// the limit: at once when its length is announced.
	tooLarge := fmt.Errorf("%w: the limit is %d bytes", subscription.ErrBodyTooLarge, maxSubscriptionBody)
	if r.ContentLength > maxSubscriptionBody {
		fail(tooLarge)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxSubscriptionBody))
	var maxErr *http.MaxBytesError
	if errors.As(err, &maxErr) {
		fail(tooLarge)
		return
	}
	if err != nil {
		fail(fmt.Errorf("%w: the body could not be read: %v", subscription.ErrInvalidRequest, err))
		return
	}
	resp, err := svc.Callback(r.Context(), &wake.CallbackParams{
		ConsumerID: id,
		Token:      bearerToken(r.Header.Get("Authorization")),
		Body:       body,
	})
	if err != nil {
		fail(err)
		return
	}
	writeJSON(w, http.StatusOK, resp)
}
