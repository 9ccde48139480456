package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/heraldstreams/herald/client"
)

const verifyUsage = `Check the signature of a webhook request Herald sent.

Usage:
  herald verify --secret SECRET --header 'NAME: VALUE' [--header ...] --body FILE|-

An event delivery is signed the Standard Webhooks way: give its webhook-id,
webhook-timestamp and webhook-signature headers and the endpoint's secret.
A subscription's wake carries Webhook-Signature: t=...,sha256=...: give that
header and the subscription's webhook secret. The body is the raw request
body (- reads standard input). The signature's timestamp must be within
5 minutes of now. Exit status 0: valid; 1: not valid, with the reason.
`

// errSignature is the error of a signature that does not verify.
var errSignature = errors.New("signature not valid")

func runVerify(_ context.Context, args []string, cio clientIO) error {
	if len(args) > 0 && isHelp(args[0]) {
		fmt.Fprint(cio.stdout, verifyUsage)
		return nil
	}
	fs := flag.NewFlagSet("herald verify", flag.ContinueOnError)
	fs.SetOutput(cio.stderr)
	var (
		secret, bodyFrom string
		headers          listFlag
	)
	fs.StringVar(&secret, "secret", "", "the endpoint's or subscription's webhook secret (whsec_...)")
	fs.Var(&headers, "header", "a header of the request, 'Name: value' (repeat for more)")
	fs.StringVar(&bodyFrom, "body", "", "file holding the raw request body, or - for standard input")
	if err := parseFlags(fs, args, cio.stdout, cio.stderr); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	if fs.NArg() != 0 || secret == "" || bodyFrom == "" || len(headers) == 0 {
		fmt.Fprint(cio.stderr, verifyUsage)
		return fmt.Errorf("%w: --secret, --header and --body are required, and nothing else", errUsage)
	}
	hdr := http.Header{}
	for _, h := range headers {
		name, value, ok := strings.Cut(h, ":")
		if !ok || strings.TrimSpace(name) == "" {
			return fmt.Errorf("%w: --header %q is not 'Name: value'", errUsage, h)
		}
		hdr.Add(strings.TrimSpace(name), strings.TrimSpace(value))
	}
	var (
		body []byte
		err  error
	)
	if bodyFrom == "-" {
		body, err = io.ReadAll(cio.stdin)
	} else {
		body, err = os.ReadFile(bodyFrom)
	}
	if err != nil {
		return fmt.Errorf("reading the body: %w", err)
	}
	kind := kindWake
	if hdr.Get("Webhook-Id") != "" || hdr.Get("Webhook-Timestamp") != "" {
		kind = kindStandard
	}
	if err := verifySignature(kind, secret, hdr, body, time.Now()); err != nil {
		return err
	}
	fmt.Fprintf(cio.stdout, "valid %s signature\n", kind)
	return nil
}

// signatureKind is how a webhook request of Herald is signed.
type signatureKind string

const (
	// kindStandard: an event delivery, signed the Standard Webhooks way.
	kindStandard signatureKind = "Standard Webhooks"
	// kindWake: a subscription's wake, Webhook-Signature: t=...,sha256=...
	kindWake signatureKind = "wake"
)

// verifySignature checks a request's signature of the given kind with
// the SDK's verification.
func verifySignature(kind signatureKind, secret string, hdr http.Header, body []byte, now time.Time) error {
	if kind == kindStandard {
		if err := client.VerifyStandardWebhook(secret, hdr, body, now); err != nil {
			return fmt.Errorf("%w (%s): %s", errSignature, kind, sdkMessage(err))
		}
		return nil
	}
	sig := hdr.Get(client.WakeSignatureHeader)
	if sig == "" {
		return fmt.Errorf("%w: no Webhook-Signature header", errSignature)
	}
	if err := client.VerifyWakeSignature(secret, sig, body, now, client.DefaultSignatureTolerance); err != nil {
		return fmt.Errorf("%w (%s): %s", errSignature, kind, sdkMessage(err))
	}
	return nil
}

// sdkMessage is the message of an error of the client package without the
// package's "client: " prefixes, which name Herald's layout, not the
// problem.
func sdkMessage(err error) string {
	return strings.ReplaceAll(err.Error(), "client: ", "")
}
