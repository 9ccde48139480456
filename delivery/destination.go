package delivery

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Destination types: where an endpoint's deliveries go.
const (
	// DestinationWebhook POSTs each delivery to the endpoint's URL.
	DestinationWebhook = "webhook"
	// DestinationNATS publishes each event to a NATS subject, core or
	// JetStream.
	DestinationNATS = "nats"
	// DestinationKafka produces each event as a record of a Kafka topic.
	DestinationKafka = "kafka"
)

// CodeInvalidDestination: an endpoint's type is unknown, or its config
// does not describe a destination of that type.
const CodeInvalidDestination Code = "INVALID_DESTINATION"

// IsBroker reports whether a destination type publishes to a message
// broker rather than POSTing to a URL.
func IsBroker(typ string) bool { return typ == DestinationNATS || typ == DestinationKafka }

// Limits of a destination's configuration.
const (
	MaxBrokerAddresses = 16
	maxTemplateLen     = 255
	maxCredentialLen   = 16 << 10
	maxPEMLen          = 64 << 10
	// MaxKafkaTopicLen is Kafka's own limit of a topic name.
	MaxKafkaTopicLen = 249
)

// Defaults of a destination's configuration.
const (
	DefaultNATSSubject      = "herald.{type}"
	DefaultKafkaTopic       = "{type}"
	DefaultKafkaTopicPrefix = "herald."
)

// Kafka record keys: which of an event's fields keys its record, and so
// picks its partition.
const (
	KafkaKeyStream = "stream"
	KafkaKeyTenant = "tenant"
	KafkaKeyType   = "type"
	KafkaKeyID     = "id"
)

// SASL mechanisms a Kafka destination may use.
const (
	SASLPlain       = "PLAIN"
	SASLScramSHA256 = "SCRAM-SHA-256"
	SASLScramSHA512 = "SCRAM-SHA-512"
)

// MaskedSecret stands for a credential in what the API shows: its name
// is shown, never its value.
const MaskedSecret = "***"

// TLSConfig turns TLS on for a broker connection. CA, a PEM bundle,
// replaces the system roots when set; ServerName overrides the name
// checked in the broker's certificate.
type TLSConfig struct {
	CA         string `json:"ca,omitempty"`
	ServerName string `json:"server_name,omitempty"`
}

// NATSConfig is the config of a "nats" destination.
type NATSConfig struct {
	// Servers are nats:// (or tls://) URLs of the cluster's servers.
	Servers []string `json:"servers"`
	// Subject is a template over {type}, {tenant} and {stream} (see
	// RenderSubject); DefaultNATSSubject when "".
	Subject string `json:"subject,omitempty"`
	// JetStream publishes with an acknowledgement of the stream that
	// stores the subject, the event id as Nats-Msg-Id; core NATS otherwise
	// (success is the server having read the message).
	JetStream bool `json:"jetstream,omitempty"`
	// Credentials: one way, at most.
	User     string `json:"user,omitempty"`
	Password string `json:"password,omitempty"`
	Token    string `json:"token,omitempty"`
	// NKeySeed is a user NKey seed ("SU…").
	NKeySeed string `json:"nkey_seed,omitempty"`
	// Creds is the contents of a .creds file (a user JWT and its seed).
	Creds string     `json:"creds,omitempty"`
	TLS   *TLSConfig `json:"tls,omitempty"`
}

// KafkaSASL is a Kafka destination's SASL authentication.
type KafkaSASL struct {
	Mechanism string `json:"mechanism"`
	Username  string `json:"username"`
	Password  string `json:"password"`
}

// KafkaConfig is the config of a "kafka" destination.
type KafkaConfig struct {
	// Brokers are host:port seed brokers.
	Brokers []string `json:"brokers"`
	// Topic is a template over {type}, {tenant} and {stream};
	// DefaultKafkaTopic when "". TopicPrefix goes before it (nil:
	// DefaultKafkaTopicPrefix; "" for none).
	Topic       string  `json:"topic,omitempty"`
	TopicPrefix *string `json:"topic_prefix,omitempty"`
	// Key names the field that keys the record (KafkaKeyStream by
	// default, so a stream's events share a partition and keep their
	// order).
	Key  string     `json:"key,omitempty"`
	SASL *KafkaSASL `json:"sasl,omitempty"`
	TLS  *TLSConfig `json:"tls,omitempty"`
}

// Destination is a validated broker destination: its type and one of
// its configs.
type Destination struct {
	Type  string
	NATS  *NATSConfig
	Kafka *KafkaConfig
}

// Addresses returns the host:port of every server or broker.
func (d *Destination) Addresses() []string {
	if d.NATS != nil {
		out := make([]string, 0, len(d.NATS.Servers))
		for _, s := range d.NATS.Servers {
			u, err := url.Parse(s)
			if err == nil {
				out = append(out, natsHostPort(u))
			}
		}
		return out
	}
	if d.Kafka != nil {
		return slices.Clone(d.Kafka.Brokers)
	}
	return nil
}

// TLS reports whether the destination's connections use TLS.
func (d *Destination) TLS() bool {
	if d.NATS != nil {
		if d.NATS.TLS != nil {
			return true
		}
		for _, s := range d.NATS.Servers {
			if strings.HasPrefix(s, "tls://") {
				return true
			}
		}
		return false
	}
	return d.Kafka != nil && d.Kafka.TLS != nil
}

// TLSSettings returns the destination's TLS settings (nil without TLS
// settings of its own).
func (d *Destination) TLSSettings() *TLSConfig {
	if d.NATS != nil {
		return d.NATS.TLS
	}
	if d.Kafka != nil {
		return d.Kafka.TLS
	}
	return nil
}

// natsHostPort is a NATS URL's host:port, 4222 when it names none.
func natsHostPort(u *url.URL) string {
	port := u.Port()
	if port == "" {
		port = "4222"
	}
	return joinHostPort(u.Hostname(), port)
}

// joinHostPort and splitHostPort are net's, which a rules package does
// not import.
func joinHostPort(host, port string) string {
	if strings.Contains(host, ":") {
		return "[" + host + "]:" + port
	}
	return host + ":" + port
}

func splitHostPort(hp string) (host, port string, ok bool) {
	i := strings.LastIndexByte(hp, ':')
	if i < 0 {
		return "", "", false
	}
	host, port = hp[:i], hp[i+1:]
	if strings.HasPrefix(host, "[") {
		if !strings.HasSuffix(host, "]") {
			return "", "", false
		}
		host = host[1 : len(host)-1]
	} else if strings.Contains(host, ":") {
		return "", "", false
	}
	return host, port, true
}

// ParseDestination parses and checks a broker destination's config
// (everything but the addresses' DNS and policy, which the sender
// checks), filling in its defaults. Errors are *ValidationError with
// CodeInvalidDestination and a field under "config".
func ParseDestination(typ string, raw json.RawMessage) (*Destination, error) {
	if !IsBroker(typ) {
		return nil, Invalid(CodeInvalidDestination, "type", "%q is not a destination type; use %q, %q or %q", typ, DestinationWebhook, DestinationNATS, DestinationKafka)
	}
	if len(bytes.TrimSpace(raw)) == 0 || string(bytes.TrimSpace(raw)) == "null" {
		return nil, Invalid(CodeInvalidDestination, "config", "a %s endpoint needs a config object", typ)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	d := &Destination{Type: typ}
	var target any
	if typ == DestinationNATS {
		d.NATS = &NATSConfig{}
		target = d.NATS
	} else {
		d.Kafka = &KafkaConfig{}
		target = d.Kafka
	}
	if err := dec.Decode(target); err != nil {
		return nil, &ValidationError{Code: CodeInvalidDestination, Field: "config", Message: "config is not a " + typ + " config: " + err.Error(), Err: err}
	}
	if dec.More() {
		return nil, Invalid(CodeInvalidDestination, "config", "config has more than one JSON value")
	}
	var err error
	if d.NATS != nil {
		err = d.NATS.validate()
	} else {
		err = d.Kafka.validate()
	}
	if err != nil {
		return nil, err
	}
	return d, nil
}

// JSON is the destination's config as stored, credentials included.
func (d *Destination) JSON() (json.RawMessage, error) {
	if d.NATS != nil {
		return json.Marshal(d.NATS)
	}
	return json.Marshal(d.Kafka)
}

// Masked is the destination's config as the API shows it: every
// credential that is set reads MaskedSecret.
func (d *Destination) Masked() json.RawMessage {
	var v any
	if d.NATS != nil {
		c := *d.NATS
		for _, s := range []*string{&c.Password, &c.Token, &c.NKeySeed, &c.Creds} {
			mask(s)
		}
		v = &c
	} else {
		c := *d.Kafka
		if c.SASL != nil {
			s := *c.SASL
			mask(&s.Password)
			c.SASL = &s
		}
		v = &c
	}
	b, err := json.Marshal(v)
	if err != nil {
		return json.RawMessage("null")
	}
	return b
}

func mask(s *string) {
	if *s != "" {
		*s = MaskedSecret
	}
}

// KeepMasked gives back, in next, the stored credentials of cur that
// next sends back as MaskedSecret (a client changing what it read),
// when both point at the same servers; a masked value for a credential
// not stored, or with other servers, is refused, so a credential never
// follows a change of address it was not given again for.
func KeepMasked(cur, next *Destination) error {
	if n := next.NATS; n != nil {
		var c NATSConfig // nothing kept unless the servers are the same
		if cur != nil && cur.NATS != nil && slices.Equal(cur.NATS.Servers, n.Servers) {
			c = *cur.NATS
		}
		for _, f := range []struct {
			name      string
			dst, from *string
		}{{"password", &n.Password, &c.Password}, {"token", &n.Token, &c.Token}, {"nkey_seed", &n.NKeySeed, &c.NKeySeed}, {"creds", &n.Creds, &c.Creds}} {
			if err := keepOne("config."+f.name, f.dst, f.from); err != nil {
				return err
			}
		}
		return nil
	}
	k := next.Kafka
	if k.SASL == nil {
		return nil
	}
	var from string
	if cur != nil && cur.Kafka != nil && cur.Kafka.SASL != nil && slices.Equal(cur.Kafka.Brokers, k.Brokers) {
		from = cur.Kafka.SASL.Password
	}
	return keepOne("config.sasl.password", &k.SASL.Password, &from)
}

func keepOne(field string, dst, from *string) error {
	if *dst != MaskedSecret {
		return nil
	}
	if *from == "" {
		return Invalid(CodeInvalidDestination, field, "%q stands for a stored credential, and none is kept for these servers: give the credential", MaskedSecret)
	}
	*dst = *from
	return nil
}

func (c *NATSConfig) validate() error {
	if len(c.Servers) == 0 || len(c.Servers) > MaxBrokerAddresses {
		return Invalid(CodeInvalidDestination, "config.servers", "give 1 to %d nats:// URLs", MaxBrokerAddresses)
	}
	for i, s := range c.Servers {
		field := fmt.Sprintf("config.servers[%d]", i)
		u, err := url.Parse(s)
		if err != nil || (u.Scheme != "nats" && u.Scheme != "tls") || u.Hostname() == "" || u.Opaque != "" {
			return Invalid(CodeInvalidDestination, field, "%q is not a nats:// or tls:// URL of a host", s)
		}
		if u.User != nil {
			return Invalid(CodeInvalidDestination, field, "credentials in the URL are not allowed; give user and password, token, nkey_seed or creds")
		}
		if (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" {
			return Invalid(CodeInvalidDestination, field, "a server URL has no path, query or fragment")
		}
		if p := u.Port(); p != "" && !validPortNumber(p) {
			return Invalid(CodeInvalidDestination, field, "port %q is not a number from 1 to 65535", p)
		}
	}
	if c.Subject == "" {
		c.Subject = DefaultNATSSubject
	}
	if err := checkTemplate("config.subject", c.Subject, func(s string) bool {
		return !strings.ContainsAny(s, " \t\r\n*>") && !strings.HasPrefix(s, ".") && !strings.HasSuffix(s, ".") && !strings.Contains(s, "..")
	}); err != nil {
		return err
	}
	ways := 0
	if c.User != "" || c.Password != "" {
		if c.User == "" || c.Password == "" {
			return Invalid(CodeInvalidDestination, "config.user", "user and password go together")
		}
		ways++
	}
	for _, s := range []string{c.Token, c.NKeySeed, c.Creds} {
		if s != "" {
			ways++
		}
	}
	if ways > 1 {
		return Invalid(CodeInvalidDestination, "config", "give one way to authenticate: user and password, token, nkey_seed or creds")
	}
	if c.NKeySeed != "" && !strings.HasPrefix(c.NKeySeed, "SU") {
		return Invalid(CodeInvalidDestination, "config.nkey_seed", "an NKey user seed starts with SU")
	}
	if c.Creds != "" && (!strings.Contains(c.Creds, "BEGIN NATS USER JWT") || !strings.Contains(c.Creds, "BEGIN USER NKEY SEED")) {
		return Invalid(CodeInvalidDestination, "config.creds", "creds is the contents of a .creds file: a user JWT and its NKey seed")
	}
	for name, s := range map[string]string{"user": c.User, "password": c.Password, "token": c.Token, "nkey_seed": c.NKeySeed, "creds": c.Creds} {
		if len(s) > maxCredentialLen || !utf8.ValidString(s) {
			return Invalid(CodeInvalidDestination, "config."+name, "must be UTF-8 of at most %d bytes", maxCredentialLen)
		}
	}
	return c.TLS.validate()
}

func (c *KafkaConfig) validate() error {
	if len(c.Brokers) == 0 || len(c.Brokers) > MaxBrokerAddresses {
		return Invalid(CodeInvalidDestination, "config.brokers", "give 1 to %d brokers as host:port", MaxBrokerAddresses)
	}
	for i, b := range c.Brokers {
		host, port, ok := splitHostPort(b)
		if !ok || host == "" || !validPortNumber(port) || strings.ContainsAny(host, "/@ ") {
			return Invalid(CodeInvalidDestination, fmt.Sprintf("config.brokers[%d]", i), "%q is not host:port", b)
		}
	}
	if c.Topic == "" {
		c.Topic = DefaultKafkaTopic
	}
	if c.TopicPrefix == nil {
		p := DefaultKafkaTopicPrefix
		c.TopicPrefix = &p
	}
	if !validKafkaTopicText(*c.TopicPrefix) || len(*c.TopicPrefix) > maxTemplateLen {
		return Invalid(CodeInvalidDestination, "config.topic_prefix", "a topic prefix has only letters, digits, '.', '_' and '-'")
	}
	if err := checkTemplate("config.topic", c.Topic, validKafkaTopicText); err != nil {
		return err
	}
	switch c.Key {
	case "":
		c.Key = KafkaKeyStream
	case KafkaKeyStream, KafkaKeyTenant, KafkaKeyType, KafkaKeyID:
	default:
		return Invalid(CodeInvalidDestination, "config.key", "%q is not a record key; use stream, tenant, type or id", c.Key)
	}
	if s := c.SASL; s != nil {
		switch s.Mechanism {
		case SASLPlain, SASLScramSHA256, SASLScramSHA512:
		default:
			return Invalid(CodeInvalidDestination, "config.sasl.mechanism", "%q is not a SASL mechanism; use %s, %s or %s", s.Mechanism, SASLPlain, SASLScramSHA256, SASLScramSHA512)
		}
		if s.Username == "" || s.Password == "" {
			return Invalid(CodeInvalidDestination, "config.sasl", "SASL needs a username and a password")
		}
		if len(s.Username) > maxCredentialLen || len(s.Password) > maxCredentialLen || !utf8.ValidString(s.Username+s.Password) {
			return Invalid(CodeInvalidDestination, "config.sasl", "username and password are UTF-8 of at most %d bytes", maxCredentialLen)
		}
	}
	return c.TLS.validate()
}

func (t *TLSConfig) validate() error {
	if t == nil {
		return nil
	}
	if len(t.CA) > maxPEMLen || (t.CA != "" && !strings.Contains(t.CA, "-----BEGIN CERTIFICATE-----")) {
		return Invalid(CodeInvalidDestination, "config.tls.ca", "ca is a PEM bundle of certificates, at most %d bytes", maxPEMLen)
	}
	if len(t.ServerName) > 253 || strings.ContainsFunc(t.ServerName, IsControl) {
		return Invalid(CodeInvalidDestination, "config.tls.server_name", "not a host name")
	}
	return nil
}

// templateFields are the placeholders of subject and topic templates.
var templateFields = []string{"{type}", "{tenant}", "{stream}"}

// checkTemplate checks a template's placeholders and that its literal
// text passes ok.
func checkTemplate(field, tpl string, ok func(string) bool) error {
	if len(tpl) > maxTemplateLen || !utf8.ValidString(tpl) {
		return Invalid(CodeInvalidDestination, field, "at most %d bytes of UTF-8", maxTemplateLen)
	}
	literal := tpl
	for _, f := range templateFields {
		literal = strings.ReplaceAll(literal, f, "x")
	}
	if strings.ContainsAny(literal, "{}") {
		return Invalid(CodeInvalidDestination, field, "the placeholders are {type}, {tenant} and {stream}")
	}
	if !ok(literal) {
		return Invalid(CodeInvalidDestination, field, "%q makes no valid name", tpl)
	}
	return nil
}

func validPortNumber(s string) bool {
	n, err := strconv.Atoi(s)
	return err == nil && n >= 1 && n <= 65535 && strconv.Itoa(n) == s
}

func validKafkaTopicText(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}
