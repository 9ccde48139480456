package delivery

// How a broker message is named: the subject or topic rendered from an
// endpoint's template, the record key, and the event's timestamp read
// back from a body.

import (
	"encoding/json"
	"strings"
	"time"
)

// EventFields are what a subject or topic template and a record key are
// made of.
type EventFields struct {
	ID, Type, Tenant, Stream string
}

// Subject renders a NATS subject template: the event type's segments
// are subject tokens; the stream path's segments are tokens too
// ("/orders/eu" is "orders.eu"); a character a subject token may not
// hold ('.', '*', '>', white space) in a tenant or a stream segment
// becomes '_', and an empty value is "_".
func (c *NATSConfig) SubjectOf(f EventFields) string {
	return render(c.Subject, f, natsToken, ".")
}

// TopicOf renders a Kafka topic: the prefix and the template, with every
// character Kafka refuses in a topic name replaced by '_', the stream
// path's segments joined by '.', and the result cut to
// MaxKafkaTopicLen.
func (c *KafkaConfig) TopicOf(f EventFields) string {
	prefix := ""
	if c.TopicPrefix != nil {
		prefix = *c.TopicPrefix
	}
	t := prefix + render(c.Topic, f, kafkaToken, ".")
	if len(t) > MaxKafkaTopicLen {
		t = t[:MaxKafkaTopicLen]
	}
	return t
}

// KeyOf is the record key of an event.
func (c *KafkaConfig) KeyOf(f EventFields) []byte {
	switch c.Key {
	case KafkaKeyTenant:
		return []byte(f.Tenant)
	case KafkaKeyType:
		return []byte(f.Type)
	case KafkaKeyID:
		return []byte(f.ID)
	}
	return []byte(f.Stream)
}

// render replaces a template's placeholders; clean makes one token of a
// value, and sep joins a stream path's segments.
func render(tpl string, f EventFields, clean func(string) string, sep string) string {
	var segs []string
	for _, s := range strings.Split(strings.Trim(f.Stream, "/"), "/") {
		segs = append(segs, clean(s))
	}
	typ := make([]string, 0, 4)
	for _, s := range strings.Split(f.Type, ".") {
		typ = append(typ, clean(s))
	}
	return strings.NewReplacer("{type}", strings.Join(typ, sep), "{tenant}", clean(f.Tenant), "{stream}", strings.Join(segs, sep)).Replace(tpl)
}

func natsToken(s string) string {
	if s == "" {
		return "_"
	}
	return strings.Map(func(r rune) rune {
		if r == '.' || r == '*' || r == '>' || r <= ' ' || r == 0x7f {
			return '_'
		}
		return r
	}, s)
}

func kafkaToken(s string) string {
	if s == "" {
		return "_"
	}
	return strings.Map(func(r rune) rune {
		if r < 0x80 && validKafkaTopicText(string(r)) && r != '.' {
			return r
		}
		return '_'
	}, s)
}

// EventTimestamp reads the event's timestamp from a body rendered in the
// profile: the envelope field made from the event's timestamp; false
// when the profile has none or the body does not hold it.
func (p *Profile) EventTimestamp(body []byte) (time.Time, bool) {
	for _, f := range p.Envelope {
		if f.From != "timestamp" {
			continue
		}
		var fields map[string]json.RawMessage
		if err := json.Unmarshal(body, &fields); err != nil {
			return time.Time{}, false
		}
		var s string
		if err := json.Unmarshal(fields[f.Name], &s); err != nil {
			return time.Time{}, false
		}
		t, err := time.Parse(time.RFC3339Nano, s)
		return t, err == nil
	}
	return time.Time{}, false
}
