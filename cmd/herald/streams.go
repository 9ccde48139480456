package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

const streamsUsage = `Create, append to, read, tail and delete streams of a running Herald.

Usage:
  herald streams ls [--prefix PREFIX]                           (every stream whose path starts with PREFIX)
  herald streams create PATH [--content-type TYPE] [--ttl DURATION]
  herald streams append PATH [DATA | -] [--content-type TYPE]   (- or no DATA: standard input)
  herald streams read PATH [--offset OFFSET]                     (default -1: from the start)
  herald streams tail PATH [--offset OFFSET]                     (default now; until interrupted)
  herald streams rm PATH

read and tail print each message of a JSON stream as indented JSON, and the
bytes of other streams as they are. ls needs streams:read; a key limited to
stream paths lists only the streams within them.

` + commonFlagsUsage

// streamItem is a stream of GET /_herald/v1/streams.
type streamItem struct {
	Path        string `json:"path"`
	ContentType string `json:"content_type"`
	NextOffset  string `json:"next_offset"`
	Closed      bool   `json:"closed"`
	CreatedAt   string `json:"created_at"`
}

func runStreams(ctx context.Context, args []string, cio clientIO) error {
	return runGroup(ctx, commandGroup{name: "streams", usage: streamsUsage, action: streamsAction}, args, cio)
}

// Stream protocol headers the streams command uses.
const (
	hdrNextOffset = "Stream-Next-Offset"
	hdrUpToDate   = "Stream-Up-To-Date"
	hdrTTL        = "Stream-TTL"
)

// streamOut is what the streams command shows of a stream or a read.
type streamOut struct {
	Path        string             `json:"path"`
	ContentType string             `json:"content_type,omitempty"`
	Created     *bool              `json:"created,omitempty"`
	NextOffset  string             `json:"next_offset,omitempty"`
	Messages    *[]json.RawMessage `json:"messages,omitempty"` // a JSON stream's read
	Data        *string            `json:"data,omitempty"`     // another stream's read
}

func streamsAction(c *apiClient, sub string) (*action, bool) {
	fs := c.fs
	var contentType, offset string
	switch sub {
	case "ls":
		var prefix string
		fs.StringVar(&prefix, "prefix", "/", "list the streams whose path starts with this")
		return &action{run: func(ctx context.Context, _ []string) error {
			raws, streams, err := fetchList[streamItem](ctx, c, "/_herald/v1/streams", url.Values{"prefix": {prefix}}, 0)
			if err != nil {
				return err
			}
			return c.show(raws, func() error {
				rows := make([][]string, 0, len(streams))
				for _, st := range streams {
					rows = append(rows, []string{st.Path, st.ContentType, st.NextOffset, strconv.FormatBool(st.Closed), st.CreatedAt})
				}
				return c.printTable([]string{"PATH", "CONTENT TYPE", "NEXT OFFSET", "CLOSED", "CREATED"}, rows)
			})
		}}, true
	case "create":
		var ttl time.Duration
		fs.StringVar(&contentType, "content-type", "", "the stream's content type (Herald's default when not given)")
		fs.DurationVar(&ttl, "ttl", 0, "the stream expires after this long without a write (whole seconds)")
		return &action{args: "PATH [--content-type TYPE] [--ttl DURATION]", min: 1, max: 1, run: func(ctx context.Context, args []string) error {
			hdr := http.Header{}
			if contentType != "" {
				hdr.Set("Content-Type", contentType)
			}
			if ttl < 0 || ttl%time.Second != 0 {
				return fmt.Errorf("%w: --ttl must be a positive number of whole seconds", errUsage)
			}
			if ttl > 0 {
				hdr.Set(hdrTTL, strconv.FormatInt(int64(ttl/time.Second), 10))
			}
			return c.streamWrite(ctx, http.MethodPut, args[0], hdr, nil)
		}}, true
	case "append":
		fs.StringVar(&contentType, "content-type", "", "content type of the data (default: the stream's)")
		return &action{args: "PATH [DATA | -]", min: 1, max: 2, run: func(ctx context.Context, args []string) error {
			var data []byte
			if len(args) == 1 || args[1] == "-" {
				b, err := io.ReadAll(c.stdin)
				if err != nil {
					return fmt.Errorf("reading standard input: %w", err)
				}
				data = b
			} else {
				data = []byte(args[1])
			}
			if contentType == "" {
				ct, err := c.streamContentType(ctx, args[0])
				if err != nil {
					return err
				}
				contentType = ct
			}
			return c.streamWrite(ctx, http.MethodPost, args[0], http.Header{"Content-Type": {contentType}}, data)
		}}, true
	case "read":
		fs.StringVar(&offset, "offset", "-1", "offset to read from: -1 (the start), now, or a Stream-Next-Offset")
		return &action{args: "PATH [--offset OFFSET]", min: 1, max: 1, run: func(ctx context.Context, args []string) error {
			return c.streamRead(ctx, args[0], offset)
		}}, true
	case "tail":
		fs.StringVar(&offset, "offset", "now", "offset to start at: now, -1 (the start), or a Stream-Next-Offset")
		return &action{args: "PATH [--offset OFFSET]", min: 1, max: 1, run: func(ctx context.Context, args []string) error {
			return c.streamTail(ctx, args[0], offset)
		}}, true
	case "rm":
		return &action{args: "PATH", min: 1, max: 1, run: func(ctx context.Context, args []string) error {
			p, err := streamPath(args[0])
			if err != nil {
				return err
			}
			if err := c.do(ctx, http.MethodDelete, p, nil, nil); err != nil {
				return err
			}
			return c.done(nil, "deleted %s", p)
		}}, true
	}
	return nil, false
}

// streamWrite creates (PUT) or appends to (POST) a stream and prints the
// outcome.
func (c *apiClient) streamWrite(ctx context.Context, method, path string, hdr http.Header, data []byte) error {
	p, err := streamPath(path)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, apiRequestTimeout)
	defer cancel()
	resp, err := c.send(ctx, method, p, hdr, bytes.NewReader(data))
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if _, err := io.Copy(io.Discard, io.LimitReader(resp.Body, maxAnswerBytes)); err != nil {
		return fmt.Errorf("reading the answer: %w", err)
	}
	out := streamOut{Path: p, NextOffset: resp.Header.Get(hdrNextOffset)}
	if method == http.MethodPut {
		created := resp.StatusCode == http.StatusCreated
		out.Created = &created
		out.ContentType = resp.Header.Get("Content-Type")
		if !created {
			return c.done(out, "%s exists already, with the same configuration (next offset %s)", p, out.NextOffset)
		}
		return c.done(out, "created %s (next offset %s)", p, out.NextOffset)
	}
	return c.done(out, "appended %d bytes to %s (next offset %s)", len(data), p, out.NextOffset)
}

// streamContentType asks Herald for a stream's content type (HEAD).
func (c *apiClient) streamContentType(ctx context.Context, path string) (string, error) {
	p, err := streamPath(path)
	if err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(ctx, apiRequestTimeout)
	defer cancel()
	resp, err := c.send(ctx, http.MethodHead, p, nil, nil)
	if err != nil {
		return "", err
	}
	if err := resp.Body.Close(); err != nil {
		return "", err
	}
	return resp.Header.Get("Content-Type"), nil
}

// readChunk is one answer of a stream read.
type readChunk struct {
	body        []byte
	contentType string
	nextOffset  string
	upToDate    bool
	noContent   bool // a long-poll that timed out
	closed      bool // the stream is closed: nothing more will come
}

// streamGet sends one read of a stream from offset; live is "" for a
// catch-up read, "long-poll" for a live one.
func (c *apiClient) streamGet(ctx context.Context, path, offset, live string) (*readChunk, error) {
	q := url.Values{"offset": {offset}}
	if live != "" {
		q.Set("live", live)
	}
	resp, err := c.send(ctx, http.MethodGet, path+"?"+q.Encode(), nil, nil)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswerBytes))
	if err != nil {
		return nil, fmt.Errorf("reading the stream: %w", err)
	}
	return &readChunk{
		body:        body,
		contentType: resp.Header.Get("Content-Type"),
		nextOffset:  resp.Header.Get(hdrNextOffset),
		upToDate:    resp.Header.Get(hdrUpToDate) == "true",
		noContent:   resp.StatusCode == http.StatusNoContent,
		closed:      resp.Header.Get("Stream-Closed") == "true",
	}, nil
}

// isJSONType reports whether a content type is JSON's.
func isJSONType(ct string) bool {
	mt, _, err := mime.ParseMediaType(ct)
	return err == nil && mt == "application/json"
}

// messages splits a JSON stream's read (an array of messages) into its
// messages.
func messages(ch *readChunk) ([]json.RawMessage, error) {
	var msgs []json.RawMessage
	if len(bytes.TrimSpace(ch.body)) == 0 {
		return nil, nil
	}
	if err := json.Unmarshal(ch.body, &msgs); err != nil {
		return nil, fmt.Errorf("the JSON stream's answer is not an array of messages: %w", err)
	}
	return msgs, nil
}

// streamRead reads a stream from offset to its tail and prints it.
func (c *apiClient) streamRead(ctx context.Context, path, offset string) error {
	p, err := streamPath(path)
	if err != nil {
		return err
	}
	out := streamOut{Path: p}
	msgs := []json.RawMessage{}
	var data []byte
	for {
		ch, err := func() (*readChunk, error) {
			ctx, cancel := context.WithTimeout(ctx, apiRequestTimeout)
			defer cancel()
			return c.streamGet(ctx, p, offset, "")
		}()
		if err != nil {
			return err
		}
		out.ContentType = ch.contentType
		if isJSONType(ch.contentType) {
			got, err := messages(ch)
			if err != nil {
				return err
			}
			msgs = append(msgs, got...)
		} else {
			data = append(data, ch.body...)
		}
		out.NextOffset = ch.nextOffset
		if ch.upToDate || ch.nextOffset == "" || ch.nextOffset == offset {
			break
		}
		offset = ch.nextOffset
	}
	if c.output == "json" {
		if isJSONType(out.ContentType) {
			out.Messages = &msgs
		} else {
			s := string(data)
			out.Data = &s
		}
		return c.printJSON(out)
	}
	if isJSONType(out.ContentType) {
		for _, m := range msgs {
			if err := c.printMessage(m); err != nil {
				return err
			}
		}
	} else if _, err := c.stdout.Write(data); err != nil {
		return err
	}
	fmt.Fprintf(c.stderr, "next offset: %s\n", out.NextOffset)
	return nil
}

// printMessage prints one JSON message: indented in table form, on one
// line in JSON form (one message a line).
func (c *apiClient) printMessage(m json.RawMessage) error {
	var buf bytes.Buffer
	if c.output == "json" {
		if err := json.Compact(&buf, m); err != nil {
			return err
		}
	} else if err := json.Indent(&buf, m, "", "  "); err != nil {
		return err
	}
	buf.WriteByte('\n')
	_, err := c.stdout.Write(buf.Bytes())
	return err
}

// streamTail prints what a stream gets from offset on, with long-polls,
// until ctx ends (an interrupt), which is not an error, or the stream is
// closed.
func (c *apiClient) streamTail(ctx context.Context, path, offset string) error {
	p, err := streamPath(path)
	if err != nil {
		return err
	}
	for {
		ch, err := c.streamGet(ctx, p, offset, "long-poll")
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			return err
		}
		if !ch.noContent {
			if isJSONType(ch.contentType) {
				msgs, err := messages(ch)
				if err != nil {
					return err
				}
				for _, m := range msgs {
					if err := c.printMessage(m); err != nil {
						return err
					}
				}
			} else if _, err := c.stdout.Write(ch.body); err != nil {
				return err
			}
		}
		if ch.closed && ch.upToDate {
			fmt.Fprintln(c.stderr, "the stream is closed")
			return nil
		}
		if ch.nextOffset == "" {
			return errors.New("the stream's answer has no " + hdrNextOffset)
		}
		offset = ch.nextOffset
	}
}
