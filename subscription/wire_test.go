package subscription

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"testing"
)

// The JSON field names of docs/subscriptions.md, exactly.
func TestWireFieldNames(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		v    any
		want string
	}{
		{
			"wake payload",
			WakePayload{
				ConsumerID: "my-sub:%2Fagents%2Ftask-123", Epoch: 7, WakeID: "w_f8a3b2c1", PrimaryStream: "/agents/task-123",
				Streams:     []StreamOffset{{Path: "/agents/task-123", Offset: "1002"}, {Path: "/shared-filesystem/task-123", Offset: "500"}},
				TriggeredBy: []string{"/agents/task-123"},
				Callback:    "https://streams.example.com/callback/my-sub:%2Fagents%2Ftask-123", Token: "eyJ",
			},
			`{"consumer_id":"my-sub:%2Fagents%2Ftask-123","epoch":7,"wake_id":"w_f8a3b2c1","primary_stream":"/agents/task-123",` +
				`"streams":[{"path":"/agents/task-123","offset":"1002"},{"path":"/shared-filesystem/task-123","offset":"500"}],` +
				`"triggered_by":["/agents/task-123"],"callback":"https://streams.example.com/callback/my-sub:%2Fagents%2Ftask-123","token":"eyJ"}`,
		},
		{
			"callback request",
			CallbackRequest{Epoch: 7, WakeID: "w_f8a3b2c1", Acks: []StreamOffset{{Path: "/agents/task-123", Offset: "1005"}}, Subscribe: []string{"/tools/task-123"}, Unsubscribe: []string{"/old-stream"}, Done: true},
			`{"epoch":7,"wake_id":"w_f8a3b2c1","acks":[{"path":"/agents/task-123","offset":"1005"}],"subscribe":["/tools/task-123"],"unsubscribe":["/old-stream"],"done":true}`,
		},
		{
			"success response with no streams",
			NewCallbackResponse(&Consumer{}, "eyJ"),
			`{"ok":true,"token":"eyJ","streams":[]}`,
		},
		{
			"success response",
			NewCallbackResponse(&Consumer{Streams: []StreamCursor{{Path: "/agents/task-123", Acked: "1005"}, {Path: "/tools/task-123", Acked: "42"}}}, "eyJ"),
			`{"ok":true,"token":"eyJ","streams":[{"path":"/agents/task-123","offset":"1005"},{"path":"/tools/task-123","offset":"42"}]}`,
		},
		{
			"error response",
			ErrorResponse{Error: ErrorDetail{Code: "STALE_EPOCH", Message: "m"}, Token: "eyJ"},
			`{"ok":false,"error":{"code":"STALE_EPOCH","message":"m"},"token":"eyJ"}`,
		},
		{
			"error response without token",
			ErrorResponse{Error: ErrorDetail{Code: "TOKEN_INVALID", Message: "m"}},
			`{"ok":false,"error":{"code":"TOKEN_INVALID","message":"m"}}`,
		},
		{
			"subscription on creation",
			Subscription{SubscriptionID: "agent-handler", Pattern: "/agents/*", Webhook: "https://my-agent.workers.dev/handler", WebhookSecret: "whsec_abc", Description: "d"},
			`{"subscription_id":"agent-handler","pattern":"/agents/*","webhook":"https://my-agent.workers.dev/handler","webhook_secret":"whsec_abc","description":"d"}`,
		},
		{
			"subscription after creation",
			Subscription{SubscriptionID: "agent-handler", Pattern: "/agents/*", Webhook: "https://my-agent.workers.dev/handler"},
			`{"subscription_id":"agent-handler","pattern":"/agents/*","webhook":"https://my-agent.workers.dev/handler"}`,
		},
		{
			"subscription list",
			SubscriptionList{Subscriptions: []Subscription{}},
			`{"subscriptions":[]}`,
		},
	}
	for _, tt := range tests {
		got, err := json.Marshal(tt.v)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != tt.want {
			t.Errorf("%s:\n got  %s\n want %s", tt.name, got, tt.want)
		}
	}
}

func TestParseCallbackRequest(t *testing.T) {
	t.Parallel()
	// The example of docs/subscriptions.md.
	req, err := ParseCallbackRequest([]byte(`{
		"epoch": 7,
		"wake_id": "w_f8a3b2c1",
		"acks": [{ "path": "/agents/task-123", "offset": "1005" }],
		"subscribe": ["/tools/task-123"],
		"unsubscribe": ["/old-stream"],
		"done": true
	}`))
	if err != nil {
		t.Fatal(err)
	}
	want := CallbackRequest{
		Epoch: 7, WakeID: "w_f8a3b2c1",
		Acks:        []StreamOffset{{Path: "/agents/task-123", Offset: "1005"}},
		Subscribe:   []string{"/tools/task-123"},
		Unsubscribe: []string{"/old-stream"},
		Done:        true,
	}
	if !reflect.DeepEqual(req, want) {
		t.Errorf("got %+v, want %+v", req, want)
	}
	// A keep-alive, and optional fields given as null.
	for _, body := range []string{`{"epoch":7}`, ` {"epoch": 7, "wake_id": null, "acks": null, "done": null} `} {
		req, err := ParseCallbackRequest([]byte(body))
		if err != nil || !reflect.DeepEqual(req, CallbackRequest{Epoch: 7}) {
			t.Errorf("%s: %+v, %v", body, req, err)
		}
	}

	for _, body := range []string{
		``,
		`null`,
		`[]`,
		`"epoch"`,
		`{`,
		`{}`,                                 // missing epoch
		`{"epoch": null}`,                    // missing epoch
		`{"epoch": "7"}`,                     // wrong type
		`{"epoch": 7.5}`,                     // not an integer
		`{"epoch": -1}`,                      // negative
		`{"epoch": 99999999999999999999999}`, // overflow
		`{"epoch": 7, "done": "yes"}`,
		`{"epoch": 7, "wake_id": 3}`,
		`{"epoch": 7, "acks": {"path": "/a", "offset": "1"}}`,
		`{"epoch": 7, "acks": [{"path": "/a"}]}`,
		`{"epoch": 7, "acks": [{"offset": "1"}]}`,
		`{"epoch": 7, "acks": [{"path": "/a", "offset": 1}]}`,
		`{"epoch": 7, "acks": [{"path": "/a", "offset": "1", "extra": 1}]}`,
		`{"epoch": 7, "subscribe": "/a"}`,
		`{"epoch": 7, "subscribe": ["tools"]}`,
		`{"epoch": 7, "unsubscribe": [""]}`,
		`{"epoch": 7, "unsubscribe": ["/a\u0000b"]}`,
		`{"epoch": 7, "ack": [{"path": "/a", "offset": "1"}]}`, // misspelt: unknown field
		`{"epoch": 7} {"epoch": 8}`,                            // trailing data
		`{"epoch": 7} x`,
	} {
		_, err := ParseCallbackRequest([]byte(body))
		if !errors.Is(err, ErrInvalidRequest) {
			t.Errorf("ParseCallbackRequest(%s) error = %v, want INVALID_REQUEST", body, err)
		}
	}
}

func TestParseCreateRequest(t *testing.T) {
	t.Parallel()
	req, err := ParseCreateRequest([]byte(`{ "webhook": "https://my-agent.workers.dev/handler", "description": "..." }`))
	if err != nil || req != (CreateRequest{Webhook: "https://my-agent.workers.dev/handler", Description: "..."}) {
		t.Errorf("got %+v, %v", req, err)
	}
	for _, body := range []string{``, `{}`, `{"webhook": ""}`, `{"webhook": 1}`, `{"webhook": "https://x", "pattern": "/a/*"}`} {
		if _, err := ParseCreateRequest([]byte(body)); !errors.Is(err, ErrInvalidRequest) {
			t.Errorf("ParseCreateRequest(%s) error = %v", body, err)
		}
	}
}

func TestParseWebhookResponse(t *testing.T) {
	t.Parallel()
	tests := []struct {
		body string
		done bool
	}{
		{`{"done": true}`, true},
		{`{"done":true,"note":"x"}`, true},
		{`{"done": false}`, false},
		{`{"done": "true"}`, false},
		{`{"done": 1}`, false},
		{`{}`, false},
		{``, false},
		{`OK`, false},
		{`[{"done": true}]`, false},
	}
	for _, tt := range tests {
		if got := ParseWebhookResponse([]byte(tt.body)); got.Done != tt.done {
			t.Errorf("ParseWebhookResponse(%q).Done = %v, want %v", tt.body, got.Done, tt.done)
		}
	}
}

// Each callback error has its code, wrapped or not, and no other error
// is a callback error.
func TestCallbackErrorCode(t *testing.T) {
	t.Parallel()
	tests := []struct {
		err  error
		code string
	}{
		{ErrInvalidRequest, "INVALID_REQUEST"},
		{ErrTokenExpired, "TOKEN_EXPIRED"},
		{ErrTokenInvalid, "TOKEN_INVALID"},
		{ErrAlreadyClaimed, "ALREADY_CLAIMED"},
		{ErrInvalidOffset, "INVALID_OFFSET"},
		{ErrStaleEpoch, "STALE_EPOCH"},
		{ErrConsumerGone, "CONSUMER_GONE"},
		{ErrStreamForbidden, "FORBIDDEN"},
		{ErrBodyTooLarge, "PAYLOAD_TOO_LARGE"},
	}
	if len(CallbackErrors()) != len(tests) {
		t.Fatalf("%d callback errors, want %d", len(CallbackErrors()), len(tests))
	}
	for _, tt := range tests {
		wrapped := errors.Join(errors.New("context"), tt.err)
		if code, ok := CallbackErrorCode(wrapped); !ok || code != tt.code {
			t.Errorf("%v: %s %v, want %s", tt.err, code, ok, tt.code)
		}
	}
	if _, ok := CallbackErrorCode(errors.New("disk full")); ok {
		t.Error("a server fault is a callback error")
	}
}

func FuzzParseCallbackRequest(f *testing.F) {
	f.Add([]byte(`{"epoch":7,"wake_id":"w_f8a3b2c1","acks":[{"path":"/agents/task-123","offset":"1005"}],"subscribe":["/tools/task-123"],"unsubscribe":["/old-stream"],"done":true}`))
	f.Add([]byte(`{"epoch":7}`))
	f.Add([]byte(`{"epoch":null}`))
	f.Add([]byte(`{"epoch":7,"acks":[{"path":"/a","offset":"1","x":1}]}`))
	f.Add([]byte(`{"epoch":1e3}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		req, err := ParseCallbackRequest(body)
		if err != nil {
			if !errors.Is(err, ErrInvalidRequest) {
				t.Fatalf("error %v is not INVALID_REQUEST", err)
			}
			return
		}
		if req.Epoch < 0 {
			t.Fatalf("negative epoch accepted: %d", req.Epoch)
		}
		for _, a := range req.Acks {
			if a.Path == "" || a.Offset == "" {
				t.Fatalf("incomplete ack accepted: %+v", a)
			}
		}
		for _, p := range append(append([]string{}, req.Subscribe...), req.Unsubscribe...) {
			if ValidateStreamPath(p) != nil {
				t.Fatalf("invalid path accepted: %q", p)
			}
		}
		// What was accepted survives a round trip unchanged.
		again, err := json.Marshal(req)
		if err != nil {
			t.Fatal(err)
		}
		back, err := ParseCallbackRequest(again)
		if err != nil || !reflect.DeepEqual(normalize(back), normalize(req)) {
			t.Fatalf("round trip of %s: %+v, %v", again, back, err)
		}
	})
}

// normalize makes empty lists nil, as omitempty drops them.
func normalize(r CallbackRequest) CallbackRequest {
	if len(r.Acks) == 0 {
		r.Acks = nil
	}
	if len(r.Subscribe) == 0 {
		r.Subscribe = nil
	}
	if len(r.Unsubscribe) == 0 {
		r.Unsubscribe = nil
	}
	return r
}

// A wake payload's hand-written encoding is what encoding/json writes for
// it, whatever its strings hold and whether its lists are empty or nil.
func FuzzWakePayloadAppendJSON(f *testing.F) {
	f.Add("sub:%2Fagents%2Fa", int64(7), "w_1", "/agents/a", "/agents/a", "0000000000000000_0000000000000012", "http://h/callback/x", "tok", 2)
	f.Add(`s:"q"`, int64(1), "w\\x", "/é/<b>&", "/line\u2028", "\x01", "", "", 0)
	f.Add("c", int64(-1), "", "", "", "", "", "", 1)
	f.Fuzz(func(t *testing.T, id string, epoch int64, wakeID, primary, path, offset, callback, token string, lists int) {
		w := WakePayload{ConsumerID: id, Epoch: epoch, WakeID: wakeID, PrimaryStream: primary, Callback: callback, Token: token}
		switch lists % 3 {
		case 1:
			w.Streams, w.TriggeredBy = []StreamOffset{}, []string{}
		case 2:
			w.Streams = []StreamOffset{{Path: path, Offset: offset}, {Path: primary, Offset: wakeID}}
			w.TriggeredBy = []string{path, primary}
		}
		want, err := json.Marshal(&w)
		if err != nil {
			t.Fatal(err)
		}
		if got := w.AppendJSON(nil); !bytes.Equal(got, want) {
			t.Fatalf("AppendJSON = %s\nencoding/json = %s", got, want)
		}
	})
}
