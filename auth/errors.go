package auth

import (
	"errors"
	"net/http"

	"github.com/heraldstreams/herald/internal/httpjson"
)

// Error is an access control failure with its HTTP status and JSON code:
// Herald's one error type (httpjson.Error). Authenticate and Require
// return (and write) only these.
type Error = httpjson.Error

// The failures. 401s mean "present a valid credential"; 403 means the
// credential is valid but does not allow this request.
var (
	ErrUnauthenticated = &Error{Status: http.StatusUnauthorized, Code: "UNAUTHENTICATED", Message: "a valid API key or token is required: Authorization: Bearer <key>"}
	ErrInvalidKey      = &Error{Status: http.StatusUnauthorized, Code: "INVALID_KEY", Message: "the API key or token is not valid (unknown, revoked, or malformed)"}
	ErrKeyExpired      = &Error{Status: http.StatusUnauthorized, Code: "KEY_EXPIRED", Message: "the API key or token has expired"}
	ErrForbidden       = &Error{Status: http.StatusForbidden, Code: "FORBIDDEN", Message: "the credential does not allow this request"}
	// ErrTenantForbidden: a credential of a tenant named another tenant,
	// or asked for what belongs to the whole installation.
	ErrTenantForbidden = &Error{Status: http.StatusForbidden, Code: "TENANT_FORBIDDEN", Message: "a credential of a tenant cannot act for another tenant or the installation"}
	// ErrInvalidTenantClaim: a platform token's tenant claim is present
	// but not a tenant name (a number, an array, "", null, a character
	// a tenant cannot hold).
	ErrInvalidTenantClaim = &Error{Status: http.StatusUnauthorized, Code: "INVALID_TENANT_CLAIM", Message: "the token's tenant claim must be a non-empty string of letters, digits, '-', '_' and '.' (at most 128)"}
	// ErrTenantClaimRequired: a platform token carries no tenant claim,
	// and the server requires one (--jwt-require-tenant).
	ErrTenantClaimRequired = &Error{Status: http.StatusUnauthorized, Code: "INVALID_TENANT_CLAIM", Message: "the token has no tenant claim, and this server accepts only tokens of a tenant"}
	// ErrUnavailable: the credential could not be checked (the store or
	// the identity provider's keys are unreachable); retry later.
	ErrUnavailable = &Error{Status: http.StatusServiceUnavailable, Code: "AUTH_UNAVAILABLE", Message: "credentials cannot be checked right now; retry later"}
)

// tenantForbidden is ErrTenantForbidden with a reason.
func tenantForbidden(msg string) *Error {
	return &Error{Status: http.StatusForbidden, Code: ErrTenantForbidden.Code, Message: msg}
}

// forbidden is ErrForbidden with a reason.
func forbidden(msg string) *Error {
	return &Error{Status: http.StatusForbidden, Code: ErrForbidden.Code, Message: msg}
}

// WriteError writes err as Herald's JSON error body: an *Error with its
// status and code, anything else as a 500. A 401 carries the
// WWW-Authenticate challenge of RFC 6750.
func WriteError(w http.ResponseWriter, r *http.Request, err error) {
	var ae *Error
	if !errors.As(err, &ae) {
		ae = httpjson.Internal
	}
	if ae.Status == http.StatusUnauthorized {
		challenge := `Bearer realm="herald"`
		if ae != ErrUnauthenticated {
			challenge += `, error="invalid_token"`
		}
		w.Header().Set("WWW-Authenticate", challenge)
	}
	ae.Write(w, r)
}
