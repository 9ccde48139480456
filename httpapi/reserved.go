package httpapi

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"

	"github.com/heraldstreams/herald/auth"
	"github.com/heraldstreams/herald/subscription"
	"github.com/heraldstreams/herald/subscription/wake"
)

// ReservedService serves the Durable Streams protocol's reserved
// subscription API under {stream-root}/__ds/ (docs/subscriptions.md, The
// reserved subscription API); *wake.Reserved implements it.
type ReservedService interface {
	Create(ctx context.Context, p *wake.ReservedCreateParams) (*subscription.DSSubscriptionView, bool, error)
	Get(ctx context.Context, c wake.Caller, id string) (*subscription.DSSubscriptionView, error)
	Delete(ctx context.Context, c wake.Caller, id string) error
	AddStreams(ctx context.Context, c wake.Caller, id string, rels []string) error
	RemoveStream(ctx context.Context, c wake.Caller, id, rel string) error
	Claim(ctx context.Context, c wake.Caller, id, worker string) (*subscription.DSClaimResponse, error)
	Ack(ctx context.Context, id, token string, req *subscription.DSAckRequest) (*subscription.DSAckResponse, error)
	Release(ctx context.Context, id, token string, req *subscription.DSAckRequest) error
	JWKS() []byte
	RotateSigningKey(ctx context.Context) (string, error)
}

// reservedRoutes are the routes of the reserved subscription API, under
// {root}/__ds/:
//
//	PUT    subscriptions/{id}                 create (201) or re-confirm (200); 409 for another configuration
//	GET    subscriptions/{id}                 the subscription with its links
//	DELETE subscriptions/{id}                 204
//	POST   subscriptions/{id}/streams         explicit links (204)
//	DELETE subscriptions/{id}/streams/{path}  remove an explicit link (204); {path} URL-encoded
//	POST   subscriptions/{id}/claim           a pull-wake worker takes the lease
//	POST   subscriptions/{id}/callback        a webhook's callback, with the wake's token
//	POST   subscriptions/{id}/ack             a pull-wake worker's ack or heartbeat, with the claim's token
//	POST   subscriptions/{id}/release         give the wake back, with the token
//	GET    jwks.json                          the webhook signing keys (public)
//
// and, for the installation's admin, POST /_herald/v1/signing-keys/rotate:
// a new active signing key (the old one stays published for an hour).
//
// The subscription routes take the subscription scopes; a subscription
// belongs to the tenant of the credential that made it, and its pattern,
// explicit streams and wake stream must lie within the credential's
// stream paths (403 otherwise; another owner's subscription is 404). The
// callback, ack and release carry their own credential, the wake's token,
// checked by the service against the subscription's current generation.
func (s *Server) reservedRoutes(svc ReservedService) []Route {
	p := s.root.Reserved()
	sub := p + "subscriptions/{id}"
	write := auth.Rule{Scope: auth.ScopeSubscriptionsWrite}
	token := auth.Rule{CallbackToken: true}
	return []Route{
		{Method: http.MethodPut, Pattern: sub, Rule: write, Handler: s.dsCreate(svc)},
		{Method: http.MethodGet, Pattern: sub, Rule: subsRead, Handler: s.dsGet(svc)},
		{Method: http.MethodDelete, Pattern: sub, Rule: write, Handler: s.dsDelete(svc)},
		{Method: http.MethodPost, Pattern: sub + "/streams", Rule: write, Handler: s.dsAddStreams(svc)},
		{Method: http.MethodDelete, Pattern: sub + "/streams/{path}", Rule: write, Handler: s.dsRemoveStream(svc)},
		{Method: http.MethodPost, Pattern: sub + "/claim", Rule: write, Handler: s.dsClaim(svc)},
		{Method: http.MethodPost, Pattern: sub + "/callback", Rule: token, Handler: s.dsAck(svc, false)},
		{Method: http.MethodPost, Pattern: sub + "/ack", Rule: token, Handler: s.dsAck(svc, false)},
		{Method: http.MethodPost, Pattern: sub + "/release", Rule: token, Handler: s.dsAck(svc, true)},
		{Method: http.MethodGet, Pattern: p + "jwks.json", Rule: public, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			h := w.Header()
			h.Set("Content-Type", "application/jwk-set+json")
			h.Set("Cache-Control", "public, max-age=300")
			_, _ = w.Write(svc.JWKS()) // a failed write means the client is gone
		})},
		{Method: http.MethodPost, Pattern: HeraldPrefix + "v1/signing-keys/rotate", Rule: installation, Handler: s.dsHandler(func(r *http.Request, _ []byte) (int, any, error) {
			kid, err := svc.RotateSigningKey(r.Context())
			if err != nil {
				return 0, nil, err
			}
			var set subscription.JWKS
			if err := json.Unmarshal(svc.JWKS(), &set); err != nil {
				return 0, nil, err
			}
			return http.StatusOK, signingKeysRotated{Kid: kid, Keys: set.Keys}, nil
		})},
	}
}

// signingKeysRotated answers a rotation: the new active key's id and the
// keys published now (the new one and those still in their overlap).
type signingKeysRotated struct {
	Kid  string             `json:"kid"`
	Keys []subscription.JWK `json:"keys"`
}

// dsBody reads a reserved-API request body within the subscription
// body limit.
func dsBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	if r.ContentLength > maxSubscriptionBody {
		return nil, errBodyTooLarge
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxSubscriptionBody))
	if err != nil {
		return nil, readError(err)
	}
	return body, nil
}

// dsHandler serves a reserved-API route whose body fn reads: fn returns
// the status and the value to answer (nil: no body), or an error.
func (s *Server) dsHandler(fn func(r *http.Request, body []byte) (int, any, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		body, err := dsBody(w, r)
		if err == nil {
			var status int
			var v any
			if status, v, err = fn(r, body); err == nil {
				if v == nil {
					w.WriteHeader(status)
					return
				}
				writeJSON(w, status, v)
				return
			}
		}
		s.fail(w, r, err)
	}
}

func (s *Server) dsCreate(svc ReservedService) http.HandlerFunc {
	return s.dsHandler(func(r *http.Request, body []byte) (int, any, error) {
		cfg, err := subscription.ParseDSConfig(body)
		if err != nil {
			return 0, nil, err
		}
		v, created, err := svc.Create(r.Context(), &wake.ReservedCreateParams{Caller: callerOf(r.Context()), ID: r.PathValue("id"), Config: cfg})
		if err != nil {
			return 0, nil, err
		}
		if created {
			return http.StatusCreated, v, nil
		}
		return http.StatusOK, v, nil
	})
}

func (s *Server) dsGet(svc ReservedService) http.HandlerFunc {
	return s.dsHandler(func(r *http.Request, _ []byte) (int, any, error) {
		v, err := svc.Get(r.Context(), callerOf(r.Context()), r.PathValue("id"))
		return http.StatusOK, v, err
	})
}

func (s *Server) dsDelete(svc ReservedService) http.HandlerFunc {
	return s.dsHandler(func(r *http.Request, _ []byte) (int, any, error) {
		return http.StatusNoContent, nil, svc.Delete(r.Context(), callerOf(r.Context()), r.PathValue("id"))
	})
}

func (s *Server) dsAddStreams(svc ReservedService) http.HandlerFunc {
	return s.dsHandler(func(r *http.Request, body []byte) (int, any, error) {
		var req subscription.DSStreamsRequest
		if err := subscription.ParseDSBody(body, &req); err != nil {
			return 0, nil, err
		}
		rels, err := subscription.CleanDSPaths(req.Streams)
		if err != nil {
			return 0, nil, err
		}
		if len(rels) == 0 {
			return 0, nil, fmt.Errorf("%w: streams must name at least one stream", subscription.ErrDSInvalid)
		}
		return http.StatusNoContent, nil, svc.AddStreams(r.Context(), callerOf(r.Context()), r.PathValue("id"), rels)
	})
}

func (s *Server) dsRemoveStream(svc ReservedService) http.HandlerFunc {
	return s.dsHandler(func(r *http.Request, _ []byte) (int, any, error) {
		rel, err := subscription.CleanDSPath(r.PathValue("path"))
		if err != nil {
			return 0, nil, err
		}
		return http.StatusNoContent, nil, svc.RemoveStream(r.Context(), callerOf(r.Context()), r.PathValue("id"), rel)
	})
}

func (s *Server) dsClaim(svc ReservedService) http.HandlerFunc {
	return s.dsHandler(func(r *http.Request, body []byte) (int, any, error) {
		req, err := subscription.ParseDSClaim(body)
		if err != nil {
			return 0, nil, err
		}
		v, err := svc.Claim(r.Context(), callerOf(r.Context()), r.PathValue("id"), req.Worker)
		return http.StatusOK, v, err
	})
}

// dsAck serves a callback, an ack (release false) or a release: the
// credential is the wake's token, in the Authorization header only.
func (s *Server) dsAck(svc ReservedService, release bool) http.HandlerFunc {
	return s.dsHandler(func(r *http.Request, body []byte) (int, any, error) {
		token := bearerToken(r.Header.Get("Authorization"))
		if token == "" {
			return 0, nil, fmt.Errorf("%w: send the wake's token as Authorization: Bearer", subscription.ErrTokenInvalid)
		}
		req, err := subscription.ParseDSAck(body, release)
		if err != nil {
			return 0, nil, err
		}
		if release {
			return http.StatusNoContent, nil, svc.Release(r.Context(), r.PathValue("id"), token, &req)
		}
		v, err := svc.Ack(r.Context(), r.PathValue("id"), token, &req)
		return http.StatusOK, v, err
	})
}
