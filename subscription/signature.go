package subscription

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"time"
)

// SignatureHeader is the header that carries a wake notification's
// signature (S8).
const SignatureHeader = "Webhook-Signature"

// SignatureHeaderValue signs a wake notification body for the header
// SignatureHeader (docs/subscriptions.md, The signature):
//
//	t=<unix seconds>,sha256=<hex HMAC-SHA256(secret, "<t>.<body>")>
//
// The key is the whole webhook secret string, "whsec_" prefix included.
// body must be the exact bytes sent. Each delivery attempt signs again with
// its own time, so a retry hours later is within the receiver's tolerance.
func SignatureHeaderValue(secret string, body []byte, now time.Time) string {
	t := strconv.FormatInt(now.Unix(), 10)
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(t))
	mac.Write([]byte{'.'})
	mac.Write(body)
	return "t=" + t + ",sha256=" + hex.EncodeToString(mac.Sum(nil))
}
