package dispatch

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/heraldstreams/herald/protocol"
	"github.com/heraldstreams/herald/store"
)

// Replays run as jobs (store.ReplayStore): Replay stores the job and
// starts it in a goroutine the engine owns, and every step of the job
// stores its progress with the deliveries it queued, in one transaction.
// A job is leased to the engine running it; an engine that stops hands
// its jobs back (their lease ends at once), and one that dies lets them
// lapse after replayLease. The sweep claims lapsed jobs and resumes them
// from their progress, so a job survives a restart and runs once.
const (
	// MaxReplayEvents bounds the events one replay covers.
	MaxReplayEvents = 100_000
	// DefaultReplayBatch is how many deliveries one step of a replay
	// queues at most.
	DefaultReplayBatch = 1000
	// replayLease is how long a job stays with its engine unrenewed.
	replayLease = 30 * time.Second
	// ReplayAnswerWait is how long Replay waits for its job to finish
	// before it answers with the job running.
	ReplayAnswerWait = time.Second
	// replayClaimLimit bounds the jobs one sweep claims.
	replayClaimLimit = 8
	// replayHandBack bounds the write that hands a job back at Stop.
	replayHandBack = 5 * time.Second
)

// ReplayParams choose the events a replay re-delivers. Without Status:
// the events of the endpoint's streams (or of Stream), from position From
// (or from each stream's start when HasFrom is false), whose timestamp is
// at or after Since and before Until (zero: unbounded), are matched again
// and their deliveries queued. With Status (store.DeliveryExhausted or
// store.DeliveryFailed): the endpoint's deliveries of that status (of
// Stream only, when set) created at or after Since and before Until are
// made pending now with a fresh schedule.
type ReplayParams struct {
	EndpointID string    `json:"-"`
	Stream     string    `json:"stream,omitempty"`
	HasFrom    bool      `json:"has_from,omitempty"`
	From       int64     `json:"from,omitempty"`
	Since      time.Time `json:"since,omitzero"`
	Until      time.Time `json:"until,omitzero"`
	Status     string    `json:"status,omitempty"`
}

// replayProgress is where a job resumes: in the stream Stream at
// Position (streams go by path), or, requeueing, below delivery After.
type replayProgress struct {
	Stream   string `json:"stream,omitempty"`
	Position int64  `json:"position,omitempty"`
	After    string `json:"after,omitempty"`
}

// Replay stores a replay job and starts it, waits up to ReplayAnswerWait
// (or until ctx ends) for it to finish, and returns the job as it then
// stands. Errors: store.ErrEndpointNotFound, ErrStreamNotSourced.
func (e *Engine) Replay(ctx context.Context, p *ReplayParams) (*store.ReplayJob, error) {
	ep, err := e.st.EndpointGet(ctx, p.EndpointID)
	if err != nil {
		return nil, err
	}
	le, err := e.compile(ep)
	if err != nil {
		return nil, err
	}
	if p.Stream != "" && !le.matchesStream(p.Stream) {
		return nil, ErrStreamNotSourced
	}
	req, err := json.Marshal(p)
	if err != nil {
		return nil, fmt.Errorf("delivery: encoding a replay: %w", err)
	}
	id, err := e.newID("rpl_")
	if err != nil {
		return nil, err
	}
	now := e.now()
	job := &store.ReplayJob{ID: id, EndpointID: ep.ID, Tenant: ep.Tenant, Request: req, State: store.ReplayRunning,
		Owner: e.run, LeaseUntil: now.Add(replayLease), CreatedAt: now}
	if err := e.st.ReplayJobCreate(ctx, job); err != nil {
		return nil, err
	}
	if done := e.startReplay(*job); done != nil {
		t := time.NewTimer(ReplayAnswerWait)
		defer t.Stop()
		select {
		case <-done:
		case <-t.C:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return e.st.ReplayJobGet(ctx, id)
}

// ReplayJob returns a stored replay job (store.ErrReplayJobNotFound).
func (e *Engine) ReplayJob(ctx context.Context, id string) (*store.ReplayJob, error) {
	return e.st.ReplayJobGet(ctx, id)
}

// startReplay runs a job this engine holds, unless it already runs it,
// and returns a channel closed when the run ends (nil once stopped).
func (e *Engine) startReplay(job store.ReplayJob) <-chan struct{} {
	e.replayMu.Lock()
	if done, ok := e.replays[job.ID]; ok {
		e.replayMu.Unlock()
		return done
	}
	done := make(chan struct{})
	e.replays[job.ID] = done
	e.replayMu.Unlock()
	end := func() {
		e.replayMu.Lock()
		delete(e.replays, job.ID)
		e.replayMu.Unlock()
		close(done)
	}
	if !e.life.Go(func() {
		defer end()
		e.runReplay(&job)
	}) {
		end()
		return nil
	}
	return done
}

// claimReplays resumes the jobs whose engine stopped or died.
func (e *Engine) claimReplays(ctx context.Context) {
	now := e.now()
	jobs, err := e.st.ReplayJobClaim(ctx, &store.ReplayJobClaimParams{Owner: e.run, LeaseUntil: now.Add(replayLease),
		Limit: replayClaimLimit, Now: now})
	if err != nil {
		if ctx.Err() == nil {
			e.log.Warn("claiming replay jobs failed", "err", err)
		}
		return
	}
	for _, j := range jobs {
		e.log.Info("resuming a replay job", "replay", j.ID, "endpoint", j.EndpointID, "queued", j.Queued, "total", j.Total)
		e.startReplay(j)
	}
}

// runReplay runs a job to its end: done, failed, lost to another engine
// (or deleted with its endpoint), or handed back when the engine stops.
func (e *Engine) runReplay(job *store.ReplayJob) {
	r := &replayRun{e: e, job: job}
	err := r.run(e.life.Context())
	switch {
	case err == nil || errors.Is(err, store.ErrReplayJobLost):
		return
	case e.life.Context().Err() != nil:
		ctx, cancel := context.WithTimeout(context.WithoutCancel(e.life.Context()), replayHandBack)
		defer cancel()
		if err := r.save(ctx, store.ReplayRunning, time.Time{}); err != nil && !errors.Is(err, store.ErrReplayJobLost) {
			e.log.Warn("handing a replay job back failed; it resumes once its lease ends", "replay", job.ID, "err", err)
		}
	default:
		e.log.Error("replay job failed", "replay", job.ID, "endpoint", job.EndpointID, "err", err)
		r.failure = err.Error()
		if err := r.save(e.life.Context(), store.ReplayFailed, time.Time{}); err != nil && !errors.Is(err, store.ErrReplayJobLost) {
			e.log.Warn("recording a failed replay job failed", "replay", job.ID, "err", err)
		}
	}
}

// replayRun is one engine's run of a job.
type replayRun struct {
	e         *Engine
	job       *store.ReplayJob // its counts kept as stored
	p         ReplayParams
	prog      replayProgress
	le        *liveEndpoint
	truncated bool
	failure   string
	renewed   time.Time // when the lease was last renewed
}

func (r *replayRun) run(ctx context.Context) error {
	if err := json.Unmarshal(r.job.Request, &r.p); err != nil {
		return fmt.Errorf("delivery: replay request: %w", err)
	}
	if len(r.job.Progress) > 0 {
		if err := json.Unmarshal(r.job.Progress, &r.prog); err != nil {
			return fmt.Errorf("delivery: replay progress: %w", err)
		}
	}
	r.p.EndpointID, r.renewed = r.job.EndpointID, r.e.now()
	ep, err := r.e.st.EndpointGet(ctx, r.job.EndpointID)
	if errors.Is(err, store.ErrEndpointNotFound) {
		return store.ErrReplayJobLost // its jobs went with it
	}
	if err != nil {
		return err
	}
	if r.le, err = r.e.compile(ep); err != nil {
		return err
	}
	if r.p.Status != "" {
		err = r.requeue(ctx)
	} else {
		err = r.rematch(ctx)
	}
	if err != nil {
		return err
	}
	return r.save(ctx, store.ReplayDone, time.Time{})
}

// step is the job's next step: total more events covered, the progress
// as r.prog stands, the lease renewed (until lease; zero ends it).
func (r *replayRun) step(total int, state string, lease time.Time) (*store.ReplayJobStep, error) {
	prog, err := json.Marshal(r.prog)
	if err != nil {
		return nil, fmt.Errorf("delivery: encoding replay progress: %w", err)
	}
	return &store.ReplayJobStep{ID: r.job.ID, Owner: r.job.Owner, AddTotal: total, Progress: prog, LeaseUntil: lease,
		State: state, Truncated: r.truncated, Error: r.failure}, nil
}

// stepped records a step stored with what it queued.
func (r *replayRun) stepped(total, queued int, now time.Time) {
	r.job.Total += total
	r.job.Queued += queued
	r.renewed = now
	r.e.kick(map[string]bool{r.job.EndpointID: true})
}

// save stores the job's state and lease (until lease) alone, leaving its
// progress as the last step stored it: a step whose call failed may have
// been stored all the same (a commit the caller stopped waiting for).
func (r *replayRun) save(ctx context.Context, state string, lease time.Time) error {
	step := store.ReplayJobStep{ID: r.job.ID, Owner: r.job.Owner, LeaseUntil: lease, State: state, Truncated: r.truncated, Error: r.failure}
	now := r.e.now()
	if err := r.e.st.ReplayJobUpdate(ctx, &store.ReplayJobUpdateParams{Step: step, Now: now}); err != nil {
		return err
	}
	r.renewed = now
	return nil
}

// leaseDue reports whether the lease should be renewed now.
func (r *replayRun) leaseDue(now time.Time) bool { return now.Sub(r.renewed) >= replayLease/3 }

// requeue makes the endpoint's deliveries of the status pending again,
// newest first, a batch per step.
func (r *replayRun) requeue(ctx context.Context) error {
	batch := r.e.cfg.ReplayBatch
	for {
		ds, err := r.e.st.DeliveryList(ctx, &store.DeliveryListParams{EndpointID: r.job.EndpointID, Status: r.p.Status,
			Since: r.p.Since, Until: r.p.Until, Before: r.prog.After, Limit: batch})
		if err != nil || len(ds) == 0 {
			return err
		}
		var ids []string
		for _, d := range ds {
			if r.p.Stream == "" || d.Stream == r.p.Stream {
				ids = append(ids, d.ID)
			}
		}
		if r.job.Total+len(ids) >= MaxReplayEvents {
			ids, r.truncated = ids[:MaxReplayEvents-r.job.Total], true
		}
		prev := r.prog
		r.prog.After = ds[len(ds)-1].ID
		now := r.e.now()
		step, err := r.step(len(ids), store.ReplayRunning, now.Add(replayLease))
		if err != nil {
			return err
		}
		n, err := r.e.st.DeliveryRequeue(ctx, &store.DeliveryRequeueParams{EndpointID: r.job.EndpointID, IDs: ids, Status: r.p.Status,
			Now: now, Job: step})
		if err != nil {
			r.prog, r.truncated = prev, false // as stored
			return err
		}
		r.stepped(len(ids), n, now)
		if r.truncated || len(ds) < batch {
			return nil
		}
	}
}

// rematch matches the events of the endpoint's streams again, stream by
// stream in path order.
func (r *replayRun) rematch(ctx context.Context) error {
	var paths []string
	if r.p.Stream != "" {
		paths = []string{r.p.Stream}
	} else {
		streams, err := r.e.st.StreamList(ctx, &store.StreamListParams{Now: r.e.now()})
		if err != nil {
			return err
		}
		for _, s := range streams {
			if r.le.matchesStream(s.Path) {
				paths = append(paths, s.Path)
			}
		}
		slices.Sort(paths)
	}
	for _, path := range paths {
		if path < r.prog.Stream {
			continue // done before a restart
		}
		if err := r.rematchStream(ctx, path); err != nil {
			return err
		}
		if r.truncated {
			return nil
		}
	}
	return nil
}

// rematchStream queues the deliveries of one stream's matching events up
// to the endpoint's cursor (the matcher has the rest), a step per batch.
func (r *replayRun) rematchStream(ctx context.Context, path string) error {
	e := r.e
	st, err := e.st.StreamGet(ctx, &store.StreamGetParams{Path: path, Now: e.now()})
	if errors.Is(err, store.ErrNotFound) || errors.Is(err, store.ErrStreamGone) {
		return nil
	}
	if err != nil {
		return err
	}
	if !protocol.IsJSON(st.ContentType) {
		return nil
	}
	cursors, err := e.st.DeliveryCursors(ctx, &store.DeliveryCursorsParams{Stream: path})
	if err != nil {
		return err
	}
	end := int64(-1)
	for _, c := range cursors {
		if c.EndpointID == r.le.ep.ID && c.StreamID == st.ID {
			end = c.Position
		}
	}
	from := st.ForkPosition
	if r.p.HasFrom {
		from = max(from, r.p.From)
	}
	if path == r.prog.Stream {
		from = max(from, r.prog.Position)
	}
	conflicts := 0
	for from < end {
		now := e.now()
		res, err := e.st.StreamRead(ctx, &store.StreamReadParams{Path: path, From: from, MaxBytes: matchPage, Now: now, Internal: true})
		if err != nil {
			return err
		}
		data := res.Data[:bytes.LastIndexByte(res.Data, '\n')+1]
		if len(data) == 0 {
			return nil
		}
		stop := min(from+int64(len(data)), end) // end is a message boundary
		data = data[:stop-from]
		ids := e.newPageIDs(st.ID, from, stop)
		evs, sightings, err := e.readEvents(ctx, path, from, data, ids, now)
		if err != nil {
			return err
		}
		var batch []store.Delivery
		for _, ev := range evs {
			if ev.pos >= stop {
				break
			}
			ts := ev.m.target.Event.Timestamp
			if !r.le.receives(ev.m) || ts.Before(r.p.Since) || !r.p.Until.IsZero() && !ts.Before(r.p.Until) {
				continue
			}
			if d, ok := e.newDelivery(r.le, ev.m, ev.pos, now); ok {
				batch = append(batch, d)
			}
			if r.job.Total+len(batch) >= MaxReplayEvents {
				r.truncated = true
			}
			if r.truncated || len(batch) >= e.cfg.ReplayBatch {
				stop = ev.next
				break
			}
		}
		sightings = slices.DeleteFunc(sightings, func(s store.EventSighting) bool { return s.Position >= stop })
		if len(batch) == 0 && len(ids.writes) == 0 && len(sightings) == 0 && !r.leaseDue(now) {
			from = stop // nothing to store: a restart reads this page again
			continue
		}
		prev := r.prog
		r.prog = replayProgress{Stream: path, Position: stop}
		step, err := r.step(len(batch), store.ReplayRunning, now.Add(replayLease))
		if err != nil {
			return err
		}
		out, err := e.st.DeliveryEnqueue(ctx, &store.DeliveryEnqueueParams{Stream: path, Spans: ids.writes, Deliveries: batch,
			Sightings: sightings, Replay: true, Now: now, Job: step})
		if err != nil {
			r.prog, r.truncated = prev, false // as stored
		}
		if errors.Is(err, store.ErrCursorConflict) && conflicts < casAttempts {
			conflicts++ // the matcher named or saw this page first: read it again
			continue
		}
		if err != nil {
			return err
		}
		r.stepped(len(batch), out.Queued, now)
		if r.truncated {
			return nil
		}
		from = stop
	}
	return nil
}
