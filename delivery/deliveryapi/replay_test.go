package deliveryapi

import (
	"context"
	"net/http"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/heraldstreams/herald/delivery"
	"github.com/heraldstreams/herald/delivery/dispatch"
	"github.com/heraldstreams/herald/store"
)

// replayJSONOut is a replay job as the API answers it.
type replayJSONOut struct {
	ID        string `json:"id"`
	State     string `json:"state"`
	Queued    int    `json:"queued"`
	Total     int    `json:"total"`
	Truncated bool   `json:"truncated"`
}

// A status replay requeues the endpoint's dead letters created before
// until, and no others; its job is done with the counts, and GET
// /replays/{id} shows it.
func TestReplayStatusUntil(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t, nil)
		r.rc.SetRespond(func(int, delivery.Event) (int, map[string]string) { return http.StatusInternalServerError, nil })
		ep := r.endpoint(&dispatch.CreateEndpointParams{Active: true, Config: delivery.EndpointConfig{RetrySchedule: delivery.Schedule{0}}})
		r.publish("a.one", "", `{}`)
		r.publish("a.two", "", `{}`)
		synctest.Wait()
		time.Sleep(time.Minute)
		until := time.Now()
		time.Sleep(time.Minute)
		r.publish("a.three", "", `{}`)
		synctest.Wait()
		for _, d := range r.deliveries(ep.ID) {
			if d.Status != store.DeliveryExhausted {
				t.Fatalf("delivery %s is %s, want exhausted", d.EventType, d.Status)
			}
		}
		r.rc.SetRespond(nil)
		var job replayJSONOut
		code := r.call("POST", "/_herald/v1/endpoints/"+ep.ID+"/replay", `{"status":"exhausted","until":"`+until.UTC().Format(time.RFC3339)+`"}`, &job)
		if code != http.StatusAccepted || job.State != store.ReplayDone || job.Queued != 2 || job.Total != 2 || job.Truncated {
			t.Fatalf("replay = %d %+v", code, job)
		}
		synctest.Wait()
		got := r.rc.Requests()
		if len(got) != 5 || got[3].Event.Type == "a.three" || got[4].Event.Type == "a.three" {
			t.Fatalf("%d requests; want the two before until sent again", len(got))
		}
		var again replayJSONOut
		if code := r.call("GET", "/_herald/v1/replays/"+job.ID, "", &again); code != http.StatusOK || again != job {
			t.Fatalf("GET replay = %d %+v, want %+v", code, again, job)
		}
		// Another status replay finds the third one only.
		if code := r.call("POST", "/_herald/v1/endpoints/"+ep.ID+"/replay", `{"status":"exhausted"}`, &job); code != http.StatusAccepted ||
			job.Queued != 1 || job.State != store.ReplayDone {
			t.Fatalf("second replay = %d %+v", code, job)
		}
	})
}

// Replay requests that make no sense are refused with the field named.
func TestReplayAPIRefusals(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t, nil)
		ep := r.endpoint(&dispatch.CreateEndpointParams{Active: true})
		for _, c := range []struct{ body, field string }{
			{`{}`, "since"},
			{`{"until":"2026-01-01T00:00:00Z"}`, "since"},
			{`{"status":"delivered"}`, "status"},
			{`{"status":"exhausted","offset":"-1"}`, "offset"},
			{`{"since":"2026-01-02T00:00:00Z","until":"2026-01-01T00:00:00Z"}`, "until"},
			{`{"since":"2026-01-01T00:00:00Z","until":"tomorrow"}`, "until"},
			{`{"status":"failed","stream":"nope"}`, "stream"},
		} {
			var out struct {
				Error struct{ Code, Field string } `json:"error"`
			}
			if code := r.call("POST", "/_herald/v1/endpoints/"+ep.ID+"/replay", c.body, &out); code != http.StatusBadRequest || out.Error.Field != c.field {
				t.Errorf("%s: %d %+v, want 400 on %s", c.body, code, out.Error, c.field)
			}
		}
		var out struct {
			Error struct{ Code string } `json:"error"`
		}
		if code := r.call("GET", "/_herald/v1/replays/rpl_nope", "", &out); code != http.StatusNotFound || out.Error.Code != "REPLAY_NOT_FOUND" {
			t.Fatalf("unknown replay: %d %+v", code, out)
		}
	})
}

// holdReplaySteps lets a replay job store its first steps, then holds the
// next until the engine stops.
type holdReplaySteps struct {
	dispatch.EngineStore
	free  int32
	steps atomic.Int32
}

func (h *holdReplaySteps) DeliveryEnqueue(ctx context.Context, p *store.DeliveryEnqueueParams) (*store.DeliveryEnqueueResult, error) {
	if p.Job != nil && h.steps.Add(1) > h.free {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return h.EngineStore.DeliveryEnqueue(ctx, p)
}

// A replay job interrupted by a stop resumes, in the next engine on the
// same store, from its stored progress: every event is queued and sent
// once, and the job's counts are exact.
func TestReplayJobResumesAfterRestart(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		hold := &holdReplaySteps{free: 2}
		var cfg dispatch.EngineConfig
		r := newRig(t, func(c *dispatch.EngineConfig) {
			c.ReplayBatch = 1
			hold.EngineStore = c.Store
			c.Store = hold
			cfg = *c
		})
		ctx := context.Background()
		for range 5 {
			r.publish("a.b", "/s", `{}`)
		}
		synctest.Wait()
		ep := r.endpoint(&dispatch.CreateEndpointParams{Active: true}) // after the events: only a replay sends them
		job, err := r.e.Replay(ctx, &dispatch.ReplayParams{EndpointID: ep.ID, Stream: "/s", HasFrom: true})
		if err != nil || job.State != store.ReplayRunning || job.Total != 2 {
			t.Fatalf("replay = %+v, %v; want it running after 2 steps", job, err)
		}
		r.e.Stop(ctx)
		synctest.Wait()

		cfg.Store, cfg.Registerer = r.st, nil
		next, err := dispatch.NewEngine(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if err := next.Start(ctx); err != nil {
			t.Fatal(err)
		}
		defer next.Stop(ctx)
		synctest.Wait()
		got, err := next.ReplayJob(ctx, job.ID)
		if err != nil || got.State != store.ReplayDone || got.Total != 5 || got.Queued != 5 {
			t.Fatalf("resumed job = %+v, %v", got, err)
		}
		seen := map[string]int{}
		for _, g := range r.rc.Requests() {
			seen[g.Event.ID]++
		}
		if len(seen) != 5 {
			t.Fatalf("events sent: %v, want 5 once each", seen)
		}
		for id, n := range seen {
			if n != 1 {
				t.Fatalf("event %s sent %d times", id, n)
			}
		}
	})
}
