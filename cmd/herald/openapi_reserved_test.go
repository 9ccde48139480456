package main

import (
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

// exerciseReserved drives every route of the reserved subscription API
// (at the default stream root) through the document's validator: a
// pull-wake subscription is created, re-confirmed and refused another
// configuration, a stream created after it is claimed, heartbeated,
// fenced and released, its explicit links are added and removed, and a
// webhook subscription shows its signing metadata and the JWKS its keys.
func exerciseReserved(c *specCheck) {
	t, m, admin := c.t, c.m, testAdminKey
	const sub = "/__ds/subscriptions/oa-ds"
	if status, body := m.call(t, "PUT", "/area/ds-wake", map[string]string{"Authorization": "Bearer " + admin, "Content-Type": "application/json"}, ""); status != http.StatusCreated {
		t.Fatalf("the wake stream: %d %s", status, body)
	}
	pull := `{"type":"pull-wake","pattern":"area/ds/*","wake_stream":"area/ds-wake","lease_ttl_ms":60000,"description":"openapi"}`
	c.do(exchange{method: "PUT", path: sub, key: admin, want: http.StatusCreated, body: pull})
	c.do(exchange{method: "PUT", path: sub, key: admin, want: http.StatusOK, body: pull})
	c.do(exchange{method: "PUT", path: sub, key: admin, want: http.StatusConflict, body: strings.Replace(pull, "60000", "30000", 1)})
	c.fails(exchange{method: "PUT", path: "/__ds/subscriptions/oa-hook", key: admin, want: http.StatusBadRequest,
		body: `{"type":"webhook","pattern":"area/ds/*","webhook":{"url":"http://10.0.0.1/hook"}}`}, "WEBHOOK_URL_REJECTED", "")
	c.do(exchange{method: "PUT", path: "/__ds/subscriptions/oa-hook", key: admin, want: http.StatusCreated,
		body: `{"type":"webhook","streams":["area/ds/none"],"webhook":{"url":"` + m.receiver.URL + `"}}`})
	c.do(exchange{method: "GET", path: "/__ds/jwks.json", want: http.StatusOK})
	c.do(exchange{method: "POST", path: "/_herald/v1/signing-keys/rotate", key: admin, want: http.StatusOK})
	c.do(exchange{method: "DELETE", path: "/__ds/subscriptions/oa-hook", key: admin, want: http.StatusNoContent})

	// New work: a stream the pattern matches, created after it.
	m.admin(t, "PUT", "/area/ds/one", `{"n":1}`, http.StatusCreated, nil)
	// The subscription links the stream once its engine has seen the
	// append: there is work to claim from then on.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		var got struct {
			Streams []struct{ Path string } `json:"streams"`
		}
		m.admin(t, "GET", sub, "", http.StatusOK, &got)
		if slices.ContainsFunc(got.Streams, func(l struct{ Path string }) bool { return l.Path == "area/ds/one" }) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the subscription never linked area/ds/one: %+v", got.Streams)
		}
	}
	var claim struct {
		WakeID     string `json:"wake_id"`
		Generation int64
		Token      string
	}
	c.decode(c.do(exchange{method: "POST", path: sub + "/claim", key: admin, want: http.StatusOK, body: `{"worker":"w1"}`}), &claim)
	var busy struct {
		Error struct {
			Code          string
			CurrentHolder string `json:"current_holder"`
		}
	}
	c.decode(c.do(exchange{method: "POST", path: sub + "/claim", key: admin, want: http.StatusConflict, body: `{"worker":"w2"}`}), &busy)
	if busy.Error.Code != "ALREADY_CLAIMED" || busy.Error.CurrentHolder != "w1" {
		t.Errorf("a second claim answers %+v, want ALREADY_CLAIMED held by w1", busy.Error)
	}
	wake := `{"wake_id":"` + claim.WakeID + `","generation":` + strconv.FormatInt(claim.Generation, 10)
	c.do(exchange{method: "POST", path: sub + "/ack", key: claim.Token, want: http.StatusOK, body: wake + `,"acks":[{"stream":"area/ds/one","offset":"-1"}]}`})
	c.fails(exchange{method: "POST", path: sub + "/ack", key: claim.Token, want: http.StatusConflict,
		body: `{"wake_id":"w_stale","generation":` + strconv.FormatInt(claim.Generation, 10) + `,"done":true}`}, "FENCED", "")
	c.fails(exchange{method: "POST", path: sub + "/callback", key: "not-a-token", want: http.StatusUnauthorized, body: wake + `}`}, "TOKEN_INVALID", "")
	c.do(exchange{method: "POST", path: sub + "/release", key: claim.Token, want: http.StatusNoContent, body: wake + `}`})

	c.do(exchange{method: "POST", path: sub + "/streams", key: admin, want: http.StatusNoContent, body: `{"streams":["area/manual"]}`})
	c.do(exchange{method: "DELETE", path: sub + "/streams/area%2Fmanual", key: admin, want: http.StatusNoContent})
	c.do(exchange{method: "GET", path: sub, key: admin, want: http.StatusOK})
	c.do(exchange{method: "DELETE", path: sub, key: admin, want: http.StatusNoContent})
	c.do(exchange{method: "GET", path: sub, key: admin, want: http.StatusNotFound})
}
