package httpapi

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/heraldstreams/herald/auth"
	"github.com/heraldstreams/herald/subscription"
)

// ConsumerService shows the consumer instances of webhook subscriptions;
// *subscription.Engine implements it. MountConsumers serves it.
type ConsumerService interface {
	GetConsumer(ctx context.Context, id string) (*subscription.ConsumerInfo, error)
	ListConsumers(ctx context.Context, subscriptionID, cursor string, limit int) (*subscription.ConsumerList, error)
}

// The prefixes of the consumer routes.
const (
	consumersPrefix     = HeraldPrefix + "v1/consumers/"
	subscriptionsPrefix = HeraldPrefix + "v1/subscriptions/"
)

// MountConsumers serves the read-only consumer API on s with svc:
//
//	GET /_herald/v1/subscriptions/{id}/consumers?limit=&cursor=   a page of a subscription's consumers
//	GET /_herald/v1/consumers/{consumer_id}                       one consumer
//
// Both need subscriptions:read. A consumer names stream paths that a
// subscription's pattern may reach, so a credential limited to stream
// paths is refused (the check fails closed). Mount before serving.
func (s *Server) MountConsumers(svc ConsumerService) {
	rule := auth.Rule{Scope: auth.ScopeSubscriptionsRead, StreamPath: noStreamPath}
	s.Handle("GET "+subscriptionsPrefix+"{id}/consumers", rule, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.listConsumers(w, r, svc)
	}))
	s.Handle("GET "+consumersPrefix+"{consumer_id}", rule, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// The raw id: a consumer id is "{subscription_id}:{url-encoded
		// path}", as in wakes and callback URLs, so it is not decoded.
		id := strings.TrimPrefix(r.URL.EscapedPath(), consumersPrefix)
		c, err := svc.GetConsumer(r.Context(), id)
		if err != nil {
			s.fail(w, r, consumerAPIError(err))
			return
		}
		writeJSON(w, http.StatusOK, c)
	}))
}

// noStreamPath names no stream path, so a path-limited credential is
// refused.
func noStreamPath(*http.Request) string { return "" }

// errConsumerQuery refuses a consumer list query it does not know.
var errConsumerQuery = &apiError{http.StatusBadRequest, "INVALID_REQUEST", "the consumer list takes only ?limit= (1 to 1000) and ?cursor="}

func (s *Server) listConsumers(w http.ResponseWriter, r *http.Request, svc ConsumerService) {
	q := r.URL.Query()
	limit := 0
	for k, v := range q {
		if (k != "limit" && k != "cursor") || len(v) != 1 {
			s.fail(w, r, errConsumerQuery)
			return
		}
	}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > subscription.MaxConsumerPage {
			s.fail(w, r, errConsumerQuery)
			return
		}
		limit = n
	}
	list, err := svc.ListConsumers(r.Context(), r.PathValue("id"), q.Get("cursor"), limit)
	if err != nil {
		s.fail(w, r, consumerAPIError(err))
		return
	}
	writeJSON(w, http.StatusOK, list)
}

// consumerAPIError turns an error of the consumer API into the *apiError
// fail writes, or returns it as it is (a server fault).
func consumerAPIError(err error) error {
	if errors.Is(err, subscription.ErrConsumerNotFound) {
		return &apiError{status: http.StatusNotFound, code: "CONSUMER_NOT_FOUND", message: trimPackage(err.Error())}
	}
	return subscriptionAPIError(err)
}
