package delivery

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/textproto"
	"slices"
	"strconv"
	"strings"
	"time"
)

// A Profile is the wire format of an endpoint's deliveries: the header
// names, the signature scheme and the JSON envelope of the body. Herald
// ships three (StandardWebhooks, XRucheV1, XAgentIdPSHA256); an
// installation adds its own from a JSON file (see ParseProfiles).
type Profile struct {
	// Name is how endpoints choose it ("profile" in the API).
	Name      string         `json:"name"`
	Headers   ProfileHeaders `json:"headers"`
	Signature ProfileSigning `json:"signature"`
	// Envelope lists the fields of the JSON body, in order.
	Envelope []EnvelopeField `json:"envelope"`
	// UserAgent, when set, is the User-Agent of the deliveries.
	UserAgent string `json:"user_agent,omitempty"`
}

// ProfileHeaders are the names of the headers a profile sends. ID and
// EventType are optional ("" sends none).
type ProfileHeaders struct {
	// ID carries the event id, the same on every attempt.
	ID string `json:"id,omitempty"`
	// Timestamp carries the attempt's time in Unix seconds.
	Timestamp string `json:"timestamp"`
	// EventType carries the event's type.
	EventType string `json:"event_type,omitempty"`
	// Signature carries the signature(s).
	Signature string `json:"signature"`
	// Verification carries the code of an ownership challenge;
	// HeaderVerification when "".
	Verification string `json:"verification,omitempty"`
}

// Signature encodings and keys, and rotation behaviours.
const (
	EncodingHex    = "hex"
	EncodingBase64 = "base64"
	// KeyBase64: the HMAC key is the bytes the base64 after "whsec_"
	// encodes (Standard Webhooks).
	KeyBase64 = "base64"
	// KeySecret: the HMAC key is the whole secret string, "whsec_"
	// included, as bytes.
	KeySecret = "secret"
	// RotationAll: during a rotation's overlap the header holds one
	// signature per secret, separated by Separator.
	RotationAll = "all"
	// RotationPrevious: the header holds one signature; during a
	// rotation's overlap it is made with the previous secret, the one
	// receivers hold, and with the new one once the overlap ends.
	RotationPrevious = "previous"
)

// ProfileSigning is a profile's signature scheme: every signature is
// Prefix + Encoding(HMAC-SHA256(key, Signed with its placeholders
// replaced)).
type ProfileSigning struct {
	// Prefix starts each signature ("v1,", "v1=", "sha256=").
	Prefix string `json:"prefix"`
	// Encoding is "hex" or "base64" (standard, padded).
	Encoding string `json:"encoding"`
	// Signed is what is signed: {id} (the id header's value),
	// {timestamp} (the timestamp header's value) and {body} (the exact
	// body), with any literal text between them; {body} is required.
	Signed string `json:"signed"`
	// Key is "base64" or "secret" (see KeyBase64, KeySecret).
	Key string `json:"key"`
	// Rotation is "all" or "previous" (see RotationAll, RotationPrevious).
	Rotation string `json:"rotation"`
	// Separator joins signatures under RotationAll; " " when "".
	Separator string `json:"separator,omitempty"`
}

// Envelope sources.
const (
	SourceID        = "id"
	SourceType      = "type"
	SourceTimestamp = "timestamp"
	SourceData      = "data"
	SourceTenant    = "tenant"
	// SourceDataPrefix starts a dot path into the event's data
	// ("data.agent_id"); a missing value is null.
	SourceDataPrefix = "data."
)

// EnvelopeField is one field of the body: its value comes From a part of
// the event, or is the constant Value.
type EnvelopeField struct {
	Name string `json:"name"`
	// From is "id", "type", "timestamp" (RFC 3339), "data", "tenant"
	// (null when the event has none) or "data.<path>".
	From string `json:"from,omitempty"`
	// Value is a constant JSON value.
	Value json.RawMessage `json:"value,omitempty"`
}

// Names of the shipped profiles.
const (
	ProfileStandardWebhooks = "standard-webhooks"
	ProfileXRucheV1         = "x-ruche-v1"
	ProfileXAgentIdPSHA256  = "x-agentidp-sha256"
)

func field(name, from string) EnvelopeField { return EnvelopeField{Name: name, From: from} }

// StandardWebhooks is Herald's default: webhook-id, webhook-timestamp and
// webhook-signature "v1,<base64>" of "{id}.{timestamp}.{body}" keyed by
// the secret's base64 part, one signature per secret during a rotation;
// the body is {id, type, timestamp, data}.
var StandardWebhooks = Profile{
	Name: ProfileStandardWebhooks,
	Headers: ProfileHeaders{
		ID: HeaderWebhookID, Timestamp: HeaderWebhookTimestamp, Signature: HeaderWebhookSignature,
	},
	Signature: ProfileSigning{Prefix: "v1,", Encoding: EncodingBase64, Signed: "{id}.{timestamp}.{body}", Key: KeyBase64, Rotation: RotationAll},
	Envelope: []EnvelopeField{
		field("id", SourceID), field("type", SourceType), field("timestamp", SourceTimestamp), field("data", SourceData),
	},
}

// XRucheV1 signs "{timestamp}.{body}" into X-Ruche-Signature "v1=<hex>",
// keyed by the whole secret string, with one signature (the previous
// secret's during a rotation). Its body carries the event id as both
// webhook_id and event_id, the tenant as tenant_id, the routing fields
// agent_id, session_key, logical_turn_id and trace_id lifted from the
// data (null when absent), the data as payload, and schema_version "1.0".
var XRucheV1 = Profile{
	Name: ProfileXRucheV1,
	Headers: ProfileHeaders{
		ID: "X-Ruche-Delivery-Id", Timestamp: "X-Ruche-Timestamp", EventType: "X-Ruche-Event-Type",
		Signature: "X-Ruche-Signature", Verification: "X-Ruche-Verification",
	},
	Signature: ProfileSigning{Prefix: "v1=", Encoding: EncodingHex, Signed: "{timestamp}.{body}", Key: KeySecret, Rotation: RotationPrevious},
	Envelope: []EnvelopeField{
		field("webhook_id", SourceID), field("timestamp", SourceTimestamp), field("event_type", SourceType),
		field("event_id", SourceID), field("tenant_id", SourceTenant), field("agent_id", "data.agent_id"),
		field("session_key", "data.session_key"), field("logical_turn_id", "data.logical_turn_id"),
		field("trace_id", "data.trace_id"), field("payload", SourceData),
		{Name: "schema_version", Value: json.RawMessage(`"1.0"`)},
	},
	UserAgent: "Ruche-Webhook/1.0",
}

// XAgentIdPSHA256 signs "{timestamp}.{body}" into
// X-AgentIdP-Signature-256 "sha256=<hex>", keyed by the whole secret
// string, with one signature (the previous secret's during a rotation);
// the body is {id, type, organizationId (the tenant), timestamp, data}.
var XAgentIdPSHA256 = Profile{
	Name: ProfileXAgentIdPSHA256,
	Headers: ProfileHeaders{
		ID: "X-AgentIdP-Delivery-Id", Timestamp: "X-AgentIdP-Timestamp", EventType: "X-AgentIdP-Event",
		Signature: "X-AgentIdP-Signature-256", Verification: "X-AgentIdP-Verification",
	},
	Signature: ProfileSigning{Prefix: "sha256=", Encoding: EncodingHex, Signed: "{timestamp}.{body}", Key: KeySecret, Rotation: RotationPrevious},
	Envelope: []EnvelopeField{
		field("id", SourceID), field("type", SourceType), field("organizationId", SourceTenant),
		field("timestamp", SourceTimestamp), field("data", SourceData),
	},
}

// Profile limits.
const (
	maxProfiles       = 64
	maxProfileNameLen = 64
	maxEnvelopeFields = 64
	maxPrefixLen      = 64
)

// ProfileSet is the profiles of an installation and its default.
type ProfileSet struct {
	byName map[string]*Profile
	def    string
}

// NewProfileSet returns the shipped profiles plus extra (validated by
// ParseProfiles), with def the default ("" for standard-webhooks).
func NewProfileSet(extra []Profile, def string) (*ProfileSet, error) {
	ps := &ProfileSet{byName: map[string]*Profile{}, def: def}
	for _, p := range append([]Profile{StandardWebhooks, XRucheV1, XAgentIdPSHA256}, extra...) {
		if _, dup := ps.byName[p.Name]; dup {
			return nil, fmt.Errorf("profile %q is defined twice (the shipped profiles are %s)", p.Name, strings.Join(ShippedProfiles(), ", "))
		}
		ps.byName[p.Name] = &p
	}
	if ps.def == "" {
		ps.def = ProfileStandardWebhooks
	}
	if _, ok := ps.byName[ps.def]; !ok {
		return nil, fmt.Errorf("default profile %q is not defined; known: %s", ps.def, strings.Join(ps.Names(), ", "))
	}
	return ps, nil
}

// ShippedProfiles names the profiles Herald ships.
func ShippedProfiles() []string {
	return []string{ProfileStandardWebhooks, ProfileXRucheV1, ProfileXAgentIdPSHA256}
}

// Names returns every profile name, sorted.
func (ps *ProfileSet) Names() []string {
	out := make([]string, 0, len(ps.byName))
	for n := range ps.byName {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// Default is the name of the profile of endpoints that choose none.
func (ps *ProfileSet) Default() string { return ps.def }

// Lookup returns the profile of a name ("" for the default).
func (ps *ProfileSet) Lookup(name string) (*Profile, bool) {
	if name == "" {
		name = ps.def
	}
	p, ok := ps.byName[name]
	return p, ok
}

// profilesFile is the JSON of a profiles file.
type profilesFile struct {
	Profiles []Profile `json:"profiles"`
}

// ParseProfiles reads a profiles file, {"profiles": [<Profile>, ...]},
// refusing unknown fields, and validates every profile. Errors name the
// profile and the field at fault.
func ParseProfiles(data []byte) ([]Profile, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var f profilesFile
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("not a profiles file ({\"profiles\": [...]}): %w", err)
	}
	if dec.More() {
		return nil, errors.New("data after the JSON object")
	}
	if len(f.Profiles) > maxProfiles {
		return nil, fmt.Errorf("%d profiles, over the limit of %d", len(f.Profiles), maxProfiles)
	}
	for i := range f.Profiles {
		if err := f.Profiles[i].Validate(); err != nil {
			return nil, fmt.Errorf("profiles[%d]: %w", i, err)
		}
	}
	return f.Profiles, nil
}

// Validate checks a profile: a name of lower-case letters, digits and
// '-'; valid header names, distinct and none Herald sets itself; a
// signature scheme Herald knows; envelope fields with distinct names, each
// with one known source or a constant.
func (p *Profile) Validate() error {
	if p.Name == "" || len(p.Name) > maxProfileNameLen || strings.Trim(p.Name, "abcdefghijklmnopqrstuvwxyz0123456789-") != "" {
		return fmt.Errorf("name %q: use 1 to %d lower-case letters, digits and '-'", p.Name, maxProfileNameLen)
	}
	errf := func(field, format string, args ...any) error {
		return fmt.Errorf("profile %q: %s: %s", p.Name, field, fmt.Sprintf(format, args...))
	}
	seen := map[string]string{}
	for _, h := range []struct {
		field, name string
		required    bool
	}{
		{"headers.id", p.Headers.ID, false}, {"headers.timestamp", p.Headers.Timestamp, true},
		{"headers.event_type", p.Headers.EventType, false}, {"headers.signature", p.Headers.Signature, true},
		{"headers.verification", p.Headers.Verification, false},
	} {
		if h.name == "" {
			if h.required {
				return errf(h.field, "required")
			}
			continue
		}
		if !validHeaderName(h.name) {
			return errf(h.field, "%q is not a valid header name", h.name)
		}
		canon := textproto.CanonicalMIMEHeaderKey(h.name)
		if why, refused := refusedHeaders[canon]; refused && !strings.HasPrefix(canon, "Webhook-") {
			return errf(h.field, "%s cannot be used (%s)", canon, why)
		}
		if other, dup := seen[canon]; dup {
			return errf(h.field, "%s is already %s", canon, other)
		}
		seen[canon] = h.field
	}
	s := p.Signature
	if len(s.Prefix) > maxPrefixLen || !validHeaderValue(s.Prefix) {
		return errf("signature.prefix", "at most %d bytes without control characters", maxPrefixLen)
	}
	if s.Encoding != EncodingHex && s.Encoding != EncodingBase64 {
		return errf("signature.encoding", "%q: use %q or %q", s.Encoding, EncodingHex, EncodingBase64)
	}
	if s.Key != KeyBase64 && s.Key != KeySecret {
		return errf("signature.key", "%q: use %q (the bytes the secret's base64 encodes) or %q (the whole secret string)", s.Key, KeyBase64, KeySecret)
	}
	if s.Rotation != RotationAll && s.Rotation != RotationPrevious {
		return errf("signature.rotation", "%q: use %q (a signature per secret) or %q (one signature, by the previous secret during the overlap)", s.Rotation, RotationAll, RotationPrevious)
	}
	if s.Rotation == RotationAll && s.Separator != "" && !validHeaderValue(s.Separator) {
		return errf("signature.separator", "control characters are not allowed")
	}
	if err := checkSigned(s.Signed); err != nil {
		return errf("signature.signed", "%v", err)
	}
	if strings.Contains(s.Signed, "{id}") && p.Headers.ID == "" {
		return errf("signature.signed", "{id} is signed but headers.id is not set, so receivers cannot know it")
	}
	return p.validateEnvelope(errf)
}

func (p *Profile) validateEnvelope(errf func(field, format string, args ...any) error) error {
	if len(p.Envelope) == 0 || len(p.Envelope) > maxEnvelopeFields {
		return errf("envelope", "1 to %d fields", maxEnvelopeFields)
	}
	names := map[string]bool{}
	for i, f := range p.Envelope {
		at := fmt.Sprintf("envelope[%d]", i)
		if f.Name == "" || names[f.Name] || !validHeaderValue(f.Name) {
			return errf(at+".name", "%q: names must be distinct, non-empty, without control characters", f.Name)
		}
		names[f.Name] = true
		switch {
		case f.From != "" && len(f.Value) > 0:
			return errf(at, "give from or value, not both")
		case len(f.Value) > 0:
			if !json.Valid(f.Value) {
				return errf(at+".value", "not valid JSON")
			}
		case f.From == SourceID, f.From == SourceType, f.From == SourceTimestamp, f.From == SourceData, f.From == SourceTenant:
		case strings.HasPrefix(f.From, SourceDataPrefix):
			for seg := range strings.SplitSeq(strings.TrimPrefix(f.From, SourceDataPrefix), ".") {
				if seg == "" {
					return errf(at+".from", "%q has an empty path segment", f.From)
				}
			}
		default:
			return errf(at+".from", "%q: use id, type, timestamp, data, tenant or data.<path>, or give a value", f.From)
		}
	}
	return nil
}

// checkSigned checks a signed-content template.
func checkSigned(t string) error {
	if !strings.Contains(t, "{body}") {
		return errors.New("must contain {body}")
	}
	rest := t
	for {
		i := strings.IndexByte(rest, '{')
		if i < 0 {
			return nil
		}
		j := strings.IndexByte(rest[i:], '}')
		if j < 0 {
			return fmt.Errorf("unclosed %q", rest[i:])
		}
		switch tok := rest[i : i+j+1]; tok {
		case "{id}", "{timestamp}", "{body}":
		default:
			return fmt.Errorf("unknown placeholder %s; use {id}, {timestamp} and {body}", tok)
		}
		rest = rest[i+j+1:]
	}
}

// sets reports whether the profile sends the header of canonical name
// canon itself.
func (p *Profile) sets(canon string) bool {
	for _, h := range []string{p.Headers.ID, p.Headers.Timestamp, p.Headers.EventType, p.Headers.Signature, p.VerificationHeader()} {
		if h != "" && textproto.CanonicalMIMEHeaderKey(h) == canon {
			return true
		}
	}
	return false
}

// VerificationHeader is the header of a challenge's code.
func (p *Profile) VerificationHeader() string {
	if p.Headers.Verification == "" {
		return HeaderVerification
	}
	return p.Headers.Verification
}

// Body renders an event in the profile's envelope: compact JSON without
// HTML escaping, fields in the profile's order. tenant is the event's
// tenant ("" for none, rendered null).
func (p *Profile) Body(ev *Event, tenant string) ([]byte, error) {
	var data map[string]json.RawMessage // parsed once, when a field lifts from it
	var buf bytes.Buffer
	buf.WriteByte('{')
	for i, f := range p.Envelope {
		if i > 0 {
			buf.WriteByte(',')
		}
		if err := writeJSONValue(&buf, f.Name); err != nil {
			return nil, err
		}
		buf.WriteByte(':')
		var err error
		switch {
		case len(f.Value) > 0:
			err = json.Compact(&buf, f.Value)
		case f.From == SourceID:
			err = writeJSONValue(&buf, ev.ID)
		case f.From == SourceType:
			err = writeJSONValue(&buf, ev.Type)
		case f.From == SourceTimestamp:
			err = writeJSONValue(&buf, ev.Timestamp)
		case f.From == SourceData:
			err = writeRaw(&buf, ev.Data)
		case f.From == SourceTenant && tenant == "":
			buf.WriteString("null")
		case f.From == SourceTenant:
			err = writeJSONValue(&buf, tenant)
		default:
			if data == nil {
				data = map[string]json.RawMessage{}
				_ = json.Unmarshal(ev.Data, &data) // data that is not an object lifts nothing
			}
			err = writeRaw(&buf, lift(data, strings.TrimPrefix(f.From, SourceDataPrefix)))
		}
		if err != nil {
			return nil, fmt.Errorf("delivery: rendering %q of event %q: %w", f.Name, ev.ID, err)
		}
	}
	buf.WriteByte('}')
	return buf.Bytes(), nil
}

// lift returns the value at a dot path of an object, nil when absent.
func lift(obj map[string]json.RawMessage, path string) json.RawMessage {
	head, rest, deeper := strings.Cut(path, ".")
	v, ok := obj[head]
	if !ok || !deeper {
		return v
	}
	var inner map[string]json.RawMessage
	if json.Unmarshal(v, &inner) != nil {
		return nil
	}
	return lift(inner, rest)
}

func writeRaw(buf *bytes.Buffer, v json.RawMessage) error {
	if len(v) == 0 {
		buf.WriteString("null")
		return nil
	}
	return json.Compact(buf, v)
}

func writeJSONValue(buf *bytes.Buffer, v any) error {
	enc := json.NewEncoder(buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return err
	}
	buf.Truncate(buf.Len() - 1) // Encode's '\n'
	return nil
}

// ProfileSignParams are the inputs of Profile.Sign.
type ProfileSignParams struct {
	// ID is the event id (the id header and {id}).
	ID        string
	EventType string
	// Timestamp is the time of this attempt (whole seconds are signed).
	Timestamp time.Time
	Body      []byte
	// Secrets are the secrets valid now, current first (see
	// SecretSet.Signing).
	Secrets []string
}

// Sign returns the headers of one attempt: id, timestamp, event type (for
// the profiles that send them) and signature. Errors: an invalid id (see
// ValidateEventID), no secret or an invalid one (*ValidationError).
func (p *Profile) Sign(sp *ProfileSignParams) (http.Header, error) {
	if err := ValidateEventID(sp.ID); err != nil {
		return nil, err
	}
	if len(sp.Secrets) == 0 {
		return nil, Invalid(CodeInvalidSecret, "secret", "no signing secret")
	}
	secrets := sp.Secrets
	if p.Signature.Rotation == RotationPrevious {
		secrets = secrets[len(secrets)-1:]
	}
	ts := strconv.FormatInt(sp.Timestamp.Unix(), 10)
	content := strings.NewReplacer("{id}", sp.ID, "{timestamp}", ts, "{body}", string(sp.Body)).Replace(p.Signature.Signed)
	sigs := make([]string, 0, len(secrets))
	for _, secret := range secrets {
		key, err := ParseSecret(secret)
		if err != nil {
			return nil, err
		}
		if p.Signature.Key == KeySecret {
			key = []byte(secret)
		}
		mac := hmac.New(sha256.New, key)
		mac.Write([]byte(content))
		sum := mac.Sum(nil)
		enc := base64.StdEncoding.EncodeToString(sum)
		if p.Signature.Encoding == EncodingHex {
			enc = hex.EncodeToString(sum)
		}
		sigs = append(sigs, p.Signature.Prefix+enc)
	}
	sep := p.Signature.Separator
	if sep == "" {
		sep = " "
	}
	h := http.Header{}
	set := func(name, value string) {
		if name != "" {
			h[textproto.CanonicalMIMEHeaderKey(name)] = []string{value}
		}
	}
	set(p.Headers.ID, sp.ID)
	set(p.Headers.Timestamp, ts)
	set(p.Headers.EventType, sp.EventType)
	set(p.Headers.Signature, strings.Join(sigs, sep))
	return h, nil
}
