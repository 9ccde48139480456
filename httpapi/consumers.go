package httpapi

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/heraldstreams/herald/internal/httpjson"
	"github.com/heraldstreams/herald/store"
	"github.com/heraldstreams/herald/subscription"
	"github.com/heraldstreams/herald/subscription/wake"
)

// ConsumerService shows the consumer instances of webhook subscriptions;
// *wake.Engine implements it. The route table serves it (APIs).
type ConsumerService interface {
	GetConsumer(ctx context.Context, c wake.Caller, id string) (*subscription.ConsumerInfo, error)
	ListConsumers(ctx context.Context, c wake.Caller, subscriptionID, cursor string, limit int) (*subscription.ConsumerList, error)
}

// The prefixes of the consumer routes.
const (
	consumersPrefix     = HeraldPrefix + "v1/consumers/"
	subscriptionsPrefix = HeraldPrefix + "v1/subscriptions/"
)

func (s *Server) getConsumer(svc ConsumerService) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		// The raw id: a consumer id is "{subscription_id}:{url-encoded
		// path}", as in wakes and callback URLs, so it is not decoded.
		id := strings.TrimPrefix(r.URL.EscapedPath(), consumersPrefix)
		c, err := s.consumerDetail(r.Context(), svc, id)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		writeJSON(w, http.StatusOK, c)
	}
}

// The timers a consumer's next deadline can be, as next_deadline_reason
// names them.
const (
	deadlineWakeTimeout = "wake_timeout" // the end of a delivery attempt without an answer
	deadlineRetry       = "retry"        // the next delivery attempt after a failed one
	deadlineLiveness    = "liveness"     // the liveness timeout of a LIVE consumer
)

// consumerDetail is one consumer as GET /_herald/v1/consumers/{id}
// answers it: the service's view and which timer its next deadline is.
type consumerDetail struct {
	subscription.ConsumerInfo
	// NextDeadlineReason names the timer of NextDeadline; nil when none
	// is armed.
	NextDeadlineReason *string `json:"next_deadline_reason"`
}

// consumerDetail reads consumer id from svc and names the timer of its
// next deadline from the stored consumer's deadlines. The two reads are
// not one transaction: when the consumer changed between them (no stored
// deadline is the service's), both are read again, a few times at most,
// and the reason is left out (null) if they never agree.
func (s *Server) consumerDetail(ctx context.Context, svc ConsumerService, id string) (*consumerDetail, error) {
	caller := callerOf(ctx)
	for range 3 {
		c, err := svc.GetConsumer(ctx, caller, id)
		if err != nil {
			return nil, err
		}
		out := &consumerDetail{ConsumerInfo: *c}
		if c.NextDeadline == nil {
			return out, nil
		}
		sc, err := s.store.ConsumerGet(ctx, id)
		if errors.Is(err, store.ErrConsumerNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		for _, d := range []struct {
			at     time.Time
			reason string
		}{{sc.WakingDeadline, deadlineWakeTimeout}, {sc.NextRetryAt, deadlineRetry}, {sc.LivenessDeadline, deadlineLiveness}} {
			if !d.at.IsZero() && d.at.Equal(*c.NextDeadline) {
				out.NextDeadlineReason = &d.reason
				return out, nil
			}
		}
	}
	c, err := svc.GetConsumer(ctx, caller, id)
	if err != nil {
		return nil, err
	}
	return &consumerDetail{ConsumerInfo: *c}, nil
}

// errConsumerQuery refuses a consumer list query it does not know.
var errConsumerQuery = &httpjson.Error{Status: http.StatusBadRequest, Code: "INVALID_REQUEST", Message: "the consumer list takes only ?limit= (1 to 1000) and ?cursor="}

func (s *Server) listConsumers(svc ConsumerService) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) { s.serveConsumerList(w, r, svc) }
}

func (s *Server) serveConsumerList(w http.ResponseWriter, r *http.Request, svc ConsumerService) {
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
		if err != nil || n < 1 || n > wake.MaxConsumerPage {
			s.fail(w, r, errConsumerQuery)
			return
		}
		limit = n
	}
	list, err := svc.ListConsumers(r.Context(), callerOf(r.Context()), r.PathValue("id"), q.Get("cursor"), limit)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, list)
}
