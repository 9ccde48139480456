package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"mime"
	"net"
	"net/http"
	"strings"

	"github.com/heraldstreams/herald/auth"
	"github.com/heraldstreams/herald/internal/httpjson"
)

// authorize checks r's credential against rule; on failure it answers
// (401 or 403 with a JSON code), counts the failure and returns false.
func (s *Server) authorize(w http.ResponseWriter, r *http.Request, rule auth.Rule) (*auth.Principal, bool) {
	p, err := s.auth.Check(r, rule)
	if err != nil {
		var ae *auth.Error
		code := "INTERNAL"
		if errors.As(err, &ae) {
			code = ae.Code
		}
		s.authFailures.WithLabelValues(code).Inc()
		status := http.StatusInternalServerError
		if ae != nil {
			status = ae.Status
		}
		s.auditRefusal(r, s.credentialID(r, status), status, code)
		auth.WriteError(w, r, err)
		return nil, false
	}
	return p, true
}

// isChange reports whether a request with this method may change state.
func isChange(method string) bool {
	return method != http.MethodGet && method != http.MethodHead && method != http.MethodOptions
}

// statusWriter remembers the status a handler wrote and counts the body
// bytes.
type statusWriter struct {
	http.ResponseWriter
	code  int
	bytes int64
}

func (w *statusWriter) WriteHeader(code int) {
	if w.code == 0 {
		w.code = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.code == 0 {
		w.code = http.StatusOK
	}
	n, err := w.ResponseWriter.Write(b)
	w.bytes += int64(n)
	return n, err
}

// Unwrap lets http.ResponseController reach the connection.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (w *statusWriter) status() int {
	if w.code == 0 {
		return http.StatusOK
	}
	return w.code
}

// Errors of the browser checks.
var (
	errHostNotAllowed   = &httpjson.Error{Status: http.StatusMisdirectedRequest, Code: "HOST_NOT_ALLOWED", Message: "this Host is not one Herald serves (see --allowed-hosts)"}
	errOriginNotAllowed = &httpjson.Error{Status: http.StatusForbidden, Code: "ORIGIN_NOT_ALLOWED", Message: "this browser origin may not call Herald (see --cors-origins)"}
	errNotJSON          = &httpjson.Error{Status: http.StatusUnsupportedMediaType, Code: "UNSUPPORTED_MEDIA_TYPE", Message: "the request body must be JSON: Content-Type: application/json"}
)

// hostAllowed reports whether the request's Host names this server: any
// host when no list is configured, else one of the list (port ignored,
// case-insensitive). With a list, a web page on another name that
// resolves to Herald's address (DNS rebinding) is refused.
func (s *Server) hostAllowed(host string) bool {
	if len(s.allowedHosts) == 0 {
		return true
	}
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(strings.TrimSuffix(host, "]"), "["), ".")
	for _, a := range s.allowedHosts {
		if strings.EqualFold(a, host) {
			return true
		}
	}
	return false
}

// hasBody reports whether a request carries a body.
func hasBody(r *http.Request) bool {
	return r.ContentLength != 0 && r.Body != nil && r.Body != http.NoBody
}

// isJSON reports whether a Content-Type is JSON (application/json or a
// +json type).
func isJSON(contentType string) bool {
	mt, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		return false
	}
	return mt == "application/json" || strings.HasSuffix(mt, "+json")
}

// errTenantForbidden: a credential of one tenant wrote a JSON message that
// names another.
var errTenantForbidden = &httpjson.Error{Status: http.StatusForbidden, Code: "TENANT_FORBIDDEN", Message: "a credential of a tenant cannot write a message whose \"tenant\" names another tenant"}

// checkTenant enforces the tenant boundary on stream writes. The delivery
// engine takes an event's tenant from the "tenant" member of its JSON
// message, so a credential of a tenant may write messages that name its
// own tenant or none, never another's: otherwise a raw append would reach
// another tenant's endpoints. framed is JSON-mode data, one message a
// line. Only writers with a tenant pay for the check.
func checkTenant(framed []byte, tenant string) error {
	if tenant == "" {
		return nil
	}
	for len(framed) > 0 {
		msg, rest, _ := bytes.Cut(framed, []byte{'\n'})
		framed = rest
		// Decoded exactly as the engine decodes it: encoding/json matches
		// member names case-insensitively and after unescaping, so no
		// byte search can stand in for it.
		if len(msg) == 0 || msg[0] != '{' {
			continue
		}
		var m struct {
			Tenant json.RawMessage `json:"tenant"`
		}
		if err := json.Unmarshal(msg, &m); err != nil {
			return errTenantForbidden // valid JSON, so only a wrong type gets here
		}
		if len(m.Tenant) == 0 || string(m.Tenant) == "null" {
			continue
		}
		var named string
		if json.Unmarshal(m.Tenant, &named) != nil || named != tenant {
			return errTenantForbidden
		}
	}
	return nil
}
