package protocol

import (
	"encoding/base64"
	"encoding/json"
)

// SSEEncoding says how SSE data events carry a stream's bytes
// (docs/protocol.md, Server-Sent Events).
type SSEEncoding int

const (
	// SSEText carries text/* streams as UTF-8 text, one data: line per line.
	SSEText SSEEncoding = iota
	// SSEJSON carries application/json streams as one JSON array per event.
	SSEJSON
	// SSEBase64 carries every other stream as standard base64.
	SSEBase64
)

// SSEEncodingFor returns the SSE encoding of a stream's content type.
func SSEEncodingFor(contentType string) SSEEncoding {
	switch {
	case IsJSON(contentType):
		return SSEJSON
	case IsText(contentType):
		return SSEText
	default:
		return SSEBase64
	}
}

// SSEControl is the payload of an SSE control event (docs/protocol.md,
// Server-Sent Events).
type SSEControl struct {
	StreamNextOffset string `json:"streamNextOffset"`
	// StreamCursor is omitted once the stream is closed: clients must not
	// reconnect then.
	StreamCursor string `json:"streamCursor,omitempty"`
	UpToDate     bool   `json:"upToDate,omitempty"`
	StreamClosed bool   `json:"streamClosed,omitempty"`
}

// AppendSSEData appends one "data" event carrying data to dst. For SSEJSON,
// data is framed JSON (see FrameJSON) and the event carries the messages
// as one JSON array on one line (compacted JSON has no raw line breaks).
// For SSEText, every line of data becomes a data: line, splitting on CRLF,
// CR and LF alike, so no payload can end the event or inject a field. For
// SSEBase64, the event carries the standard base64 of data.
func AppendSSEData(dst, data []byte, enc SSEEncoding) []byte {
	dst = append(dst, "event: data\n"...)
	switch enc {
	case SSEJSON:
		dst = append(dst, "data:"...)
		dst = AppendJSONArray(dst, data)
		dst = append(dst, '\n')
	case SSEBase64:
		dst = append(dst, "data:"...)
		dst = base64.StdEncoding.AppendEncode(dst, data)
		dst = append(dst, '\n')
	default:
		dst = appendSSELines(dst, data)
	}
	return append(dst, '\n')
}

// appendSSELines appends data as data: lines, one per line of data.
func appendSSELines(dst, data []byte) []byte {
	start := 0
	for i := 0; i <= len(data); i++ {
		if i < len(data) && data[i] != '\n' && data[i] != '\r' {
			continue
		}
		line := data[start:i]
		dst = append(dst, "data:"...)
		// A reader strips one space after the colon; keep a leading
		// space of the payload by writing one more.
		if len(line) > 0 && line[0] == ' ' {
			dst = append(dst, ' ')
		}
		dst = append(dst, line...)
		dst = append(dst, '\n')
		if i < len(data) && data[i] == '\r' && i+1 < len(data) && data[i+1] == '\n' {
			i++
		}
		start = i + 1
	}
	return dst
}

// AppendSSEControl appends one "control" event to dst: the JSON that
// json.Marshal makes of c, written field by field (an SSE response
// writes one a reader an event, so the marshaller's reflection and
// allocations are worth avoiding).
func AppendSSEControl(dst []byte, c SSEControl) []byte {
	dst = append(dst, "event: control\ndata:{\"streamNextOffset\":"...)
	dst = appendJSONString(dst, c.StreamNextOffset)
	if c.StreamCursor != "" {
		dst = append(dst, ",\"streamCursor\":"...)
		dst = appendJSONString(dst, c.StreamCursor)
	}
	if c.UpToDate {
		dst = append(dst, ",\"upToDate\":true"...)
	}
	if c.StreamClosed {
		dst = append(dst, ",\"streamClosed\":true"...)
	}
	return append(dst, '}', '\n', '\n')
}

// appendJSONString appends v as json.Marshal quotes it: as it is between
// quotes when it holds only printable ASCII that needs no escape (offsets
// and cursors always do), else as the marshaller escapes it.
func appendJSONString(dst []byte, v string) []byte {
	for i := 0; i < len(v); i++ {
		if c := v[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			q, err := json.Marshal(v)
			if err != nil {
				// A string always marshals; this branch cannot run.
				panic(err)
			}
			return append(dst, q...)
		}
	}
	dst = append(dst, '"')
	dst = append(dst, v...)
	return append(dst, '"')
}
