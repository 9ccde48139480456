package httpapi

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/heraldstreams/herald/auth"
	"github.com/heraldstreams/herald/internal/httpjson"
	"github.com/heraldstreams/herald/subscription"
	"github.com/heraldstreams/herald/subscription/wake"
)

// SubscriptionService runs webhook subscriptions (docs/subscriptions.md);
// *wake.Engine implements it. The route table serves it (APIs).
type SubscriptionService interface {
	CreateSubscription(ctx context.Context, p *wake.CreateSubscriptionParams) (*wake.CreateSubscriptionResult, error)
	GetSubscription(ctx context.Context, c wake.Caller, id string) (*subscription.Subscription, error)
	ListSubscriptions(ctx context.Context, c wake.Caller, pattern string) ([]subscription.Subscription, error)
	DeleteSubscription(ctx context.Context, c wake.Caller, pattern, id string) error
	Callback(ctx context.Context, p *wake.CallbackParams) (*subscription.CallbackResponse, error)
}

// maxSubscriptionBody caps a subscription create or callback body.
const maxSubscriptionBody = 1 << 20

// Errors of the subscription API.
var (
	errSubscriptionMethod = &httpjson.Error{Status: http.StatusMethodNotAllowed, Code: "METHOD_NOT_ALLOWED", Message: "subscriptions accept PUT, GET and DELETE with ?subscription={id}, and GET with ?subscriptions"}
	errSubscriptionQuery  = &httpjson.Error{Status: http.StatusBadRequest, Code: "INVALID_REQUEST", Message: "give exactly one of ?subscription={id} and ?subscriptions"}
	errNotAStream         = &httpjson.Error{Status: http.StatusNotFound, Code: "NOT_FOUND", Message: "no such resource"}
)

// subscriptionRoute is the subscription route a request names: the
// pattern of its query (?subscription={id} or ?subscriptions), the id
// it names, and the error of a query that names neither or both.
func subscriptionRoute(r *http.Request) (pattern, id string, err error) {
	q := r.URL.Query()
	ids, hasID := q["subscription"]
	_, hasList := q["subscriptions"]
	switch {
	case !hasID && !hasList:
		// A __ds path segment without the subscription API's parameters.
		return subscriptionPattern, "", errNotAStream
	case hasID == hasList || len(ids) > 1:
		return subscriptionPattern, "", errSubscriptionQuery
	case hasList:
		return subscriptionsPattern, "", nil
	}
	return subscriptionPattern, ids[0], nil
}

// subscriptionID is the id a subscription route's query names.
func subscriptionID(r *http.Request) string { return r.URL.Query().Get("subscription") }

func (s *Server) listSubscriptions(svc SubscriptionService) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		list, err := svc.ListSubscriptions(r.Context(), callerOf(r.Context()), r.URL.Path)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		writeJSON(w, http.StatusOK, subscription.SubscriptionList{Subscriptions: list})
	}
}

func (s *Server) createSubscription(svc SubscriptionService) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxSubscriptionBody))
		if err != nil {
			s.fail(w, r, readError(err))
			return
		}
		req, err := subscription.ParseCreateRequest(body)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		res, err := svc.CreateSubscription(r.Context(), &wake.CreateSubscriptionParams{
			Caller: callerOf(r.Context()), ID: subscriptionID(r), Pattern: r.URL.Path, Webhook: req.Webhook, Description: req.Description,
		})
		if err != nil {
			s.fail(w, r, err)
			return
		}
		status := http.StatusOK
		if res.Created {
			status = http.StatusCreated
		}
		writeJSON(w, status, res.Subscription)
	}
}

func (s *Server) getSubscription(svc SubscriptionService) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		sub, err := svc.GetSubscription(r.Context(), callerOf(r.Context()), subscriptionID(r))
		if err != nil {
			s.fail(w, r, err)
			return
		}
		writeJSON(w, http.StatusOK, sub)
	}
}

func (s *Server) deleteSubscription(svc SubscriptionService) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if err := svc.DeleteSubscription(r.Context(), callerOf(r.Context()), r.URL.Path, subscriptionID(r)); err != nil {
			s.fail(w, r, err)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}
}

// callback serves the callback API (see serveCallback).
func (s *Server) callback(svc SubscriptionService) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) { serveCallback(w, r, svc, s) }
}

// callerOf is who a subscription or consumer request acts as: the
// tenant of its credential, and the stream paths it may reach (its paths
// and its tenant's namespace). A request without a principal (never,
// behind the routes' rules) sees nothing.
func callerOf(ctx context.Context) wake.Caller {
	p, ok := auth.FromContext(ctx)
	if !ok {
		none := func(string) bool { return false }
		return wake.Caller{Tenant: "\x00", AllowsPattern: none, AllowsPath: none}
	}
	return wake.Caller{Tenant: p.Tenant, AllowsPattern: p.AllowsPattern, AllowsPath: p.AllowsPath}
}

func readError(err error) error {
	var tooLarge *http.MaxBytesError
	if errors.As(err, &tooLarge) {
		return errBodyTooLarge
	}
	return errBodyRead
}

// errorLogger is where callback server faults are logged.
type errorLogger interface {
	logError(r *http.Request, err error)
}

func (s *Server) logError(r *http.Request, err error) {
	s.log.ErrorContext(r.Context(), "request failed", "method", r.Method, "path", r.URL.Path, "err", err)
}

// bearerToken returns the token of an "Authorization: Bearer" header, ""
// when there is none.
func bearerToken(h string) string {
	scheme, tok, ok := strings.Cut(strings.TrimSpace(h), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return ""
	}
	return strings.TrimSpace(tok)
}

// callbackConsumerID returns the raw, still percent-encoded consumer id of
// a callback URL: decoding first would turn %2F into '/'.
func callbackConsumerID(r *http.Request) (string, error) {
	raw := strings.TrimPrefix(r.URL.EscapedPath(), CallbackPrefix)
	if raw == "" || strings.Contains(raw, "/") {
		return "", fmt.Errorf("%w: the callback URL must be %s{consumer_id}", subscription.ErrConsumerGone, CallbackPrefix)
	}
	return raw, nil
}
