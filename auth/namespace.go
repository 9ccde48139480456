package auth

import (
	"errors"
	"strings"

	"github.com/heraldstreams/herald/glob"
)

// DefaultTenantStreamPrefix is the template of a tenant's stream
// namespace (herald serve --tenant-stream-prefix).
const DefaultTenantStreamPrefix = "/tenants/{tenant}/"

// tenantPlaceholder is what a namespace template holds in place of the
// tenant.
const tenantPlaceholder = "{tenant}"

// CheckTenantStreamPrefix checks a namespace template: it starts and ends
// with '/', holds {tenant} once, and is otherwise literal stream-path text
// (no wildcard, no empty, "." or ".." segment), so every tenant's
// namespace is a plain path prefix that no other tenant's overlaps.
func CheckTenantStreamPrefix(template string) error {
	if !strings.HasPrefix(template, "/") || !strings.HasSuffix(template, "/") {
		return errors.New("the tenant stream prefix must start and end with '/', such as " + DefaultTenantStreamPrefix)
	}
	if strings.Count(template, tenantPlaceholder) != 1 {
		return errors.New("the tenant stream prefix must hold " + tenantPlaceholder + " exactly once, such as " + DefaultTenantStreamPrefix)
	}
	// With a sample tenant, the namespace less its final '/' must be a
	// literal pattern written in its canonical form (which refuses '*',
	// %2A, empty and dot segments, control bytes).
	ns := strings.Replace(template, tenantPlaceholder, "t", 1)
	root := ns[:len(ns)-1]
	if p, err := glob.Compile(root); err != nil || !p.Literal() || p.String() != root {
		return errors.New("the tenant stream prefix must be a plain stream path with " + tenantPlaceholder + " in it, such as " + DefaultTenantStreamPrefix)
	}
	return nil
}

// namespaceTenant reports whether a tenant can have a stream namespace: it
// is one non-empty path segment of the characters a key's tenant may
// hold, and not "." or "..". A tenant that cannot (a platform token's
// claim may hold anything) reaches no stream at all.
func namespaceTenant(tenant string) bool {
	if tenant == "" || tenant == "." || tenant == ".." || len(tenant) > maxTenantLength {
		return false
	}
	for i := 0; i < len(tenant); i++ {
		c := tenant[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_' || c == '.') {
			return false
		}
	}
	return true
}

// TenantNamespace returns the stream namespace of a tenant under a
// template checked by CheckTenantStreamPrefix: the template with the
// tenant in place of {tenant}, such as "/tenants/acme/". The tenant owns
// every stream whose path starts with it, and the path it names without
// its final '/' ("/tenants/acme"), so the pattern namespace + "**" holds
// exactly the tenant's streams. It returns "" when the tenant has no
// namespace: the platform (""), or a tenant that is not a plain path
// segment (see namespaceTenant).
func TenantNamespace(template, tenant string) string {
	if !namespaceTenant(tenant) || !strings.Contains(template, tenantPlaceholder) {
		return ""
	}
	return strings.Replace(template, tenantPlaceholder, tenant, 1)
}

// StreamOwner returns the tenant whose namespace under template holds the
// stream at path (ok false when none does: the stream is the platform's).
// It allocates nothing, so it may run on every event.
func StreamOwner(template, path string) (tenant string, ok bool) {
	before, after, found := strings.Cut(template, tenantPlaceholder)
	if !found || after == "" || !strings.HasPrefix(path, before) {
		return "", false
	}
	// The tenant's segment runs to the next '/'; the part of the template
	// after {tenant} in that segment (usually none) ends it.
	seg := path[len(before):]
	if k := strings.IndexByte(seg, '/'); k >= 0 {
		seg = seg[:k]
	}
	segTail, _, _ := strings.Cut(after, "/")
	tenant, found = strings.CutSuffix(seg, segTail)
	if !found || !namespaceTenant(tenant) {
		return "", false
	}
	rest := path[len(before)+len(tenant):]
	if rest == after[:len(after)-1] || strings.HasPrefix(rest, after) {
		return tenant, true
	}
	return "", false
}

// inNamespace reports whether path lies in namespace ns (from
// TenantNamespace): it starts with ns or is ns without its final '/'. A
// prefix comparison, no allocation: it runs on every stream request of a
// tenant.
func inNamespace(ns, path string) bool {
	if ns == "" {
		return false
	}
	return strings.HasPrefix(path, ns) || len(path) == len(ns)-1 && path == ns[:len(ns)-1]
}
