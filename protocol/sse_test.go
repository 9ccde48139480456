package protocol

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestAppendSSEDataText(t *testing.T) {
	t.Parallel()
	cases := map[string]string{
		"hello":             "event: data\ndata:hello\n\n",
		"line1\nline2":      "event: data\ndata:line1\ndata:line2\n\n",
		"a\r\n\r\nevent: x": "event: data\ndata:a\ndata:\ndata:event: x\n\n",
		"a\rb":              "event: data\ndata:a\ndata:b\n\n",
		"end\n":             "event: data\ndata:end\ndata:\n\n",
		" lead":             "event: data\ndata:  lead\n\n",
		"":                  "event: data\ndata:\n\n",
	}
	for in, want := range cases {
		if got := string(AppendSSEData(nil, []byte(in), SSEText)); got != want {
			t.Errorf("text %q: got %q, want %q", in, got, want)
		}
	}
}

// No payload may contain a blank line inside the event: that would end the
// event early and let the payload forge events.
func TestAppendSSEDataCannotInject(t *testing.T) {
	t.Parallel()
	payload := "safe\r\n\r\nevent: control\r\ndata: {\"injected\":true}\r\n\r\nmore\r\rx\n\ny"
	got := string(AppendSSEData(nil, []byte(payload), SSEText))
	body := strings.TrimSuffix(got, "\n\n")
	if strings.Contains(body, "\n\n") || strings.Contains(body, "\r") {
		t.Errorf("event contains a blank line or CR: %q", got)
	}
	for _, line := range strings.Split(body, "\n")[1:] {
		if !strings.HasPrefix(line, "data:") {
			t.Errorf("line %q is not a data line", line)
		}
	}
}

func TestAppendSSEDataJSONAndBase64(t *testing.T) {
	t.Parallel()
	if got := string(AppendSSEData(nil, []byte("{\"k\":\"v\"}\n{\"k\":\"w\"}\n"), SSEJSON)); got != "event: data\ndata:[{\"k\":\"v\"},{\"k\":\"w\"}]\n\n" {
		t.Errorf("json: %q", got)
	}
	if got := string(AppendSSEData(nil, []byte("Hello"), SSEBase64)); got != "event: data\ndata:SGVsbG8=\n\n" {
		t.Errorf("base64: %q", got)
	}
	if got := string(AppendSSEData(nil, nil, SSEBase64)); got != "event: data\ndata:\n\n" {
		t.Errorf("empty base64: %q", got)
	}
}

func TestAppendSSEControl(t *testing.T) {
	t.Parallel()
	got := string(AppendSSEControl(nil, SSEControl{StreamNextOffset: "0000000000000000_0000000000000005", StreamCursor: "12", UpToDate: true}))
	want := "event: control\ndata:{\"streamNextOffset\":\"0000000000000000_0000000000000005\",\"streamCursor\":\"12\",\"upToDate\":true}\n\n"
	if got != want {
		t.Errorf("control = %q", got)
	}
	got = string(AppendSSEControl(nil, SSEControl{StreamNextOffset: "x", UpToDate: true, StreamClosed: true}))
	if got != "event: control\ndata:{\"streamNextOffset\":\"x\",\"upToDate\":true,\"streamClosed\":true}\n\n" {
		t.Errorf("closed control = %q", got)
	}
}

// A control event's data is what json.Marshal makes of the control,
// whatever its strings hold and whichever fields are set.
func TestAppendSSEControlIsTheMarshalledControl(t *testing.T) {
	t.Parallel()
	for _, off := range []string{"0000000000000000_0000000000000005", "", `a"b\c`, "<&>", "é\u2028", "\x01\x7f"} {
		for _, cur := range []string{"", "123", "\n"} {
			for _, up := range []bool{false, true} {
				for _, closed := range []bool{false, true} {
					c := SSEControl{StreamNextOffset: off, StreamCursor: cur, UpToDate: up, StreamClosed: closed}
					payload, err := json.Marshal(c)
					if err != nil {
						t.Fatal(err)
					}
					want := "event: control\ndata:" + string(payload) + "\n\n"
					if got := string(AppendSSEControl(nil, c)); got != want {
						t.Errorf("%+v: %q, want %q", c, got, want)
					}
				}
			}
		}
	}
}
