package auth

import (
	"errors"
	"net/http"

	"github.com/heraldstreams/herald/internal/httpjson"
)

// Error is an access control failure with its HTTP status and JSON code.
// Authenticate and Require return (and write) only these.
type Error struct {
	Status  int
	Code    string
	Message string
}

func (e *Error) Error() string { return "auth: " + e.Message }

// The failures. 401s mean "present a valid credential"; 403 means the
// credential is valid but does not allow this request.
var (
	ErrUnauthenticated = &Error{http.StatusUnauthorized, "UNAUTHENTICATED", "a valid API key or token is required: Authorization: Bearer <key>"}
	ErrInvalidKey      = &Error{http.StatusUnauthorized, "INVALID_KEY", "the API key or token is not valid (unknown, revoked, or malformed)"}
	ErrKeyExpired      = &Error{http.StatusUnauthorized, "KEY_EXPIRED", "the API key or token has expired"}
	ErrForbidden       = &Error{http.StatusForbidden, "FORBIDDEN", "the credential does not allow this request"}
	// ErrTenantForbidden: a credential of a tenant named another tenant,
	// or asked for what belongs to the whole installation.
	ErrTenantForbidden = &Error{http.StatusForbidden, "TENANT_FORBIDDEN", "a credential of a tenant cannot act for another tenant or the installation"}
	// ErrInvalidTenantClaim: a platform token's tenant claim is present
	// but not a tenant name (a number, an array, "", null, a character
	// a tenant cannot hold).
	ErrInvalidTenantClaim = &Error{http.StatusUnauthorized, "INVALID_TENANT_CLAIM", "the token's tenant claim must be a non-empty string of letters, digits, '-', '_' and '.' (at most 128)"}
	// ErrTenantClaimRequired: a platform token carries no tenant claim,
	// and the server requires one (--jwt-require-tenant).
	ErrTenantClaimRequired = &Error{http.StatusUnauthorized, "INVALID_TENANT_CLAIM", "the token has no tenant claim, and this server accepts only tokens of a tenant"}
	// ErrUnavailable: the credential could not be checked (the store or
	// the identity provider's keys are unreachable); retry later.
	ErrUnavailable = &Error{http.StatusServiceUnavailable, "AUTH_UNAVAILABLE", "credentials cannot be checked right now; retry later"}
)

// tenantForbidden is ErrTenantForbidden with a reason.
func tenantForbidden(msg string) *Error {
	return &Error{http.StatusForbidden, ErrTenantForbidden.Code, msg}
}

// forbidden is ErrForbidden with a reason.
func forbidden(msg string) *Error {
	return &Error{http.StatusForbidden, ErrForbidden.Code, msg}
}

// errorDetail is what an error body says.
type errorDetail = httpjson.Detail

// WriteError writes err as Herald's JSON error body: an *Error with its
// status and code, anything else as a 500. A 401 carries the
// WWW-Authenticate challenge of RFC 6750.
func WriteError(w http.ResponseWriter, r *http.Request, err error) {
	var ae *Error
	if !errors.As(err, &ae) {
		ae = &Error{http.StatusInternalServerError, "INTERNAL", "internal error"}
	}
	if ae.Status == http.StatusUnauthorized {
		challenge := `Bearer realm="herald"`
		if ae != ErrUnauthenticated {
			challenge += `, error="invalid_token"`
		}
		w.Header().Set("WWW-Authenticate", challenge)
	}
	writeError(w, r, ae.Status, errorDetail{Code: ae.Code, Message: ae.Message})
}

func writeError(w http.ResponseWriter, r *http.Request, status int, d errorDetail) {
	httpjson.WriteError(w, r, status, d)
}
