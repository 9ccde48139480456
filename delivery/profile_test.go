package delivery

import (
	"os"
	"strings"
	"testing"
)

// acmeProfiles is a profiles file as an installation would write it.
var acmeProfiles = func() string {
	b, err := os.ReadFile("testdata/acme_profiles.json")
	if err != nil {
		panic(err) // the file is part of the repository
	}
	return string(b)
}()

// A profiles file is checked field by field, with errors that say which.
func TestParseProfilesErrors(t *testing.T) {
	t.Parallel()
	valid := func(edit string) string {
		return strings.Replace(acmeProfiles, `"encoding": "base64"`, edit, 1)
	}
	for in, want := range map[string]string{
		`{"profiles": [{"name": "Bad Name"}]}`:                                               `name "Bad Name"`,
		`{"profile": []}`:                                                                    "unknown field",
		`{"profiles": []} x`:                                                                 "data after",
		valid(`"encoding": "base32"`):                                                        "signature.encoding",
		strings.Replace(acmeProfiles, `{id}:`, `{nonce}:`, 1):                                "unknown placeholder {nonce}",
		strings.Replace(acmeProfiles, `:{body}`, ``, 1):                                      "must contain {body}",
		strings.Replace(acmeProfiles, `"rotation": "all"`, `"rotation": "some"`, 1):          "signature.rotation",
		strings.Replace(acmeProfiles, `"key": "base64"`, `"key": "raw"`, 1):                  "signature.key",
		strings.Replace(acmeProfiles, `"Acme-Kind"`, `"Acme-Sent-At"`, 1):                    "headers.event_type: Acme-Sent-At is already headers.timestamp",
		strings.Replace(acmeProfiles, `"Acme-Kind"`, `"Content-Type"`, 1):                    "headers.event_type: Content-Type cannot be used",
		strings.Replace(acmeProfiles, `"Acme-Kind"`, `"Acme Kind"`, 1):                       "not a valid header name",
		strings.Replace(acmeProfiles, `"signature": "Acme-Signature"`, `"signature": ""`, 1): "headers.signature: required",
		strings.Replace(acmeProfiles, `"id": "Acme-Message-Id", `, ``, 1):                    "{id} is signed but headers.id is not set",
		strings.Replace(acmeProfiles, `"from": "data.geo.region"`, `"from": "data..x"`, 1):   "empty path segment",
		strings.Replace(acmeProfiles, `"from": "data.geo.region"`, `"from": "stream"`, 1):    "envelope[4].from",
		strings.Replace(acmeProfiles, `"name": "kind"`, `"name": "event_id"`, 1):             "envelope[1].name",
		strings.Replace(acmeProfiles, `"value": 2`, `"value": 2, "from": "id"`, 1):           "not both",
	} {
		_, err := ParseProfiles([]byte(in))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s:\n  error %v, want it to say %q", in, err, want)
		}
	}
	extra, err := ParseProfiles([]byte(strings.Replace(acmeProfiles, "acme-v2", ProfileXRucheV1, 1)))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := NewProfileSet(extra, ""); err == nil || !strings.Contains(err.Error(), "defined twice") {
		t.Errorf("a file redefining a shipped profile: %v", err)
	}
	if _, err := NewProfileSet(nil, "nope"); err == nil || !strings.Contains(err.Error(), `default profile "nope"`) {
		t.Errorf("unknown default: %v", err)
	}
}
